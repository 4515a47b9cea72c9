//! The batch lookup beside the scalar one and jemalloc's own `nallocx`, in one group, on the
//! same 4,096 log-uniform requests up to 1 MiB. `fragsim_usable_sizes_batch` runs the widest
//! loop this CPU has (printed); `..._portable` the one built for baseline x86-64 (SSE2),
//! `..._avx2` the AVX2 one.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::live::{nallocx, LiveBuild};
use fragsim::random::log_uniform_requests;
use fragsim::sizeclass::{LaneWidth, SizeClasses};
use std::hint::black_box;

fn batch(c: &mut Criterion) {
    let model = SizeClasses::new(LiveBuild::read().unwrap().config().unwrap()).unwrap();
    let requests = log_uniform_requests(4096, 1 << 20, 42);
    let mut out = vec![0u64; requests.len()];
    // The three must agree, or the comparison is meaningless.
    model.usable_sizes(&requests, &mut out);
    for (&r, &answer) in requests.iter().zip(&out) {
        assert_eq!(answer, nallocx(r), "request {r}");
        assert_eq!(Some(answer), model.usable_size(r), "request {r}");
    }

    eprintln!(
        "widest batch loop on this CPU: {}",
        LaneWidth::widest().as_str()
    );
    let mut group = c.benchmark_group("batch_4096_log_uniform_requests_up_to_1MiB");
    group.throughput(Throughput::Elements(requests.len() as u64));
    group.bench_function("fragsim_usable_size_loop", |b| {
        b.iter(|| {
            for (slot, &r) in out.iter_mut().zip(black_box(&requests)) {
                *slot = model.usable_size(r).unwrap_or(0);
            }
            black_box(&mut out);
        })
    });
    group.bench_function("fragsim_usable_sizes_batch", |b| {
        b.iter(|| {
            model.usable_sizes(black_box(&requests), &mut out);
            black_box(&mut out);
        })
    });
    group.bench_function("fragsim_usable_sizes_batch_portable", |b| {
        b.iter(|| {
            model.usable_sizes_with(LaneWidth::Portable, black_box(&requests), &mut out);
            black_box(&mut out);
        })
    });
    if LaneWidth::Avx2.available() {
        group.bench_function("fragsim_usable_sizes_batch_avx2", |b| {
            b.iter(|| {
                model.usable_sizes_with(LaneWidth::Avx2, black_box(&requests), &mut out);
                black_box(&mut out);
            })
        });
    }
    group.bench_function("jemalloc_nallocx_loop", |b| {
        b.iter(|| {
            for (slot, &r) in out.iter_mut().zip(black_box(&requests)) {
                *slot = nallocx(r);
            }
            black_box(&mut out);
        })
    });
    group.finish();
}

criterion_group!(benches, batch);
criterion_main!(benches);
