//! The arena timing: cold/warm split, child processes per jemalloc setting, jemalloc's
//! statistics behind the huge-arena explanation, and the seed's C++ program.

use fragsim::experiments::{
    parse_cxx_lines, run_cxx, run_one, stats_table, summarize, summarize_cxx, ArenaPages,
    ChildReport, JemallocInfo, JemallocSetting, MatrixOptions, RunSample, TimedStrategy, Workload,
};
use std::path::Path;
use std::process::Command;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_fragsim"))
}

fn sample(run: u32, build_ms: u64, reset_ms: u64, faults: u64) -> RunSample {
    RunSample {
        run,
        build_ns: build_ms * 1_000_000,
        reset_ns: reset_ms * 1_000_000,
        build_faults: faults,
        reset_faults: 0,
        bump_allocated: None,
        at_peak: Vec::new(),
        after_reset: Vec::new(),
    }
}

fn info() -> JemallocInfo {
    JemallocInfo {
        version: "test".into(),
        dirty_decay_ms: 10_000,
        muzzy_decay_ms: 0,
        oversize_threshold: 8 << 20,
        narenas_auto: 8,
        huge_arena: Some(8),
        page: 4096,
    }
}

#[test]
fn cold_is_the_first_run_and_warm_the_median_of_the_rest() {
    // Hand-derived: run 1 is 100+10 ms with 900 faults; warm totals 20, 40, 30 -> median 30.
    let report = ChildReport {
        strategy: TimedStrategy::Arena,
        vectors: 1,
        elements: 1,
        jemalloc: info(),
        runs: vec![
            sample(1, 100, 10, 900),
            sample(2, 15, 5, 0),
            sample(3, 30, 10, 7),
            sample(4, 20, 10, 3),
        ],
    };
    let s = &summarize(&[(JemallocSetting::Defaults, report)])[0];
    assert_eq!(s.cold.total_ms, 110.0);
    assert_eq!(s.cold.faults, (900, 900));
    assert_eq!(s.warm.total_ms, 30.0);
    assert_eq!(s.warm.total_range_ms, (20.0, 40.0));
    assert_eq!(s.warm.faults, (0, 7));
    assert_eq!(s.warm.runs, 3);
}

/// `Vec<Vec<i32>>` runs as children of two builds: their runs in one report, each numbered
/// within its process; every run 1 is cold, and the purged pages per warm run count only
/// within a process (each child's counter starts again).
#[test]
fn children_of_two_builds_are_cold_then_warm_and_their_purges_count_per_process() {
    let exe = Path::new("fragsim");
    let options = MatrixOptions {
        reused_runs: 6,
        ..MatrixOptions::all(exe, 10, 10, 4)
    };
    assert_eq!(options.children(TimedStrategy::General), (2, 2));
    assert_eq!(options.children(TimedStrategy::Reused), (1, 6));
    assert_eq!(options.children(TimedStrategy::Arena), (1, 4));
    let purged = |run, pages| RunSample {
        after_reset: vec![ArenaPages {
            arena: 0,
            large_allocated: 0,
            pdirty: 0,
            pmuzzy: 0,
            mapped: 0,
            dirty_purged: pages,
        }],
        ..sample(run, 10 * u64::from(run), 0, 100 / u64::from(run))
    };
    // Child 1 purged 256 pages in its warm run, child 2 (whose counter starts at 1000 after
    // its cold run) 768: 512 pages of 4 KiB a warm run = 2 MiB.
    let report = ChildReport {
        strategy: TimedStrategy::General,
        vectors: 1,
        elements: 1,
        jemalloc: info(),
        runs: vec![
            purged(1, 0),
            purged(2, 256),
            purged(1, 1000),
            purged(2, 1768),
        ],
    };
    let results = [(JemallocSetting::Defaults, report)];
    let s = &summarize(&results)[0];
    assert_eq!((s.cold.runs, s.warm.runs), (2, 2));
    assert_eq!((s.cold.total_ms, s.warm.total_ms), (10.0, 20.0));
    assert_eq!((s.cold.faults, s.warm.faults), ((100, 100), (50, 50)));
    let table = stats_table(&results);
    let col = table.column("purged_per_warm_run_mib").unwrap();
    assert_eq!(table.rows[0][col].text(), "2.0");
}

#[test]
fn cxx_lines_parse_runs_and_skips_and_reject_garbage() {
    let text = r#"{"program":"seed-pmr","allocator":"glibc","strategy":"std","vectors":10,"elements":2,"run":1,"build_us":1000.0,"reset_us":500.0,"build_faults":3,"reset_faults":0,"jemalloc_pdirty":-1,"jemalloc_mapped":-1}
{"program":"seed-pmr","allocator":"glibc","strategy":"std","vectors":10,"elements":2,"run":2,"build_us":400.0,"reset_us":100.0,"build_faults":0,"reset_faults":0}
{"skip":"g++ not found"}
"#;
    let out = parse_cxx_lines(text).unwrap();
    assert_eq!(out.runs.len(), 2);
    assert_eq!(out.skipped, vec!["g++ not found".to_string()]);
    let s = &summarize_cxx(&out.runs)[0];
    assert_eq!((s.cold.total_ms, s.warm.total_ms), (1.5, 0.5));
    let err = parse_cxx_lines("{\"run\": 1}\n").unwrap_err().to_string();
    assert!(err.contains("line 1"), "{err}");
}

/// The huge-arena explanation, checked against jemalloc itself with chunks above 8 MiB
/// (40,000 vectors of 100 ints: bumpalo's last chunk is 8 MiB + 48 B). The expectations come
/// from jemalloc's source: src/arena.c `arena_init_huge` (the huge arena is index
/// `opt.narenas`; `oversize_threshold:0` disables it) and src/extent.c `extent_record` (a
/// freed extent above the threshold is purged at once unless decay is off).
#[test]
fn chunks_above_the_threshold_live_in_the_huge_arena_and_are_purged_unless_decay_is_off() {
    let workload = Workload {
        vectors: 40_000,
        elements: 100,
        runs: 2,
    };
    let run = |setting| run_one(exe(), setting, TimedStrategy::Arena, workload).unwrap();
    let defaults = run(JemallocSetting::Defaults);
    let huge = defaults
        .jemalloc
        .huge_arena
        .expect("huge arena on by default");
    assert_eq!(huge, defaults.jemalloc.narenas_auto);
    let last = defaults.runs.last().unwrap();
    let holder = last
        .at_peak
        .iter()
        .max_by_key(|a| a.large_allocated)
        .unwrap();
    assert_eq!(holder.arena, huge, "the largest chunk is in the huge arena");
    let huge_after = last.after_reset.iter().find(|a| a.arena == huge).unwrap();
    assert!(huge_after.pdirty < 16, "purged at once: {huge_after:?}");
    assert!(
        last.build_faults > 2000,
        "warm run faults its chunks again: {last:?}"
    );

    let off = run(JemallocSetting::DecayOff);
    let last = off.runs.last().unwrap();
    let huge_after = last.after_reset.iter().find(|a| a.arena == huge).unwrap();
    assert!(
        huge_after.pdirty * 4096 > 8 << 20,
        "kept dirty: {huge_after:?}"
    );
    assert!(
        last.build_faults < 200,
        "warm run reuses the pages: {last:?}"
    );

    let none = run(JemallocSetting::NoHugeArena);
    assert_eq!(none.jemalloc.huge_arena, None);
    let last = none.runs.last().unwrap();
    let holder = last
        .at_peak
        .iter()
        .max_by_key(|a| a.large_allocated)
        .unwrap();
    assert!(holder.arena < none.jemalloc.narenas_auto, "{holder:?}");
}

#[test]
fn a_reused_arena_stops_faulting_once_its_chunk_holds_everything() {
    let report = run_one(
        exe(),
        JemallocSetting::Defaults,
        TimedStrategy::Reused,
        Workload {
            vectors: 40_000,
            elements: 100,
            runs: 4,
        },
    )
    .unwrap();
    let last = report.runs.last().unwrap();
    assert!(last.build_faults < 50, "{:?}", report.runs);
}

#[test]
fn bad_runs_are_a_one_line_error() {
    let out = Command::new(exe())
        .args(["bump-arena", "--timing", "--runs", "1", "--no-cxx"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad run count 1"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// The seed's C++ program builds and prints parseable runs on a tiny workload; skipped (with a
/// message) where g++ is missing.
#[test]
fn seed_cpp_program_builds_and_prints_parseable_runs() {
    if Command::new("g++").arg("--version").output().is_err() {
        eprintln!("skipped: g++ not found");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/seed-pmr.sh");
    let out = run_cxx(&script, 10_000, 100, 2).unwrap();
    let glibc: Vec<_> = out.runs.iter().filter(|r| r.allocator == "glibc").collect();
    assert_eq!(glibc.len(), 5 * 2, "5 strategies x 2 runs: {:?}", out.runs);
    assert!(glibc
        .iter()
        .all(|r| r.vectors == 10_000 && r.build_us > 0.0));
    // The reused preallocated buffer is warm after the first run: no page faults.
    let warm_nofree = glibc
        .iter()
        .find(|r| r.strategy == "nofree" && r.run == 2)
        .unwrap();
    assert!(warm_nofree.build_faults < 20, "{warm_nofree:?}");
    let jemalloc = |decay_off: bool| {
        out.runs
            .iter()
            .filter(|r| r.allocator.starts_with("jemalloc 5."))
            .filter(|r| r.allocator.ends_with("decay-off") == decay_off)
            .count()
    };
    if out.skipped.is_empty() {
        assert_eq!((jemalloc(false), jemalloc(true)), (10, 2), "{out:?}");
    }
}

#[test]
fn committed_section_rounds_faults_and_carries_no_times() {
    // Hand-derived: faults print in thousands rounded down, warm the fewest: 116,436 -> 116k,
    // 5,860 -> the wall-clock band 0k-19k (a general build under decay); 105,510 -> 105k, fewest of 62,504 and 0 -> 0k.
    let report = |strategy, faults: [u64; 3]| ChildReport {
        strategy,
        vectors: 1,
        elements: 1,
        jemalloc: info(),
        runs: faults
            .iter()
            .enumerate()
            .map(|(i, &f)| sample(i as u32 + 1, 123, 45, f))
            .collect(),
    };
    let run = fragsim::experiments::TimingRun {
        children: vec![
            (
                JemallocSetting::Defaults,
                report(TimedStrategy::General, [116_436, 5_860, 5_868]),
            ),
            (
                JemallocSetting::Defaults,
                report(TimedStrategy::Reused, [105_510, 62_504, 0]),
            ),
        ],
        cxx: Default::default(),
    };
    let text = fragsim::experiments::timing_section(&run, "fragsim test").unwrap();
    assert!(
        text.contains(
            // Wall-clock decay moves this count run to run (0k to a whole build's, more
            // under load): the committed cell names that, not a number.
            "| defaults | general | Vec<Vec<i32>> (malloc/free per vector) | 116k | varies with decay |"
        ),
        "{text}"
    );
    assert!(
        text.contains("| defaults | reused | one Bump, Bump::reset between builds | 105k | 0k |"),
        "{text}"
    );
    assert!(
        !text.contains("168"),
        "a measured time leaked into the committed text"
    );
    let times = fragsim::experiments::times_markdown(&run, "fragsim test").unwrap();
    assert!(times.contains("168.0"), "{times}");
}

#[test]
fn recorded_ratio_ranges_cover_every_setting_and_arena_variant() {
    // The committed report quotes recorded ranges; a new setting or variant needs its own.
    for setting in JemallocSetting::ALL {
        for strategy in TimedStrategy::ALL {
            if strategy == TimedStrategy::General {
                continue;
            }
            let row = format!("| {} | {} |", setting.key(), strategy.key());
            assert!(
                fragsim::experiments::RATIO_RANGES_MD.contains(&row),
                "no recorded range for {row}"
            );
        }
    }
}
