//! `fragsim replay` end to end: summary, timeline, --live, bad input.

use std::process::Command;

fn fragsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn text_trace(dir: &tempfile::TempDir) -> String {
    // 3000 events: small and large objects, reallocs both ways, frees in mixed order.
    let mut lines = String::new();
    for i in 0..1000u64 {
        lines.push_str(&format!("a {i} {}\n", 1 + (i * 7919) % 40_000));
    }
    for i in (0..1000u64).step_by(2) {
        lines.push_str(&format!("r {i} {}\n", 1 + (i * 104_729) % 300_000));
    }
    for i in (0..1000u64).rev().step_by(3) {
        lines.push_str(&format!("f {i}\n"));
    }
    let path = dir.path().join("mixed.txt");
    std::fs::write(&path, lines).unwrap();
    path.to_string_lossy().into()
}

#[test]
fn summary_and_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let trace = text_trace(&dir);
    let timeline = dir.path().join("t.csv");
    let (code, out, err) = fragsim(&[
        "replay",
        &trace,
        "--every",
        "100",
        "--timeline",
        timeline.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("peak_active_bytes"), "{out}");
    assert!(out.contains("external_fragmentation"), "{out}");
    let csv = std::fs::read_to_string(&timeline).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("build,event,live_objects,requested_bytes,allocated_bytes,active_bytes"));
    let rows: Vec<&str> = lines.collect();
    // 1834 events: rows at 100, 200, ..., 1800 and after the last.
    assert_eq!(rows.len(), 19);
    assert!(rows.last().unwrap().starts_with("5.3.1,1834,"));
}

#[test]
fn live_replay_matches_with_both_large_class_settings() {
    let dir = tempfile::tempdir().unwrap();
    let trace = text_trace(&dir);
    for setting in ["true", "false"] {
        let (code, out, err) = fragsim(&[
            "replay",
            &trace,
            "--live",
            "--disable-large-size-classes",
            setting,
            "--format",
            "csv",
        ]);
        assert_eq!(code, 0, "{out}{err}");
        // Named fields, one CSV row: events, snapshots_compared, values_compared, ...
        let mut lines = out.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        let field = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(field("snapshots_compared"), "1834", "{out}");
        assert_eq!(field("values_mismatched"), "0", "{out}");
    }
}

#[test]
fn bad_input_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "a 0 10\nf 1\n").unwrap();
    let (code, _, err) = fragsim(&["replay", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("line 2"), "{err}");
    let trace = text_trace(&dir);
    let (code, _, err) = fragsim(&["replay", &trace, "--every", "0"]);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
    let (code, _, err) = fragsim(&["replay", &trace, "--live", "--preset", "page64k"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("build flags"), "{err}");
    let (code, _, err) = fragsim(&["replay", "/nonexistent/trace"]);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
}

#[test]
fn a_flag_given_to_a_mode_it_does_not_apply_to_is_refused_naming_both() {
    // `replay`'s one table of which flags combine with which mode (cli/replay.rs
    // `mode_flags`): each refusal is one line, exit 2, naming the flag and the mode, before
    // any work.
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/data/traces/git-log.trace");
    for (args, flag, mode) in [
        (&["--blame", "--every", "5"][..], "--every", "--blame"),
        (&["--blame", "--live"], "--live", "--blame"),
        (
            &["--process", "--measure", "glibc"],
            "--measure",
            "--process",
        ),
        (
            &["--measure", "glibc", "--by-class"],
            "--by-class",
            "--measure",
        ),
        (
            &["--malloc-conf", "narenas:2"],
            "--malloc-conf",
            "a one-arena replay",
        ),
        (&["--cpus", "2", "--live"], "--cpus", "--live"),
        (&["--by-class", "--live"], "--live", "a what-if replay"),
        (&["--live", "--timeline", "t.csv"], "--timeline", "--live"),
    ] {
        let mut all = vec!["replay", trace];
        all.extend_from_slice(args);
        let (code, stdout, stderr) = fragsim(&all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{flag} does not apply to {mode}")),
            "{args:?}: {stderr}"
        );
    }
    // Two modes at once: the blame runs the process model itself.
    let (code, _, stderr) = fragsim(&["replay", trace, "--blame", "--process"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--blame runs the process model itself"),
        "{stderr}"
    );
    // A flag in its own modes is taken (the refusal is not blanket).
    let (code, _, stderr) = fragsim(&["replay", trace, "--process", "--cpus", "2"]);
    assert_eq!(code, 0, "{stderr}");
}
