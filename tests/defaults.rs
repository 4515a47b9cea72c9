//! Issue 18, section 2: the build a command models does not depend on view flags. One default
//! for every command (the linked jemalloc, 5.3.1), one name of a build everywhere, one
//! timeline schema whatever the flags.

mod common;

use common::*;

/// Item 2.1: `classes`, `layout`, `containers` and `container` model what `--preset 5.3.1`
/// models (before: 5.3.0), and `replay` with `--by-class` or `--charts` the same build as
/// without (before: 5.3.0 labelled "default").
#[test]
fn every_command_defaults_to_the_linked_build() {
    let commands: &[&[&str]] = &[
        // Markdown: the title names the build (the class table itself is the same).
        &["classes", "--format", "md"],
        &[
            "layout",
            "--array",
            "keys:8x5000",
            "--array",
            "vals:24x5000",
            "--format",
            "csv",
        ],
        &[
            "containers",
            "--key",
            "8",
            "--value",
            "24",
            "--count",
            "3000",
            "--format",
            "csv",
        ],
        &[
            "container",
            "hashmap",
            "--key",
            "8",
            "--value",
            "24",
            "--count",
            "3000",
            "--format",
            "csv",
        ],
    ];
    for args in commands {
        let default = run(args);
        assert!(
            default.status.success(),
            "{args:?}: {}",
            stderr_of(&default)
        );
        let mut explicit: Vec<&str> = args.to_vec();
        explicit.extend(["--preset", "5.3.1"]);
        let linked = run(&explicit);
        assert_eq!(stdout_of(&default), stdout_of(&linked), "{args:?}");
        // And not 5.3.0's: page rounding of large requests (or the title) shows in each.
        explicit.truncate(args.len());
        explicit.extend(["--preset", "default"]);
        assert_ne!(stdout_of(&default), stdout_of(&run(&explicit)), "{args:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = large_trace(dir.path());
    let t = s(&trace);
    let peak = |args: &[&str], column: &str| -> String {
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = json["rows"].as_array().unwrap();
        let row = rows
            .iter()
            .find(|r| r.get("statistic").is_none_or(|s| s == column))
            .unwrap();
        row.get("value").unwrap_or_else(|| &row[column]).to_string()
    };
    let plain = peak(&["replay", t, "--format", "json"], "peak_active_bytes");
    let charts = dir.path().join("charts");
    let with_charts = peak(
        &["replay", t, "--charts", s(&charts), "--format", "json"],
        "peak_active_bytes",
    );
    let linked = peak(
        &["replay", t, "--preset", "5.3.1", "--format", "json"],
        "peak_active_bytes",
    );
    assert_eq!(plain, with_charts);
    assert_eq!(plain, linked);
}

/// A trace whose peak differs between 5.3.0 and 5.3.1: large requests (20 KiB: a 20 KiB
/// class under 5.3.0 and 5 pages under 5.3.1, the same) and 33 KiB (a 40 KiB class under
/// 5.3.0, 9 pages = 36 KiB under 5.3.1, from jemalloc's size-class table by hand).
fn large_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("large.txt");
    let mut text = String::new();
    for id in 0..20 {
        text.push_str(&format!("a {id} {}\n", 33 * 1024 + id));
    }
    for id in 0..20 {
        text.push_str(&format!("f {id}\n"));
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// Item 2.2: a build has one name. Without `--preset` the what-if build column says `5.3.1`
/// (before: "default", a 5.3.0 build), and `--live --preset default` names the 5.3.0 preset
/// by its one name, `5.3.0` (before: `q16-p4096-v5.3.1`, then `default`; issue 38 §2).
#[test]
fn a_build_has_one_name_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let trace = large_trace(dir.path());
    let t = s(&trace);
    let out = run(&["replay", t, "--by-class", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        stdout_of(&out).contains("build 5.3.1"),
        "{}",
        stdout_of(&out)
    );
    let out = run(&["replay", t, "--format", "md"]);
    assert!(
        stdout_of(&out).contains("on the model of jemalloc 5.3.1"),
        "{}",
        stdout_of(&out)
    );
    let out = run(&["replay", t, "--live", "--preset", "default"]);
    assert_refused(&out, "jemalloc 5.3.0");
    assert!(!stderr_of(&out).contains("default"), "{}", stderr_of(&out));
    assert!(
        !stderr_of(&out).contains("q16-p4096-v5.3.1"),
        "{}",
        stderr_of(&out)
    );
}

/// Item 2.3: the timeline CSV has the same columns, and for the same build the same rows,
/// with or without `--charts`, `--by-class` or a one-build `--preset` list (before: eight
/// columns without a build, six with one).
#[test]
fn the_timeline_has_one_schema_whatever_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let trace = large_trace(dir.path());
    let t = s(&trace);
    let mut seen: Vec<String> = Vec::new();
    let variants: &[&[&str]] = &[
        &[],
        &["--by-class"],
        &["--charts", "CHARTS"],
        &["--preset", "5.3.1,quantum8"],
    ];
    for (i, extra) in variants.iter().enumerate() {
        let timeline = dir.path().join(format!("t{i}.csv"));
        let charts = dir.path().join(format!("charts{i}"));
        let mut args = vec!["replay", t, "--every", "5", "--timeline", s(&timeline)];
        for a in *extra {
            args.push(if *a == "CHARTS" { s(&charts) } else { a });
        }
        let out = fragsim().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        let csv = std::fs::read_to_string(&timeline).unwrap();
        // The 5.3.1 rows (the quantum8 rows follow them in the last variant).
        let rows: Vec<String> = csv
            .lines()
            .filter(|l| !l.starts_with("quantum8,"))
            .map(String::from)
            .collect();
        assert_eq!(
            rows[0],
            "build,event,live_objects,requested_bytes,allocated_bytes,active_bytes,mapped_bytes,slabs_created,slabs_released"
        );
        seen.push(rows.join("\n"));
    }
    for other in &seen[1..] {
        assert_eq!(&seen[0], other);
    }
}
