//! The process model against the live baton replay of the same generated threaded trace,
//! side by side: the model applies every record; the live side is a child of the fragsim
//! binary running one real thread per trace thread in trace order (jemalloc with thread
//! caches, `experimental_tcache_gc:false`, decay off), reading statistics only once at the
//! end. The live side includes the child's start (a few ms, measured beside it as
//! `live-start`, a one-record trace).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::live::Api;
use fragsim::process::{threaded_trace, to_text, Process, ProcessOptions, ThreadedSpec};
use std::hint::black_box;
use std::process::Command;

fragsim::use_jemalloc!();

fn live(path: &std::path::Path, conf: &str) {
    let status = Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(["__process-live-child", "--every", "1000000000"])
        .arg(path)
        .env("FRAGSIM_PROCESS_CHILD", "linked")
        .env("_RJEM_MALLOC_CONF", conf)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("the fragsim binary");
    assert!(status.success());
}

fn process(c: &mut Criterion) {
    let spec = ThreadedSpec {
        seed: 21,
        events: 50_000,
        threads: 10,
        ..ThreadedSpec::default()
    };
    let records = threaded_trace(&spec);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.txt");
    std::fs::write(&path, to_text(&records)).unwrap();
    let one = dir.path().join("one.txt");
    std::fs::write(&one, "a 0 8\n").unwrap();
    let options = ProcessOptions::parse("experimental_tcache_gc:false").unwrap();
    let conf = options.to_conf(fragsim::sizeclass::JemallocVersion::V5_3_1);
    let config = Api::linked().config().expect("linked jemalloc");
    let mut group = c.benchmark_group("process");
    group.throughput(Throughput::Elements(records.len() as u64));
    group.sample_size(10);
    group.bench_function("model", |b| {
        b.iter(|| {
            let mut p = Process::new(config, options.clone(), 2).unwrap();
            for r in &records {
                p.apply(r).unwrap();
            }
            black_box(p.stats().active_bytes)
        })
    });
    group.bench_function("live-baton", |b| b.iter(|| live(&path, &conf)));
    group.bench_function("live-start", |b| b.iter(|| live(&one, &conf)));
    group.finish();
}

criterion_group!(benches, process);
criterion_main!(benches);
