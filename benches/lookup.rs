//! Our size-class lookup against jemalloc's own `nallocx`, on the same requests, side by side.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::live::{nallocx, LiveBuild};
use fragsim::random::log_uniform_requests;
use fragsim::sizeclass::SizeClasses;
use std::hint::black_box;

fn lookup(c: &mut Criterion) {
    let model = SizeClasses::new(LiveBuild::read().unwrap().config().unwrap()).unwrap();
    let requests = log_uniform_requests(4096, 1 << 20, 42);
    let mut group = c.benchmark_group("lookup_4096_log_uniform_requests_up_to_1MiB");
    group.throughput(Throughput::Elements(requests.len() as u64));
    group.bench_function("fragsim_usable_size", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for &r in &requests {
                sum = sum.wrapping_add(model.usable_size(black_box(r)).unwrap_or(0));
            }
            sum
        })
    });
    group.bench_function("jemalloc_nallocx", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for &r in &requests {
                sum = sum.wrapping_add(nallocx(black_box(r)));
            }
            sum
        })
    });
    group.finish();
}

fn exhaustive(c: &mut Criterion) {
    let model = SizeClasses::new(LiveBuild::read().unwrap().config().unwrap()).unwrap();
    let mut group = c.benchmark_group("exhaustive");
    group.sample_size(10);
    group.bench_function("model_vs_nallocx_every_request_0_to_64MiB", |b| {
        b.iter(|| {
            let mismatches = (0..=64u64 << 20)
                .filter(|&r| model.usable_size(r) != Some(nallocx(r)))
                .count();
            assert_eq!(mismatches, 0);
        })
    });
    group.finish();
}

criterion_group!(benches, lookup, exhaustive);
criterion_main!(benches);
