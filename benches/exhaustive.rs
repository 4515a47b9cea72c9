//! `exhaustive_check` over every request 0..=4 GiB (the `validate --exhaustive` workload), and
//! beside it on 0..=256 MiB its floor: nallocx alone over the same requests on the same
//! threads, which is what the check cannot go below.

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use fragsim::live::{nallocx, LiveBuild};
use fragsim::sizeclass::SizeClasses;
use fragsim::validate::{exhaustive_check, BLOCK};
use rayon::prelude::*;
use std::time::Duration;

fn check(model: &SizeClasses, max: u64) {
    let result = exhaustive_check(model, max, nallocx, |_| {});
    assert!(result.passed(), "{:?}", result.first_mismatches);
}

/// nallocx for every request in the same blocks on the same thread pool, summed so nothing is
/// optimised away.
fn nallocx_alone(max: u64) -> u64 {
    (0..max / BLOCK + 1)
        .into_par_iter()
        .map(|block| {
            let first = block * BLOCK;
            let last = (first + BLOCK - 1).min(max);
            (first..=last).fold(0u64, |sum, r| sum.wrapping_add(nallocx(r)))
        })
        .reduce(|| 0, u64::wrapping_add)
}

fn exhaustive(c: &mut Criterion) {
    let model = SizeClasses::new(LiveBuild::read().unwrap().config().unwrap()).unwrap();

    let mut group = c.benchmark_group("exhaustive_every_request_0_to_256MiB");
    group.sample_size(10);
    let max = 256u64 << 20;
    group.throughput(Throughput::Elements(max + 1));
    group.bench_function("exhaustive_check", |b| b.iter(|| check(&model, max)));
    group.bench_function("nallocx_alone", |b| b.iter(|| nallocx_alone(max)));
    group.finish();

    // One check takes tens of seconds: one run per sample, ten samples.
    let mut group = c.benchmark_group("exhaustive_every_request_0_to_4GiB");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(1));
    let max = 4u64 << 30;
    group.throughput(Throughput::Elements(max + 1));
    group.bench_function("exhaustive_check", |b| b.iter(|| check(&model, max)));
    group.finish();
}

criterion_group!(benches, exhaustive);
criterion_main!(benches);
