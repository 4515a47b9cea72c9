//! The model against the jemalloc this test binary runs on (tikv-jemalloc-sys): the truth
//! here is the allocator itself, through mallctl, nallocx and its statistics.

use fragsim::live::{in_private_arena, nallocx, LiveBuild, PrivateArena};
use fragsim::sizeclass::{AllocatorConfig, SizeClasses};
use fragsim::validate::{validate, ValidateOptions};
use std::process::Command;

#[test]
fn live_checks_find_zero_mismatches() {
    let v = validate(&ValidateOptions::reduced()).unwrap();
    assert!(v.passed(), "{:#?}", v.first_mismatches(10));
    // The reduced sweep: 32 value sizes (8..=256 step 8) x 13 table sizes (2, 4, 10, 20, ...,
    // 10240), each allocated before (split) and after (unified).
    assert_eq!(v.f14.len(), 32 * 13 * 2);
    assert!(v.compared() > 4 << 20);
    assert!(v
        .f14
        .iter()
        .all(|m| m.measured_usable > 0 && m.measured_active > 0));
}

#[test]
fn live_class_table_matches_jemalloc_manual_for_this_build() {
    // tikv-jemalloc-sys builds jemalloc with its defaults on x86-64: 4 KiB pages, 16 B quantum.
    let live = LiveBuild::read().unwrap();
    assert_eq!((live.page, live.quantum), (4096, 16));
    assert_eq!(live.bins.len(), 36);
    assert_eq!(live.bins.last().unwrap().size, 14336);
    assert_eq!(live.large[0], 16384);
}

#[test]
fn nallocx_agrees_with_the_live_derived_model_on_hand_picked_requests() {
    let model = SizeClasses::new(LiveBuild::read().unwrap().config().unwrap()).unwrap();
    for r in [
        0,
        1,
        8,
        9,
        100,
        400,
        544,
        14336,
        14337,
        16385,
        32769,
        1 << 30,
    ] {
        assert_eq!(model.usable_size(r), Some(nallocx(r)), "request {r}");
    }
}

#[test]
fn a_wrong_model_is_reported_as_mismatches() {
    let mut options = ValidateOptions::reduced();
    options.model = Some(AllocatorConfig::preset("quantum8").unwrap());
    let v = validate(&options).unwrap();
    assert!(!v.passed());
    assert!(v.mismatches() > 1000, "{}", v.mismatches());
    // F14 rows with 24-byte classes are measured differently, not only the class table.
    assert!(v.f14.iter().any(|m| !m.ok()));
}

#[test]
fn the_cli_exits_1_on_a_wrong_model_and_0_on_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fragsim"))
            .args(["validate", "--out", out])
            .args(extra)
            .output()
            .unwrap()
    };
    let wrong = run(&["--preset", "quantum8", "--variant", "wrong"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("mismatch"));
    let report = std::fs::read_to_string(dir.path().join("validation-wrong.md")).unwrap();
    assert!(report.contains("MISMATCH"));
    let right = run(&[]);
    assert_eq!(
        right.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&right.stderr)
    );
    assert!(dir.path().join("validation.csv").exists());
}

#[test]
fn repeat_runs_measure_identical_usable_bytes() {
    let mut options = ValidateOptions::reduced();
    options.exhaustive_up_to = 0;
    let measured = || -> Vec<(u64, u64)> {
        validate(&options)
            .unwrap()
            .f14
            .iter()
            .map(|m| (m.measured_usable, m.measured_active))
            .collect()
    };
    assert_eq!(measured(), measured());
}

#[test]
fn call_counts_are_jemallocs_own() {
    // Three small and two large allocations in a private arena: nmalloc counts five, and
    // ndalloc reaches five once they are freed. The validation's calls check reads these.
    let arena = PrivateArena::create().unwrap();
    let sizes = [8u64, 100, 14336, 16385, 1 << 20];
    let ptrs: Vec<_> = sizes.iter().map(|&s| arena.alloc(s).unwrap()).collect();
    let alive = arena.usage().unwrap();
    assert_eq!((alive.mallocs, alive.frees), (5, 0));
    for (ptr, size) in ptrs.into_iter().zip(sizes) {
        // SAFETY: each pointer came from this arena's alloc(size) and is freed once.
        unsafe { arena.free(ptr, size) };
    }
    let freed = arena.usage().unwrap();
    assert_eq!((freed.mallocs, freed.frees), (5, 5));
    assert_eq!(freed.allocated, 0);

    // A thread bound to a private arena: ten boxes and the vector holding them.
    // SAFETY: the boxes are owned by the returned vector, which in_private_arena drops.
    let (usage, len) = unsafe {
        in_private_arena(
            || (0..10u64).map(Box::new).collect::<Vec<_>>(),
            |boxes| boxes.len(),
        )
    }
    .unwrap();
    assert_eq!(len, 10);
    assert!(usage.mallocs >= 11, "{usage:?}");
    assert_eq!(usage.allocated, 10 * 8 + nallocx(10 * 8));
}
