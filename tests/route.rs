//! Issue 36 §1: the routing what-if. A C program with known sites
//! (tests/native_programs/blame_sites.c: `keep_one` keeps one 48-byte object per 256 made,
//! the rest from `scratch_one` freed; `over_ask` keeps 8 objects of 4097 bytes) recorded with
//! `--stacks`, then `replay --process --route`: routing `keep_one` to a manual arena without
//! the cache leaves its 8 objects in one 12 KiB slab there instead of pinning 8 slabs of the
//! worker's arena (final active -7 x 12,288 = -86,016 bytes, hand-derived from the classes:
//! 48 bytes, 12 KiB slabs of 256 regions); routing `over_ask` as well changes nothing at the
//! end (its 8 objects of class 5120 fill two 20 KiB slabs either way). The routed trace
//! replays live with the same flags, every statistic equal at every event under the linked
//! 5.3.1 and Debian's 5.3.0.

mod common;

use common::{assert_refused, fragsim, s, stderr_of, stdout_of};
use std::path::{Path, PathBuf};
use std::process::Command;

const DEBIAN_530: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

/// The program recorded with `--stacks`, or `None` (skipped, saying so) without cc or
/// libunwind.
fn recorded(dir: &Path) -> Option<PathBuf> {
    let unwind = Path::new("/usr/lib/x86_64-linux-gnu/libunwind.so.8").exists();
    if !unwind || Command::new("cc").arg("--version").output().is_err() {
        eprintln!("SKIPPED: needs cc and libunwind8 (apt-get install build-essential libunwind8)");
        return None;
    }
    common::build_preload();
    let exe = dir.join("blame_sites");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native_programs/blame_sites.c");
    let cc = Command::new("cc")
        .args(["-O0", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", stderr_of(&cc));
    let trace = dir.join("sites.trace");
    let out = fragsim()
        .args(["record", "--stacks", "-o", s(&trace), "--", s(&exe)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    Some(trace)
}

#[test]
fn routing_the_long_lived_site_frees_the_slabs_it_pinned_and_replays_live() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = recorded(dir.path()) else {
        return;
    };
    let out = fragsim()
        .args([
            "replay",
            s(&trace),
            "--process",
            "--preset",
            "5.3.1",
            "--cpus",
            "2",
        ])
        .args(["--route", "site:keep_one;size:4097-", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let csv = stdout_of(&out);
    let rows: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    // The baseline, two rule sets, then the lifetime reference (every object in the arena
    // of how long it lives: keep_one's and over_ask's never freed, apart from the rest).
    assert_eq!(rows.len(), 4, "{csv}");
    assert!(
        rows[3][col("rule_added")].starts_with("(reference"),
        "{csv}"
    );
    let final_active: Vec<i64> = rows
        .iter()
        .map(|r| r[col("final_active_bytes")].parse().unwrap())
        .collect();
    assert_eq!(final_active[0] - final_active[1], 7 * 12_288, "{csv}");
    assert_eq!(final_active[1], final_active[2], "{csv}");
    assert!(final_active[3] <= final_active[1], "{csv}");
    assert!(
        rows[3][col("objects_routed")].parse::<u64>().unwrap() > 2000,
        "every allocation has a lifetime class: {csv}"
    );
    let routed: Vec<&str> = rows
        .iter()
        .map(|r| r[col("objects_routed")].as_str())
        .collect();
    assert_eq!(routed[..3], ["0", "8", "8"]);

    for lib in [None, Some(DEBIAN_530)] {
        if lib.is_some_and(|l| !Path::new(l).exists()) {
            continue;
        }
        let mut cmd = fragsim();
        cmd.args(["replay", s(&trace), "--process", "--cpus", "2", "--live"])
            .args(["--route", "site:keep_one;size:4097-", "--every", "1"]);
        if let Some(l) = lib {
            cmd.args(["--system-jemalloc", l]);
        }
        let out = cmd.output().unwrap();
        let text = stdout_of(&out);
        assert!(out.status.success(), "{lib:?}: {text}{}", stderr_of(&out));
        assert!(
            text.contains("| values mismatched | 0 |"),
            "{lib:?}: {text}"
        );
    }

    // advise --routes: the greedy search picks keep_one first (the only site whose routing
    // lowers the peak) and proves the chosen set live.
    let out = fragsim()
        .args([
            "advise",
            s(&trace),
            "--routes",
            "3",
            "--cpus",
            "2",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert!(out.status.success(), "{text}{}", stderr_of(&out));
    let first = text.lines().nth(2).unwrap_or_default();
    assert!(
        first.starts_with("1,site:#") && first.contains("keep_one"),
        "{text}"
    );
    assert!(text.contains(" 0 mismatched"), "{text}");
}

#[test]
fn bad_rules_exit_2_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let trace = common::text_trace(dir.path());
    for (rule, names) in [
        ("colour:red", "'colour:red'"),
        ("size:9-3", "'size:9-3'"),
        ("site:a;;thread:1", "empty rule"),
    ] {
        let out = fragsim()
            .args(["replay", s(&trace), "--process", "--route", rule])
            .output()
            .unwrap();
        assert_refused(&out, names);
    }
}
