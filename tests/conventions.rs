//! Issue 18, section 5: output conventions. `-` is standard output for every output option, a
//! timeline never shares standard output with the summary, a closed pipe exits 141, and
//! options that do not apply are refused.

mod common;

use common::*;
use std::io::Read;
use std::process::Stdio;

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
