//! What the what-if replay costs beside the plain arena model on the same in-memory trace:
//! `model` applies the events only; `whatif` also keeps every peak, the per-class ledger and
//! the snapshot at the active peak (one build, no timeline).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::sim::{random_trace, ArenaModel, WorkloadSpec};
use fragsim::whatif::{replay_build, replay_builds, Build, ReplayOptions};
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
            let mut arena = ArenaModel::new(build.config).unwrap();
            for &e in &events {
                arena.apply(e).unwrap();
            }
            black_box(arena.stats())
        })
    });
    group.bench_function("whatif", |b| {
        b.iter(|| {
            let arena = ArenaModel::new(build.config).unwrap();
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

    // One read of the trace for several builds: the engine feeds each batch to every build's
    // model in parallel, so 5 builds cost about one where there are cores for them.
    let mut group = c.benchmark_group("whatif-builds");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(10);
    let all: Vec<Build> = ["default", "quantum8", "page16k", "page64k", "5.3.1"]
        .iter()
        .map(|p| Build::preset(p).unwrap())
        .collect();
    for n in [1, 5] {
        let builds = &all[..n];
        group.bench_function(format!("{n}-builds"), |b| {
            b.iter(|| {
                let replays = replay_builds(
                    builds,
                    |b| Ok(ArenaModel::new(b.config).unwrap()),
                    || Ok(events.iter().map(|&e| Ok::<_, std::io::Error>(e))),
                    ReplayOptions { every: None },
                    &|_| {},
                )
                .unwrap();
                black_box(replays.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, whatif);
criterion_main!(benches);
