//! Model against the real jemalloc on random traces, every event compared.

use fragsim::check::{replay_compare, LiveAllocator, LiveOptions};
use fragsim::sim::{random_trace, WorkloadSpec};
use fragsim::trace::Record;

fn check(spec: WorkloadSpec, setting: LiveAllocator) {
    let events = random_trace(&spec);
    let options = LiveOptions {
        every: 1,
        allocator: setting.clone(),
        child_exe: Some(env!("CARGO_BIN_EXE_fragsim").into()),
        keep: 5,
    };
    let result = replay_compare(&Record::plain_calls(&events), &options).expect("replay");
    let c = &result.comparison;
    assert_eq!(c.snapshots, spec.events, "{spec:?}");
    assert!(
        c.is_exact(),
        "{spec:?} {setting:?}: {} of {} values differ; first: {:?}",
        c.mismatched_values,
        c.values,
        c.first
    );
}

#[test]
fn random_traces_match_live_with_page_rounded_large_sizes() {
    for seed in 1..=3 {
        let spec = WorkloadSpec {
            seed,
            ..WorkloadSpec::default()
        };
        check(spec, LiveAllocator::LinkedWith(true));
    }
}

/// The linked build replayed apart in a child process (one automatic arena there, so each
/// statistics refresh merges two arenas) compares what the in-process replay compares, every
/// event, and matches: the same values counted, none mismatched.
#[test]
fn the_linked_build_replayed_in_a_child_matches_as_in_process() {
    let spec = WorkloadSpec {
        seed: 4,
        events: 5_000,
        ..WorkloadSpec::default()
    };
    let events = random_trace(&spec);
    let run = |allocator: LiveAllocator| {
        let options = LiveOptions {
            every: 1,
            allocator,
            child_exe: Some(env!("CARGO_BIN_EXE_fragsim").into()),
            keep: 5,
        };
        replay_compare(&Record::plain_calls(&events), &options)
            .expect("replay")
            .comparison
    };
    // The linked 5.3.1 starts with disable_large_size_classes on: in process.
    let inside = run(LiveAllocator::LinkedWith(true));
    let apart = run(LiveAllocator::Isolated(true));
    assert_eq!(apart.snapshots, spec.events);
    assert_eq!(apart.values, inside.values);
    assert!(
        apart.is_exact() && inside.is_exact(),
        "apart {} / in process {} values differ; first: {:?}",
        apart.mismatched_values,
        inside.mismatched_values,
        apart.first
    );
}

#[test]
fn random_traces_match_live_with_large_size_classes() {
    for seed in 1..=3 {
        let spec = WorkloadSpec {
            seed,
            ..WorkloadSpec::default()
        };
        check(spec, LiveAllocator::LinkedWith(false));
    }
}

#[test]
fn large_heavy_traces_match_live() {
    for (seed, setting) in [(11, true), (12, false)] {
        let spec = WorkloadSpec {
            seed,
            events: 10_000,
            target_live: 300,
            large_share: 0.5,
            realloc_share: 0.2,
            ..WorkloadSpec::default()
        };
        check(spec, LiveAllocator::LinkedWith(setting));
    }
}

/// jemalloc 5.3.0 semantics against Debian's libjemalloc2 (5.3.0), preloaded into a child.
/// Skipped (with a note) where that library is not installed.
#[test]
fn random_traces_match_system_jemalloc_5_3_0() {
    let lib = std::path::PathBuf::from("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    if !lib.is_file() {
        eprintln!("skipped: no {}", lib.display());
        return;
    }
    for seed in 21..=22 {
        let spec = WorkloadSpec {
            seed,
            events: 10_000,
            target_live: 500,
            large_share: 0.3,
            realloc_share: 0.2,
            ..WorkloadSpec::default()
        };
        check(spec, LiveAllocator::System(lib.clone()));
    }
}

#[test]
fn the_validation_set_passes_quickly() {
    use fragsim::check::replay_validation;
    use fragsim::validate::replay_validation_table;
    let checks = replay_validation(env!("CARGO_BIN_EXE_fragsim").as_ref(), true, None).unwrap();
    assert_eq!(checks.len(), 4);
    for c in &checks {
        assert!(
            c.comparison.is_exact(),
            "{}: {:?}",
            c.allocator,
            c.comparison.first
        );
        assert_eq!(c.comparison.snapshots, c.spec.events);
    }
    assert_eq!(replay_validation_table(&checks).rows.len(), 4);
}
