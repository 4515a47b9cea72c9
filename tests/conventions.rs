//! Issue 18, section 5: output conventions. `-` is standard output for every output option, a
//! timeline never shares standard output with the summary, a closed pipe exits 141, options
//! that do not apply are refused, JSON has one shape, a typo is not pointed to an internal
//! command, the seed script is found at run time; and section 4: long live replays.

mod common;

use common::*;
use std::io::Read;
use std::process::{Command, Stdio};

/// A committed trace with 3.6 M events: its dump and timeline are far larger than a pipe.
const BIG_TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/traces/python-dict.trace");

/// Item 5.2: `-` writes standard output (before: a file named `-`).
#[test]
fn dash_means_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let trace = binary_trace(dir.path());
    let cases: &[(&[&str], &str)] = &[
        (&["classes", "--format", "csv", "--out", "-"], "index,size,"),
        (
            &[
                "container",
                "vec",
                "--key",
                "8",
                "--count",
                "10",
                "--trace-text",
                "-",
                "--out",
                "OUT",
            ],
            "a 0 32 8\n",
        ),
        (
            &["replay", "TRACE", "--timeline", "-", "--out", "OUT"],
            "build,event,",
        ),
    ];
    let out_file = dir.path().join("summary.md");
    for (args, expected) in cases {
        let args: Vec<&str> = args
            .iter()
            .map(|a| match *a {
                "TRACE" => s(&trace),
                "OUT" => s(&out_file),
                other => other,
            })
            .collect();
        let out = fragsim()
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        assert!(
            stdout_of(&out).starts_with(expected),
            "{args:?}: {}",
            stdout_of(&out)
        );
        assert!(
            !dir.path().join("-").exists(),
            "{args:?} wrote a file named -"
        );
    }
}

/// Item 5.2: a timeline on the summary's stream is refused before any work (before: the
/// summary was lost in the CSV without an error).
#[test]
fn a_timeline_on_the_summarys_stream_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace = binary_trace(dir.path());
    for timeline in ["-", "/dev/stdout"] {
        let out = run(&["replay", s(&trace), "--timeline", timeline]);
        assert_refused(&out, "standard output");
        assert!(out.stdout.is_empty());
    }
}

/// Item 5.3: a closed pipe ends `trace dump` and a timeline on `/dev/stdout` with 141 and no
/// message (before: 0, and sometimes 2 with "Broken pipe").
#[test]
fn a_closed_pipe_exits_141() {
    let cases: &[&[&str]] = &[
        &["trace", "dump", BIG_TRACE],
        &[
            "replay",
            BIG_TRACE,
            "--every",
            "1",
            "--timeline",
            "/dev/stdout",
            "--out",
            "/dev/null",
        ],
    ];
    for args in cases {
        let mut child = fragsim()
            .args(*args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The reading end is closed here, as `| head -c 16` does.
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(141),
            "{args:?}: {}",
            stderr_of(&out)
        );
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr_of(&out));
    }
}

/// Item 5.4: options that do not apply are refused (before: `--top` without `--by-class` was
/// ignored, and `--live --timeline F` wrote nothing).
#[test]
fn options_that_do_not_apply_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace = binary_trace(dir.path());
    let t = s(&trace);
    assert_refused(&run(&["replay", t, "--top", "3"]), "--top");
    let timeline = dir.path().join("t.csv");
    assert_refused(
        &run(&["replay", t, "--live", "--timeline", s(&timeline)]),
        "--timeline",
    );
    assert!(!timeline.exists());
}

/// Item 5.4: a negative count is a clear one-line error naming the value (before: clap's tip
/// to write `-- -1`).
#[test]
fn negative_counts_get_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let trace = binary_trace(dir.path());
    let t = s(&trace);
    let cases: &[&[&str]] = &[
        &["container", "vec", "--key", "8", "--count", "-1"],
        &["containers", "--key", "8", "--count", "-1"],
        &["replay", t, "--every", "-1"],
        &["replay", t, "--by-class", "--top", "-1"],
    ];
    for args in cases {
        let out = run(args);
        assert_refused(&out, "invalid value '-1'");
        assert!(
            !stderr_of(&out).contains("tip:"),
            "{args:?}: {}",
            stderr_of(&out)
        );
    }
}

/// Item 5.1: the single-build replay summary is one row of named fields in JSON (before:
/// `{"statistic": "peak active bytes", "value": ...}` rows), in the table shape of every
/// command. Golden values of the hand-written trace by hand: 5 events; its largest moment is
/// 40 + 100 requested bytes live (after the realloc), the last event frees everything.
#[test]
fn a_single_build_summary_is_named_fields_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let trace = binary_trace(dir.path());
    let json = run_json(&["replay", s(&trace), "--format", "json"]);
    assert!(
        json["title"].is_string() && json["columns"].is_array(),
        "{json}"
    );
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{json}");
    let row = &rows[0];
    assert_eq!(row["build"], "5.3.1", "{json}");
    assert_eq!(row["events"], 5, "{json}");
    assert_eq!(row["peak_requested_bytes"], 140, "{json}");
    assert_eq!(row["final_live_objects"], 0, "{json}");
    assert!(row["peak_active_bytes"].is_u64(), "{json}");
    assert!(row.get("statistic").is_none(), "{json}");
}

/// Item 5.1: `replay --process`'s summary is named fields too (before: `{statistic, value}`
/// rows). The small trace requests 140 bytes at its peak and frees everything (its text form).
#[test]
fn a_process_summary_is_named_fields_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let trace = binary_trace(dir.path());
    let json = run_json(&["replay", s(&trace), "--process", "--format", "json"]);
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{json}");
    let row = &rows[0];
    assert_eq!(row["events"], 5, "{json}");
    assert_eq!(row["threads"], 1, "{json}");
    assert_eq!(row["peak_requested_bytes"], 140, "{json}");
    assert!(row["peak_active_bytes"].is_u64(), "{json}");
    assert!(row["mean_resident_bytes"].is_number(), "{json}");
    assert!(row.get("statistic").is_none(), "{json}");
}

/// Item 5.1: `bump-arena` takes `--format` as every command does (before: only `--json`,
/// another shape), and JSON is `{title, columns, rows}`.
#[test]
fn bump_arena_takes_format() {
    let args = ["bump-arena", "--vectors", "1000", "--runs", "1", "--format"];
    let json = run_json(&[&args[..], &["json"]].concat());
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{json}");
    for row in rows {
        assert_eq!(row["predicted_usable"], row["measured_usable"], "{json}");
    }
    let csv = run_ok(&[&args[..], &["csv"]].concat());
    assert!(csv.starts_with("strategy,ideal_bytes,"), "{csv}");
}

/// Item 5.1: `validate --format json` prints every check in the one table shape (before:
/// refused, an unknown option).
#[test]
fn validate_takes_format_json() {
    let json = run_json(&["validate", "--no-replay", "--format", "json"]);
    assert!(
        json["title"].as_str().unwrap().contains("0 mismatches"),
        "{json}"
    );
    let rows = json["rows"].as_array().unwrap();
    assert!(rows.len() > 100, "{}", rows.len());
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{json}");
}

/// Item 5.4: `containers --count` above every container's limit is refused as `container`'s
/// is, before any growth (before: a billion-element growth started).
#[test]
fn containers_count_is_refused_like_containers() {
    let limit = run(&["container", "vec", "--key", "8", "--count", "1000000000"]);
    assert_refused_naming(&limit, &["--count 1000000000", "must be between 1 and"]);
    for count in ["1000000000", "0"] {
        let out = run(&["containers", "--key", "8", "--count", count]);
        assert_refused_naming(
            &out,
            &[
                &format!("--count {count}"),
                "must be between 1 and 100000000",
            ],
        );
    }
}

/// Item 5.5: a missing seed script is a one-line error before any work, and the default is
/// found at run time (before: a path baked in at build time, failing after 30 s): a copy of
/// the binary outside any clone, run outside one, stops at once naming the script.
#[test]
fn a_missing_seed_script_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let given = run(&[
        "report",
        "--out",
        s(&out_dir),
        "--seed-script",
        "/no/such.sh",
    ]);
    assert_refused(&given, "/no/such.sh");
    assert!(!out_dir.exists());
    let exe = dir.path().join("fragsim");
    std::fs::copy(env!("CARGO_BIN_EXE_fragsim"), &exe).unwrap();
    let moved = Command::new(&exe)
        .args(["report", "--out", s(&out_dir)])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_refused_naming(&moved, &["scripts/seed-pmr.sh", "--no-cxx"]);
    assert!(!out_dir.exists());
    // The committed traces are found at run time as well (before: a path baked in at build
    // time, so a moved binary replayed whatever was there, or nothing).
    let no_traces = Command::new(&exe)
        .args(["report", "--no-cxx", "--out", s(&out_dir)])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_refused_naming(&no_traces, &["data/traces"]);
    assert!(!out_dir.exists());
}

/// Item 5.5: a misspelt subcommand is never pointed to an internal child command (before:
/// "similar subcommands exist: 'arena', '__replay-live-child', 'replay'").
#[test]
fn a_misspelt_subcommand_is_not_pointed_to_hidden_commands() {
    for typo in ["replya", "__replay-live-chld", "__measure-chil"] {
        let out = run(&[typo]);
        assert_refused(&out, &format!("unrecognized subcommand '{typo}'"));
        let stderr = stderr_of(&out);
        let tip = stderr.split_once("; ").map_or("", |(_, tip)| tip);
        assert!(!tip.contains("'__"), "{typo}: {stderr}");
    }
    assert!(stderr_of(&run(&["replya"])).contains("'replay'"));
}

/// A committed trace of 202,993 events (`trace stats`), longer than the live default's
/// 10,000 comparisons.
const LIVE_TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/traces/python-dict.trace");

/// Item 4: a long live replay is compared at spaced events by default (before: every event,
/// minutes for millions of events); `--every 1` stays. By hand: ceil(202,993 / 10,000) = 21,
/// so 9,666 multiples of 21 plus the last event (202,993 = 21 x 9,666 + 7).
#[test]
fn a_long_live_replay_is_compared_at_spaced_events_by_default() {
    let json = run_json(&["replay", LIVE_TRACE, "--live", "--format", "json"]);
    assert!(
        json["title"].as_str().unwrap().contains("every 21 events"),
        "{json}"
    );
    let row = &json["rows"][0];
    assert_eq!(row["events"], 202_993, "{json}");
    assert_eq!(row["snapshots_compared"], 9_667, "{json}");
    assert_eq!(row["values_mismatched"], 0, "{json}");
    let help = run_ok(&["replay", "--help"]);
    assert!(help.contains("--every 1"), "{help}");
}

/// Item 4: on a terminal a live replay longer than a second shows its progress (before:
/// nothing for minutes); off a terminal no bar is drawn, but a run longer than a few seconds
/// prints a plain line every few seconds (issue 36 §3: a log is never silent for minutes).
#[test]
fn a_long_live_replay_shows_progress_on_a_terminal() {
    let args = [
        "replay",
        LIVE_TRACE,
        "--live",
        "--every",
        "10",
        "--out",
        "/dev/null",
    ];
    let Some(terminal) = run_on_terminal(&args) else {
        return;
    };
    assert!(terminal.contains("live replay"), "{terminal}");
    assert!(terminal.contains("202,993 events"), "{terminal}");
    // Off a terminal: nothing within the line interval (here longer than any run)...
    let plain = run_env(&args, &[("FRAGSIM_PROGRESS_LINE_MS", "600000")]);
    assert!(plain.status.success());
    assert!(plain.stderr.is_empty(), "{}", stderr_of(&plain));
    // ...and plain lines, no bar, once it has passed (here at once).
    let lines = run_env(
        &args,
        &[
            ("FRAGSIM_PROGRESS_AFTER_MS", "0"),
            ("FRAGSIM_PROGRESS_LINE_MS", "0"),
        ],
    );
    assert!(lines.status.success());
    let err = stderr_of(&lines);
    assert!(
        err.lines()
            .all(|l| l.starts_with("live replay: ") && l.contains(" of 202,993 events (")),
        "{err}"
    );
    assert!(!err.is_empty() && !err.contains('\x1b'), "{err}");
    // The process model's baton replay too: 62,422 calls (`trace stats`; 4 thread exits).
    let threaded = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/traces/cpp-threads-map.trace"
    );
    let process = [
        "replay",
        threaded,
        "--process",
        "--live",
        "--out",
        "/dev/null",
    ];
    let terminal = run_on_terminal(&process).unwrap();
    assert!(terminal.contains("62,422/62,422 events"), "{terminal}");
}
