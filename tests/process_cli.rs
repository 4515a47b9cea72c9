//! `fragsim replay --process`: options, the text form with threads, the per-arena CSV, and
//! the live check from the command line.

use fragsim::process::{
    records_from_text, threaded_trace, to_text, OptionError, ProcessOptions, ThreadedSpec,
};
use std::process::Command;

fn fragsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
}

#[test]
fn options_parse_and_name_what_is_wrong() {
    let o = ProcessOptions::parse("tcache:false, narenas:3,tcache_max:4096").unwrap();
    assert!(!o.tcache);
    assert_eq!(o.narenas, Some(3));
    assert_eq!(o.tcache_max, 4096);
    assert_eq!(
        ProcessOptions::parse("bogus:1"),
        Err(OptionError::Unknown("bogus".into()))
    );
    let e = ProcessOptions::parse("dirty_decay_ms:-2").unwrap_err();
    assert!(e.to_string().contains("dirty_decay_ms"), "{e}");
    let e = ProcessOptions::parse("lg_tcache_nslots_mul:17").unwrap_err();
    assert!(e.to_string().contains("lg_tcache_nslots_mul"), "{e}");
    assert!(ProcessOptions::parse("tcache").is_err());
    // jemalloc's default narenas: 4 x CPUs, 1 on one CPU (malloc_narenas_default).
    let d = ProcessOptions::default();
    assert_eq!((d.narenas_for(2), d.narenas_for(1)), (8, 1));
}

#[test]
fn text_form_round_trips_threads_and_exits() {
    let records = threaded_trace(&ThreadedSpec {
        events: 2_000,
        threads: 4,
        ..ThreadedSpec::default()
    });
    let text = to_text(&records);
    assert!(text.contains("\nt 3\n") && text.contains("\nx\n"));
    assert_eq!(records_from_text(&text).unwrap(), records);
    assert!(records_from_text("t 1\nq 3\n")
        .unwrap_err()
        .to_string()
        .contains("line 2"));
}

#[test]
fn unknown_option_is_a_one_line_error_with_exit_2() {
    let out = fragsim()
        .args([
            "replay",
            "data/traces/sort.trace",
            "--process",
            "--malloc-conf",
            "bogus:1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'bogus'") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn per_arena_csv_has_the_contract_columns_and_every_arena_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("threads.txt");
    let records = threaded_trace(&ThreadedSpec {
        seed: 5,
        events: 3_000,
        threads: 3,
        ..ThreadedSpec::default()
    });
    std::fs::write(&trace, to_text(&records)).unwrap();
    let csv = dir.path().join("arenas.csv");
    let out = fragsim()
        .args(["replay"])
        .arg(&trace)
        .args(["--process", "--cpus", "2", "--every", "1000", "--per-arena"])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("3 threads"), "{stdout}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("event,arena,allocated_bytes,active_bytes,tcache_bytes")
    );
    let rows: Vec<Vec<u64>> = lines
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    // Three threads on 8 arenas (2 CPUs): arenas 0, 1, 2 at the last row (records + exits),
    // and the huge arena (index narenas = 8) since the trace asks for 8 MiB or more.
    let huge = records.iter().any(|r| {
        matches!(r, fragsim::trace::Record::Call(c)
            if matches!(c.event, fragsim::trace::Event::Alloc { size, .. } if size >= 8 << 20))
    });
    assert!(huge);
    let last = rows.last().unwrap()[0];
    assert_eq!(last, records.len() as u64);
    let at_last: Vec<u64> = rows.iter().filter(|r| r[0] == last).map(|r| r[1]).collect();
    assert_eq!(at_last, vec![0, 1, 2, 8]);
    assert!(rows.iter().any(|r| r[0] == 1000));
}

#[test]
fn live_check_from_the_command_line_passes_on_a_threaded_text_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("threads.txt");
    let records = threaded_trace(&ThreadedSpec {
        seed: 9,
        events: 2_000,
        threads: 10,
        ..ThreadedSpec::default()
    });
    std::fs::write(&trace, to_text(&records)).unwrap();
    let out = fragsim()
        .args(["replay"])
        .arg(&trace)
        .args(["--process", "--live", "--malloc-conf", "narenas:4"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("| values mismatched | 0 |"), "{stdout}");
}

/// The child runs the cache GC the user names: 5.3.1's clock-driven one (its own default) when
/// asked for, the deterministic one otherwise; the event-by-event check refuses the clock-driven
/// one (it cannot be exact) instead of silently running the other.
#[test]
fn the_clock_driven_cache_gc_reaches_the_child_and_the_exact_check_refuses_it() {
    use fragsim::sizeclass::JemallocVersion;
    let conf = |s: &str| {
        ProcessOptions::parse(s)
            .unwrap()
            .to_conf(JemallocVersion::V5_3_1)
    };
    assert!(
        conf("").contains("experimental_tcache_gc:false"),
        "{}",
        conf("")
    );
    assert!(conf("experimental_tcache_gc:true").contains("experimental_tcache_gc:true"));
    let out = fragsim()
        .args([
            "replay",
            "data/traces/cpp-threads-map.trace",
            "--process",
            "--live",
            "--malloc-conf",
            "experimental_tcache_gc:true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("experimental_tcache_gc:true") && err.contains("--honour-clock"),
        "{err}"
    );
}
