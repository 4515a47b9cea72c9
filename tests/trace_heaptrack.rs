//! heaptrack import: a C program with a known call sequence recorded with `heaptrack -r`
//! (skipped with a message where heaptrack is absent; `.ci/run` installs it), and the
//! interpreted format refused.

use std::path::Path;
use std::process::Command;

fn fragsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(args)
        .output()
        .unwrap()
}

const PROGRAM: &str = r#"
#include <stdlib.h>
int main(void) {
    void *a = malloc(1001);
    void *b = calloc(3, 1002);
    a = realloc(a, 1003);
    free(b);
    void *c = aligned_alloc(64, 1004);
    free(c);
    free(a);
    return 0;
}
"#;

#[test]
fn a_raw_recording_imports_with_sizes_sites_and_frees() {
    if Command::new("heaptrack").arg("--version").output().is_err() {
        eprintln!("skipped: heaptrack is not installed (Debian package heaptrack)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("p.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.path().join("p");
    let cc = Command::new("cc")
        .args(["-O0", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success());
    let run = Command::new("heaptrack")
        .arg("-r")
        .arg(&exe)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let raw = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".raw.zst"))
        .expect("heaptrack -r writes a .raw.zst file");
    let trace = dir.path().join("p.trace");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = fragsim(&[
        "trace",
        "import",
        "--from",
        "heaptrack",
        &s(&raw),
        "-o",
        &s(&trace),
    ]);
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{note}");
    assert!(note.contains("realloc as free + malloc"), "{note}");
    let dump = String::from_utf8(fragsim(&["trace", "dump", &s(&trace)]).stdout).unwrap();
    // The program's own calls (heaptrack's start-up allocations come before): by hand, with
    // realloc as free + malloc and calloc as 3 x 1002 = 3006 bytes.
    let sizes: Vec<&str> = dump
        .lines()
        .filter(|l| l.starts_with("a "))
        .map(|l| l.split(' ').nth(2).unwrap())
        .filter(|size| ["1001", "3006", "1003", "1004"].contains(size))
        .collect();
    assert_eq!(sizes, ["1001", "3006", "1003", "1004"], "{dump}");
    // Every allocation names a site whose innermost frame is in the program.
    let own_sites = dump
        .lines()
        .filter(|l| l.starts_with("s ") && l.contains(" p+0x"))
        .count();
    assert!(own_sites >= 4, "{dump}");
    let allocs = dump.lines().filter(|l| l.starts_with("a ")).count();
    let frees = dump.lines().filter(|l| l.starts_with("f ")).count();
    // 4 program allocations, 4 frees (realloc's free, b, c, a) at least.
    assert!(allocs >= 4 && frees >= 4, "{dump}");
}

#[test]
fn the_interpreted_format_is_refused_with_the_command_that_records_raw() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("heaptrack.p.1.zst.txt");
    std::fs::write(&file, "v 10400 3\nX ./p\ns 4 main\ni 1 2 3\na 10 1\n+ 0\n").unwrap();
    let trace = dir.path().join("t.trace");
    let out = fragsim(&[
        "trace",
        "import",
        "--from",
        "heaptrack",
        file.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("interpreted") && err.contains("heaptrack -r"),
        "{err}"
    );
    assert!(!trace.exists());
}
