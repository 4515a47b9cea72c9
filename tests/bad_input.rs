//! Issue 38 §3: bad input a newcomer found. Each case was reproduced on the build before
//! (noted per test) and is refused now with one line, exit 2, before any work.

mod common;

use common::{assert_refused, assert_refused_naming, committed_trace, run, s, stderr_of};

/// `--cpus` is bounded as jemalloc bounds `narenas`: 4 arenas a CPU, at most 4,094
/// (`MALLOCX_ARENA_LIMIT - 1`, `malloc_init_narenas`), so 1 to 1,024 CPUs. Before: `--cpus 0`
/// was accepted by `replay --process`, `--cpus 100000` aborted with a Rust backtrace and
/// `--cpus 100000000` was killed by the OOM killer after taking 24 GB.
#[test]
fn cpus_out_of_jemallocs_bound_is_refused_by_every_command() {
    let t = committed_trace("c-thread-pool.trace");
    let t = s(&t);
    for cpus in ["0", "1025", "100000", "100000000", "-1", "two"] {
        let flag = format!("--cpus={cpus}");
        for command in [
            vec!["replay", t, "--process", &flag],
            vec!["replay", t, "--blame", &flag],
            vec!["advise", t, "--no-live", &flag],
        ] {
            let out = run(&command);
            assert_refused(&out, &format!("'{cpus}' for '--cpus"));
        }
    }
}

/// `replay --process --vaddr-bits`: a width outside 32 to 64 is one line naming the value,
/// exit 2; with `--live` it is refused (the live allocator's start is measured); a width
/// given moves the metadata: the committed C thread pool's peak resident under a 48-bit
/// build exceeds a 57-bit one's by start-up's trees, 2 MiB against 786,432 bytes (1,310,720,
/// `process/model/meta.rs`; the first extent record after the 48-bit leaf may touch one
/// page more, hence at least that).
#[test]
fn vaddr_bits_is_checked_and_moves_the_metadata() {
    let t = committed_trace("c-thread-pool.trace");
    for bad in ["31", "65", "x"] {
        let out = run(&["replay", s(&t), "--process", "--vaddr-bits", bad]);
        assert_refused(&out, &format!("'{bad}' for '--vaddr-bits"));
    }
    let out = run(&["replay", s(&t), "--process", "--live", "--vaddr-bits", "48"]);
    assert_refused(&out, "--vaddr-bits does not apply with --live");
    let peak = |bits: &str| -> u64 {
        let out = run(&["replay", s(&t), "--process", "--vaddr-bits", bits]);
        assert!(out.status.success(), "{}", stderr_of(&out));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let row = text
            .lines()
            .find(|l| l.starts_with("| peak resident bytes"))
            .unwrap_or_else(|| panic!("{text}"));
        // "7,884,800.0 (7.52 MiB)": the figure before its unit.
        let cell = row
            .split('|')
            .nth(2)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        cell.replace(',', "").parse::<f64>().unwrap() as u64
    };
    let (narrow, wide) = (peak("48"), peak("57"));
    assert!(
        (1_310_720..=1_310_720 + 4096).contains(&(narrow - wide)),
        "{narrow} - {wide}"
    );
}

/// At the bound, jemalloc's cap on automatic arenas applies: 1,024 CPUs model 4,094 arenas
/// (4 x 1,024 = 4,096, reduced to the limit as jemalloc does), not 4,096.
#[test]
fn the_largest_cpu_count_models_jemallocs_arena_cap() {
    let t = committed_trace("c-thread-pool.trace");
    let out = run(&["replay", s(&t), "--process", "--cpus", "1024"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        text.contains("| automatic arenas (narenas) | 4,094 |"),
        "{text}"
    );
}

/// `fragsim` alone prints its usage (the commands), not only its tagline, and exits 2; so
/// does a command group without its subcommand.
#[test]
fn no_arguments_print_the_usage() {
    for args in [&[][..], &["trace"][..]] {
        let out = run(args);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("Usage: fragsim"), "{args:?}: {err}");
        assert!(err.contains("Commands:"), "{args:?}: {err}");
    }
}

/// `--charts /nonexistent/a/b` made folders at the filesystem root before; now only the last
/// component is ever created and a missing parent is refused, naming it.
#[test]
fn charts_into_a_missing_parent_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let trace = common::text_trace(dir.path());
    let target = dir.path().join("x").join("y").join("z");
    for args in [
        vec!["replay", s(&trace), "--charts", s(&target)],
        vec!["validate", "--no-replay", "--out", s(&target)],
    ] {
        let out = run(&args);
        assert_refused(&out, "its parent folder");
        assert!(!dir.path().join("x").exists(), "{args:?}");
    }
}

/// The conversion's thread knobs take what they say, or nothing runs: before, a value that was
/// not a number (`FRAGSIM_ID_THREAD=yes`) was ignored without a word, so a measurement "with
/// the id thread" ran without it. Refused before the program starts: its marker file is never
/// made, and no trace is written.
#[test]
fn conversion_thread_knobs_out_of_range_are_refused_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (out, marker) = (dir.path().join("t.trace"), dir.path().join("ran"));
    for (name, value) in [
        ("FRAGSIM_ID_THREAD", "yes"),
        ("FRAGSIM_ID_THREAD", "2"),
        ("FRAGSIM_DECODERS", "17"),
        ("FRAGSIM_DECODERS", "-1"),
        ("FRAGSIM_ADDRESS_SHARDS", "17"),
        ("FRAGSIM_ADDRESS_SHARDS", "two"),
    ] {
        let got = common::run_env(
            &["record", "-o", s(&out), "--", "touch", s(&marker)],
            &[(name, value)],
        );
        assert_refused_naming(&got, &[name, &format!("'{value}'")]);
        assert!(!marker.exists(), "{name}={value}: the program ran");
        assert!(!out.exists(), "{name}={value}: a trace was written");
    }
    let got = common::run_env(
        &["record", "-o", s(&out), "--", "touch", s(&marker)],
        &[
            ("FRAGSIM_ID_THREAD", "1"),
            ("FRAGSIM_DECODERS", "16"),
            ("FRAGSIM_ADDRESS_SHARDS", "16"),
        ],
    );
    assert!(got.status.success(), "{}", stderr_of(&got));
    assert!(marker.exists() && out.exists());
}
