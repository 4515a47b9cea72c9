//! The arena model against the real jemalloc replaying the same in-memory trace, side by side
//! (no statistics read on either side: the cost of applying events).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::live::replay::{Api, LiveArena};
use fragsim::sim::{random_trace, Arena, WorkloadSpec};
use std::hint::black_box;

fragsim::use_jemalloc!();

fn replay(c: &mut Criterion) {
    let spec = WorkloadSpec {
        seed: 7,
        events: 200_000,
        target_live: 20_000,
        ..WorkloadSpec::default()
    };
    let events = random_trace(&spec);
    let config = Api::linked().config().expect("linked jemalloc");
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(20);
    group.bench_function("model", |b| {
        b.iter(|| {
            let mut arena = Arena::new(config).unwrap();
            for &e in &events {
                arena.apply(e).unwrap();
            }
            black_box(*arena.stats())
        })
    });
    group.bench_function("live", |b| {
        b.iter(|| {
            let mut arena = LiveArena::new().unwrap();
            for &e in &events {
                arena.apply(e).unwrap();
            }
            black_box(&arena);
        })
    });
    group.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
