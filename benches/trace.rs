//! Reading the largest committed trace: binary from memory and from the file, side by side with
//! its text form (the peer), and writing it; and the recording allocator beside plain jemalloc. Events/s from criterion's throughput; bytes/event
//! is printed once (file size / events).
//!
//! The `*_cpu` variants time the same work in this thread's CPU time (the kernel's
//! `/proc/thread-self/schedstat`, in ns) instead of wall time: on a machine shared with other
//! jobs, wall time also counts the time the thread waited for a core.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::global::Jemalloc;
use fragsim::trace::{
    read_text, write_text, Event, RecordScope, RecordingAllocator, TraceReader, TraceWriter,
};
use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Duration;

fragsim::use_jemalloc!();

fn largest_trace() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    std::fs::read_dir(&dir)
        .expect("data/traces")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "trace"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("a committed trace")
}

/// Folds every event into a checksum so nothing is optimised away.
fn consume(events: impl Iterator<Item = Result<Event, fragsim::trace::TraceError>>) -> u64 {
    let mut sum = 0u64;
    for e in events {
        match e.unwrap() {
            Event::Alloc { id, size, .. } => sum = sum.wrapping_add(size ^ id as u64),
            Event::Free { id } => sum = sum.wrapping_add(id as u64),
            Event::Realloc { id, size } => sum = sum.wrapping_add(size.wrapping_mul(id as u64)),
        }
    }
    sum
}

/// As [`consume`], over the batches the engine reads.
fn consume_batches(trace: fragsim::trace::OpenedTrace) -> u64 {
    let mut batches = trace.batches();
    let mut batch = fragsim::trace::Batch::with_capacity(fragsim::engine::BATCH);
    let mut sum = 0u64;
    loop {
        batches.fill(&mut batch, fragsim::engine::BATCH).unwrap();
        if batch.is_empty() {
            return sum;
        }
        sum = sum.wrapping_add(consume(batch.calls().iter().map(|c| Ok(c.event))));
    }
}

/// This thread's CPU time so far.
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = text
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

/// `iters` runs of `work`, timed in CPU time.
fn cpu_timed<T>(iters: u64, mut work: impl FnMut() -> T) -> Duration {
    let start = thread_cpu();
    for _ in 0..iters {
        black_box(work());
    }
    thread_cpu() - start
}

fn trace(c: &mut Criterion) {
    let path = largest_trace();
    let bytes = std::fs::read(&path).unwrap();
    let events: Vec<Event> = TraceReader::new(&bytes[..])
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let n = events.len() as u64;
    let mut text = Vec::new();
    write_text(&mut text, events.iter().copied().map(Ok)).unwrap();
    let name = path.file_stem().unwrap().to_string_lossy().to_string();
    eprintln!(
        "{name}: {n} events, {} bytes binary = {:.3} bytes/event; text {:.3} bytes/event",
        bytes.len(),
        bytes.len() as f64 / n as f64,
        text.len() as f64 / n as f64
    );

    let mut group = c.benchmark_group(format!("trace_{name}"));
    group.throughput(Throughput::Elements(n));
    group.sample_size(30);
    group.bench_function("read_binary_memory", |b| {
        b.iter(|| consume(TraceReader::new(black_box(&bytes[..])).unwrap()))
    });
    group.bench_function("read_binary_memory_cpu", |b| {
        b.iter_custom(|iters| cpu_timed(iters, || consume(TraceReader::new(&bytes[..]).unwrap())))
    });
    group.bench_function("read_text_memory_cpu", |b| {
        b.iter_custom(|iters| cpu_timed(iters, || consume(read_text(&text[..]))))
    });
    group.bench_function("read_binary_file", |b| {
        b.iter(|| consume(fragsim::trace::open(black_box(&path)).unwrap().events()))
    });
    // The engine's way in: the same file decoded a batch at a time.
    group.bench_function("read_binary_file_batches", |b| {
        b.iter(|| consume_batches(fragsim::trace::open(black_box(&path)).unwrap()))
    });
    group.bench_function("read_text_memory", |b| {
        b.iter(|| consume(read_text(black_box(&text[..]))))
    });
    group.bench_function("write_binary_memory", |b| {
        b.iter(|| {
            let mut w = TraceWriter::new(Cursor::new(Vec::with_capacity(bytes.len()))).unwrap();
            for e in &events {
                w.write(e).unwrap();
            }
            w.finish_into_inner().unwrap().0
        })
    });
    group.finish();
}

const PAIRS: usize = 10_000;

/// `PAIRS` alloc + dealloc pairs of 64 bytes through `a`.
fn churn(a: &impl GlobalAlloc) {
    let layout = Layout::from_size_align(64, 8).unwrap();
    for _ in 0..PAIRS {
        // SAFETY: a non-zero layout; the block is freed with the same layout.
        unsafe {
            let p = a.alloc(black_box(layout));
            a.dealloc(black_box(p), layout);
        }
    }
}

/// The recorder's cost: jemalloc called directly, through an idle recorder, and through a
/// recording one (a fresh buffer per timed batch, started and stopped untimed). CPU time: the
/// differences are nanoseconds, below the wall-time noise of a shared machine.
fn recording_allocator(c: &mut Criterion) {
    let recorder = RecordingAllocator::new(Jemalloc);
    let mut group = c.benchmark_group("recording_allocator_10000_alloc_free_pairs_of_64B_cpu");
    group.throughput(Throughput::Elements(PAIRS as u64));
    group.sample_size(30);
    group.bench_function("jemalloc", |b| {
        b.iter_custom(|iters| cpu_timed(iters, || churn(&Jemalloc)))
    });
    group.bench_function("recorder_idle", |b| {
        b.iter_custom(|iters| cpu_timed(iters, || churn(&recorder)))
    });
    group.bench_function("recorder_recording", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                recorder.start(2 * PAIRS, RecordScope::ThisThread).unwrap();
                total += cpu_timed(1, || churn(&recorder));
                assert_eq!(black_box(recorder.stop()).dropped, 0);
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, trace, recording_allocator);
criterion_main!(benches);
