//! Build + reset of the second seed's workload, per strategy, side by side.

use criterion::{criterion_group, criterion_main, Criterion};
use fragsim::experiments::{build_and_reset, BumpArenaSpec, Strategy};
use std::time::Duration;

fragsim::use_jemalloc!();

fn arena(c: &mut Criterion) {
    let vectors: u64 = std::env::var("FRAGSIM_BENCH_VECTORS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let spec = BumpArenaSpec {
        vectors,
        ..BumpArenaSpec::seed()
    };
    let mut group = c.benchmark_group(format!("build_and_reset_{vectors}_vectors_of_100_i32"));
    group.sample_size(20);
    for strategy in Strategy::ALL {
        group.bench_function(strategy.name().replace(' ', "_"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let (build, reset) = build_and_reset(strategy, &spec).unwrap();
                        build + reset
                    })
                    .sum::<Duration>()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, arena);
criterion_main!(benches);
