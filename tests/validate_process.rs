//! `fragsim validate`'s whole-process part: the generated threaded traces it replays cover
//! cross-thread frees, more threads than arenas, the huge arena and thread exits, and the
//! process model matches the live jemalloc after every event under the linked 5.3.1
//! (`experimental_tcache_gc:false`) and Debian's 5.3.0. The golden values are the live
//! allocator's own statistics, read by the baton child.

use fragsim::process::threaded_trace;
use fragsim::validate::{process_specs, process_validation, TraceShape};
use std::path::{Path, PathBuf};

const DEBIAN_530: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

#[test]
fn generated_threaded_traces_match_live_jemalloc_at_every_event() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_fragsim"));
    let system = Path::new(DEBIAN_530)
        .is_file()
        .then_some(Path::new(DEBIAN_530));
    if system.is_none() {
        eprintln!("no Debian jemalloc 5.3.0 at {DEBIAN_530}: checking the linked 5.3.1 only");
    }
    // What the traces exercise, counted on the records themselves.
    let shapes: Vec<TraceShape> = process_specs()
        .iter()
        .map(|(spec, _)| TraceShape::of(&threaded_trace(spec)))
        .collect();
    assert!(shapes.iter().all(|s| s.cross_thread_frees > 0));
    assert!(shapes.iter().filter(|s| s.huge_requests > 0).count() >= 2);
    assert!(shapes.iter().any(|s| s.thread_exits > 0));
    // Threads whose first calls are frees, some past 5.3.1's 128th (issue 40).
    assert!(shapes
        .iter()
        .any(|s| s.free_first_threads >= 8 && s.most_first_frees > 128));
    // Large blocks grown and shrunk through realloc.
    assert!(shapes.iter().any(|s| s.large_reallocs >= 100));
    let checks = process_validation(&exe, system).unwrap();
    let versions = if system.is_some() { 2 } else { 1 };
    assert_eq!(checks.len(), process_specs().len() * versions);
    // 12 threads on 4 arenas: threads share arenas.
    assert!(checks
        .iter()
        .any(|c| c.shape.threads > 2 * c.narenas && c.narenas == 4));
    if system.is_some() {
        assert!(checks.iter().any(|c| c.allocator.contains("(5.3.0)")));
    }
    for c in &checks {
        assert!(c.allocator.contains("5.3."), "{}", c.allocator);
        // One snapshot after every record, each with the totals and at least one arena.
        assert_eq!(c.comparison.snapshots, c.events, "{c:?}");
        assert!(c.comparison.values > 40 * c.events, "{c:?}");
        assert!(
            c.comparison.is_exact(),
            "{} seed {}: {} of {} values differ, first {:?}",
            c.allocator,
            c.spec.seed,
            c.comparison.mismatched_values,
            c.comparison.values,
            c.comparison.first
        );
    }
}

/// The comparison covers `stats.arenas.<i>.mapped` and `retained` for every arena, arena 0
/// included (its base, which holds the radix tree's leaves, is modelled block by block: the
/// live runs above then prove them). Hand-made snapshots.
#[test]
fn mappings_are_compared_for_every_arena() {
    use fragsim::process::{compare_snapshots, ArenaSnapshot, ProcessSnapshot};
    use fragsim::sim::Comparison;
    let arena = |index, mapped| ArenaSnapshot {
        index,
        mapped_bytes: mapped,
        retained_bytes: mapped / 2,
        ..ArenaSnapshot::default()
    };
    let snapshot = |m0, m1| ProcessSnapshot {
        event: 1,
        arenas: vec![arena(0, m0), arena(1, m1)],
        ..ProcessSnapshot::default()
    };
    let mut c = Comparison::default();
    compare_snapshots(
        &snapshot(4 << 20, 6 << 20),
        &snapshot(4 << 20, 6 << 20),
        5,
        &mut c,
    );
    assert!(c.is_exact(), "{c:?}");
    compare_snapshots(
        &snapshot(4 << 20, 6 << 20),
        &snapshot(8 << 20, 8 << 20),
        5,
        &mut c,
    );
    let names: Vec<&str> = c.first.iter().map(|m| m.statistic.as_str()).collect();
    assert_eq!(
        names,
        [
            "arena.0.mapped",
            "arena.0.retained",
            "arena.1.mapped",
            "arena.1.retained"
        ]
    );
}

/// `validate --fuzz N`: N more generated traces, each shape in turn, through the process model
/// and the live jemalloc, every event compared; each names its seed. A bad N is one line and
/// exit 2. Golden values: the live allocators' statistics (the baton child's).
#[test]
fn validate_fuzz_replays_more_traces_live() {
    use fragsim::process::TraceKind;
    let kinds: Vec<TraceKind> = fragsim::validate::fuzz_specs(5000, 3)
        .iter()
        .map(|(s, _)| s.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            TraceKind::LargeReallocs,
            TraceKind::Random,
            TraceKind::FirstFrees
        ],
        "5000 % 3 = 2: the realloc shape first"
    );
    let exe = env!("CARGO_BIN_EXE_fragsim");
    let out = std::process::Command::new(exe)
        .args(["validate", "--fuzz", "3", "--fuzz-seed", "5000"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for seed in 5000..5003 {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("threaded trace seed {seed} ")))
            .collect();
        assert!(!lines.is_empty(), "seed {seed}: {text}");
        assert!(
            lines.iter().all(|l| l.ends_with(" 0 mismatched")),
            "{lines:?}"
        );
    }
    let bad = std::process::Command::new(exe)
        .args(["validate", "--fuzz", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("'0'") && err.contains("--fuzz"), "{err}");
}
