//! `replay --preset a,b --live`: each build against the live jemalloc that runs it (the linked
//! 5.3.1 in process, Debian's 5.3.0 preloaded in a child), or refused up front with the reason.

use std::process::Command;

fn fragsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(args)
        .output()
        .unwrap()
}

const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/traces/sort.trace");

#[test]
fn each_build_is_compared_with_its_own_live_jemalloc() {
    let debian = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    if !debian.exists() {
        eprintln!("skipped: Debian's libjemalloc2 (5.3.0) is not installed");
        return;
    }
    let out = fragsim(&[
        "replay",
        TRACE,
        "--preset",
        "default,5.3.1",
        "--live",
        "--format",
        "csv",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    // 686 events compared one by one against each live allocator, nothing differing.
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows[0].starts_with("5.3.0,jemalloc 5.3.0,686,686,"),
        "{stdout}"
    );
    assert!(
        rows[1].starts_with("5.3.1,jemalloc 5.3.1,686,686,"),
        "{stdout}"
    );
    assert!(rows.iter().all(|r| r.ends_with(",0")), "{stdout}");
}

#[test]
fn a_build_no_live_jemalloc_runs_is_refused_before_any_work() {
    let out = fragsim(&["replay", TRACE, "--preset", "5.3.1,page64k", "--live"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("page64k") && stderr.contains("no live jemalloc"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}
