//! What the what-if replay costs beside the plain arena model on the same in-memory trace:
//! `model` applies the events only; `whatif` also keeps every peak, the per-class ledger and
//! the snapshot at the active peak (one build, no timeline).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::sim::{random_trace, Arena, WorkloadSpec};
use fragsim::whatif::{replay_build, Build, ReplayOptions};
use std::hint::black_box;

fragsim::use_jemalloc!();

fn whatif(c: &mut Criterion) {
    let spec = WorkloadSpec {
        seed: 7,
        events: 200_000,
        target_live: 20_000,
        ..WorkloadSpec::default()
    };
    let events = random_trace(&spec);
    let build = Build::preset("default").unwrap();
    let mut group = c.benchmark_group("whatif");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(20);
    group.bench_function("model", |b| {
        b.iter(|| {
            let mut arena = Arena::new(build.config).unwrap();
            for &e in &events {
                arena.apply(e).unwrap();
            }
            black_box(*arena.stats())
        })
    });
    group.bench_function("whatif", |b| {
        b.iter(|| {
            let arena = Arena::new(build.config).unwrap();
            let stream = events.iter().map(|&e| Ok::<_, std::io::Error>(e));
            let replay = replay_build(
                &build,
                arena,
                stream,
                ReplayOptions { every: None },
                &|_| {},
            )
            .unwrap();
            black_box(replay.peak)
        })
    });
    group.finish();
}

criterion_group!(benches, whatif);
criterion_main!(benches);
