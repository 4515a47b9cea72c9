//! `fragsim record --stacks`: the recorder's own unwinder (unwind rules from `.eh_frame`,
//! cached by return address) against libunwind's `unw_backtrace`. With
//! `FRAGSIM_STACKS_CHECK=1` the recorder takes every stack both ways and aborts on the first
//! that differs; these programs, built several ways, must run to the end.

mod common;

use std::path::Path;
use std::process::Command;

fn programs() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/native_programs"
    ))
}

/// Records `source` built with `cflags` under the check; the stacks the rules took and those
/// libunwind alone took.
fn checked_record(dir: &Path, source: &str, cflags: &[&str], args: &[&str]) -> (u64, u64) {
    let exe = dir.join(format!("{}{}", source.replace('.', "_"), cflags.join("")));
    let compiler = if source.ends_with(".cpp") {
        "g++"
    } else {
        "cc"
    };
    let built = Command::new(compiler)
        .args(cflags)
        .arg("-pthread")
        .arg("-o")
        .arg(&exe)
        .arg(programs().join(source))
        .status()
        .unwrap();
    assert!(built.success(), "compiling {source}");
    let trace = dir.join("t.trace");
    let out = common::fragsim()
        .env("FRAGSIM_STACKS_CHECK", "1")
        .args(["record", "--stacks", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("stacks differ"),
        "{source} {cflags:?}: {stderr}"
    );
    // The check passes trivially if every stack went to libunwind: the rules must have
    // taken some (the programs' own frames all have plain unwind rules).
    // "fragsim-preload: stacks checked: N by the rules, M by libunwind alone"
    let counts: Vec<u64> = stderr
        .lines()
        .find_map(|l| l.strip_prefix("fragsim-preload: stacks checked: "))
        .map(|rest| rest.split(' ').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_default();
    let [by_rules, by_libunwind] = counts[..] else {
        panic!("{source} {cflags:?}: no check summary in {stderr}");
    };
    assert!(by_rules > 0, "{source} {cflags:?}: {stderr}");
    (by_rules, by_libunwind)
}

#[test]
fn the_rules_give_libunwinds_stacks() {
    if !Path::new("/usr/lib/x86_64-linux-gnu/libunwind.so.8").exists() {
        eprintln!("SKIPPED: libunwind8 is not installed (apt-get install libunwind8)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for cflags in [
        &["-O2"][..],
        &["-O0"],
        &["-O2", "-fno-omit-frame-pointer"],
        &["-O1", "-fomit-frame-pointer"],
    ] {
        // The three allocations in a signal handler: a signal frame, libunwind's to take.
        let (_, by_libunwind) = checked_record(dir.path(), "unwind_shapes.c", cflags, &[]);
        assert!(by_libunwind >= 3, "{cflags:?}: {by_libunwind}");
    }
    checked_record(dir.path(), "stacks.c", &["-O0", "-g"], &[]);
    checked_record(dir.path(), "threads_map.cpp", &["-O2"], &["5000"]);
    checked_record(dir.path(), "sequence.cpp", &["-O0", "-g"], &[]);
}
