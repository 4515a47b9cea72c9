//! The model against the jemalloc this test binary runs on (tikv-jemalloc-sys): the truth
//! here is the allocator itself, through mallctl, nallocx and its statistics.

use fragsim::live::{nallocx, validate, LiveBuild, ValidateOptions};
use fragsim::sizeclass::{AllocatorConfig, SizeClasses};
use std::process::Command;

fragsim::use_jemalloc!();

#[test]
fn live_checks_find_zero_mismatches() {
    let v = validate(&ValidateOptions::reduced()).unwrap();
    assert!(v.passed(), "{:#?}", v.first_mismatches(10));
    // The reduced sweep: 32 value sizes (8..=256 step 8) x 13 table sizes (2, 4, 10, 20, ...,
    // 10240), each allocated before (split) and after (unified).
    assert_eq!(v.f14.len(), 32 * 13 * 2);
    assert!(v.compared > 4 << 20);
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
    assert!(v.mismatches > 1000, "{}", v.mismatches);
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
