//! `fragsim replay` with several builds: rows from a hand-built trace, the timeline and
//! charts, and bad input rejected in one line before any work.

mod whatif_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fragsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(args)
        .output()
        .expect("run fragsim")
}

fn stdout_of(args: &[&str]) -> String {
    let out = fragsim(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "no progress bar when stderr is a pipe"
    );
    String::from_utf8(out.stdout).unwrap()
}

fn assert_rejected(args: &[&str], names: &str) {
    let out = fragsim(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains(names),
        "{args:?} should name {names}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The hand trace of tests/whatif.rs as a trace file.
fn hand_trace_file(dir: &Path) -> PathBuf {
    let path = dir.join("hand.trace");
    fragsim::trace::write_trace(&path, whatif_support::hand_trace().into_iter().map(Ok)).unwrap();
    path
}

#[test]
fn replay_prints_one_row_per_build_with_the_hand_values() {
    let dir = tempfile::tempdir().unwrap();
    let trace = hand_trace_file(dir.path());
    let trace = trace.to_str().unwrap();
    let csv = stdout_of(&[
        "replay",
        trace,
        "--preset",
        "default,quantum8",
        "--format",
        "csv",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    // Hand values: see tests/whatif.rs.
    assert!(lines[1]
        .starts_with("5.3.0,323,24800,26880,49152,36864,0.3074,12.0723,0,1.0000,0.0180,0.9235,"));
    assert!(lines[2].starts_with(
        "quantum8,323,24800,25280,61440,40960,0.0042,20.2742,12288,1.2500,0.0002,0.9530,"
    ));

    let classes = stdout_of(&["replay", trace, "--by-class", "--format", "csv"]);
    let sizes: Vec<&str> = classes
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(sizes, ["112", "48", "32", "20480"]);
    let json = stdout_of(&[
        "replay",
        trace,
        "--preset",
        "default,5.3.1",
        "--format",
        "json",
    ]);
    assert!(json.contains("\"build\": \"5.3.1\""), "{json}");
}

#[test]
fn timeline_and_charts_are_written_and_repeatable() {
    let dir = tempfile::tempdir().unwrap();
    let trace = hand_trace_file(dir.path());
    let trace = trace.to_str().unwrap();
    let run = |tag: &str| -> Vec<Vec<u8>> {
        let timeline = dir.path().join(format!("timeline-{tag}.csv"));
        let charts = dir.path().join(format!("charts-{tag}"));
        stdout_of(&[
            "replay",
            trace,
            "--preset",
            "default,page64k",
            "--every",
            "100",
            "--timeline",
            timeline.to_str().unwrap(),
            "--charts",
            charts.to_str().unwrap(),
        ]);
        let mut files = vec![std::fs::read(&timeline).unwrap()];
        for chart in ["hand-timeline", "hand-whatif", "hand-class-loss"] {
            for ext in ["png", "svg"] {
                let bytes = std::fs::read(charts.join(format!("{chart}.{ext}"))).unwrap();
                assert!(bytes.len() > 1000, "{chart}.{ext} is nearly empty");
                files.push(bytes);
            }
        }
        files
    };
    let first = run("a");
    assert_eq!(first, run("b"));
    let timeline = String::from_utf8(first[0].clone()).unwrap();
    let lines: Vec<&str> = timeline.lines().collect();
    assert_eq!(
        lines[0],
        "build,event,live_objects,requested_bytes,allocated_bytes,active_bytes,mapped_bytes,slabs_created,slabs_released"
    );
    assert_eq!(lines.len(), 1 + 2 * 4);
    assert!(lines[1].starts_with("5.3.0,100,"));
    assert!(lines[8].starts_with("page64k,323,"));
}

#[test]
fn bad_input_is_one_line_exit_2_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let trace = hand_trace_file(dir.path());
    let trace = trace.to_str().unwrap();
    assert_rejected(
        &["replay", trace, "--preset", "default,quantum7"],
        "quantum7",
    );
    assert_rejected(&["replay", trace, "--preset", ""], "--preset");
    assert_rejected(
        &["replay", trace, "--preset", "default,default+big"],
        "default+big",
    );
    assert_rejected(
        &["replay", trace, "--preset", "default,,page16k"],
        "--preset",
    );
    assert_rejected(
        &["replay", trace, "--preset", "page16k,page16k"],
        "listed twice",
    );
    assert_rejected(
        &[
            "replay",
            trace,
            "--preset",
            "default,quantum8",
            "--by-class",
        ],
        "--by-class",
    );
    assert_rejected(&["replay", trace, "--every", "0"], "--every");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"z").unwrap();
    let under_file = file.join("charts");
    assert_rejected(
        &["replay", trace, "--charts", under_file.to_str().unwrap()],
        "a-file",
    );
    assert_rejected(&["replay", "/no/such.trace"], "/no/such.trace");
    assert_rejected(
        &[
            "replay",
            file.to_str().unwrap(),
            "--preset",
            "default,quantum8",
        ],
        "its first line starts with 'z'",
    );
    // Nothing was written for the rejected runs.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 2);
}
