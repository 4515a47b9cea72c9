//! The arena model against the real jemalloc replaying the same in-memory trace, side by side
//! (no statistics read on either side: the cost of applying events).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragsim::check::LiveArena;
use fragsim::live::Api;
use fragsim::sim::{random_trace, ArenaModel, WorkloadSpec};
use std::hint::black_box;

fragsim::use_jemalloc!();

fn replay(c: &mut Criterion) {
    // Read first, so that a bad FRAGSIM_BENCH_TRACE stops the bench before any measurement.
    let trace = largest_trace();
    let spec = WorkloadSpec {
        seed: 7,
        events: 200_000,
        target_live: 20_000,
        ..WorkloadSpec::default()
    };
    let events = random_trace(&spec);
    let config = Api::linked().config().expect("linked jemalloc");
    model_beside_live(c, "replay", &events, config, 20);
    if let Some((name, events)) = trace {
        model_beside_live(c, &format!("replay-trace-{name}"), &events, config, 10);
    }
}

/// One group: the same events through the model and through a live private arena.
fn model_beside_live(
    c: &mut Criterion,
    group_name: &str,
    events: &[fragsim::trace::Event],
    config: fragsim::sizeclass::AllocatorConfig,
    samples: usize,
) {
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(samples);
    group.bench_function("model", |b| {
        b.iter(|| {
            let mut arena = ArenaModel::new(config).unwrap();
            for &e in events {
                arena.apply(e).unwrap();
            }
            black_box(arena.stats())
        })
    });
    group.bench_function("live", |b| {
        b.iter(|| {
            let mut arena = LiveArena::new().unwrap();
            for &e in events {
                arena.apply(e).unwrap();
            }
            black_box(&arena);
        })
    });
    group.finish();
}

/// The trace named by `FRAGSIM_BENCH_TRACE`, else the largest in data/traces/, if any. A
/// variable that is set but empty, or names a trace that cannot be read, stops the bench with
/// a one-line message (exit 2) rather than leave its group out unseen.
fn largest_trace() -> Option<(String, Vec<fragsim::trace::Event>)> {
    let path = match std::env::var_os("FRAGSIM_BENCH_TRACE") {
        Some(p) if p.is_empty() => fail(
            "FRAGSIM_BENCH_TRACE is set but empty: name a trace file, or unset it to bench the largest trace in data/traces/",
        ),
        Some(p) => std::path::PathBuf::from(p),
        None => std::fs::read_dir("data/traces")
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "trace"))
            .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))?,
    };
    let events = fragsim::trace::open(&path)
        .and_then(|t| t.events().collect::<Result<Vec<_>, _>>())
        .unwrap_or_else(|e| fail(&format!("cannot bench {}: {e}", path.display())));
    let name = path.file_stem()?.to_string_lossy().to_string();
    Some((name, events))
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(2)
}

criterion_group!(benches, replay);
criterion_main!(benches);
