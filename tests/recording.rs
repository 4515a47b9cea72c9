//! Issue 18, section 3: recording with valgrind. The hand-written logs below copy the shape of
//! real valgrind 3.19 `--trace-malloc=yes` output of a 4-thread C program (malloc, calloc and
//! free in a loop, then a 300 MB malloc), where these lines occurred:
//! `--5204-- malloc(31)calloc(3,16) = 0x67065E0`, `--5204--  = 0x6706580`,
//! `--5204-- malloc(314572800)Warning: set address range perms: large range [...] (undefined)`.

mod common;

use common::*;
use std::path::Path;

fn import_log(dir: &Path, log: &str) -> (std::process::Output, std::path::PathBuf) {
    let path = dir.join("vg.log");
    std::fs::write(&path, log).unwrap();
    let trace = dir.join("vg.trace");
    (import_from("valgrind", &path, &trace), trace)
}

/// Item 3.2: `record` ends with the program's status, 128 + N for signal N, after writing
/// the trace (before: 0 in both cases).
#[test]
fn record_exits_with_the_programs_status() {
    if !have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    for (script, code) in [("exit 7", 7), ("kill -SEGV $$", 128 + 11)] {
        let out = record_valgrind(&trace, &["sh", "-c", script]);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{script}: {}",
            stderr_of(&out)
        );
        assert!(std::fs::read(&trace).unwrap().starts_with(TRACE_MAGIC));
        std::fs::remove_file(&trace).unwrap();
    }
}

/// Item 3.1: a program that forks records its own process, and the children's lines are kept
/// in a log that `trace import --pid` reads (before: "choose one with --pid", which record
/// rejects).
#[test]
fn a_forking_program_records_its_own_process_and_keeps_the_rest() {
    if !have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let out = fragsim()
        .args([
            "record",
            "--with",
            "valgrind",
            "-o",
            s(&trace),
            "--",
            "sh",
            "-c",
            "(x=$(echo 2)); true",
        ])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("its children (PIDs "), "{stderr}");
    let log = stderr
        .split("kept at '")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    let child: String = stderr
        .split("(PIDs ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let child_trace = dir.path().join("child.trace");
    let import = run(&[
        "trace",
        "import",
        "--from",
        "valgrind",
        "--pid",
        &child,
        log,
        "-o",
        s(&child_trace),
    ]);
    assert!(import.status.success(), "{}", stderr_of(&import));
}

/// Item 3.3: a valgrind warning that splits an allocation line is parsed through (before:
/// "'malloc' has no result").
#[test]
fn valgrind_warning_lines_are_parsed_through() {
    let dir = tempfile::tempdir().unwrap();
    let log = "\
--5204-- malloc(314572800)Warning: set address range perms: large range [0x8a44040, 0x1b644040) (undefined)
--5204--  = 0x8A44040
==5204== Warning: set address range perms: large range [0x8a44028, 0x1b644058) (noaccess)
--5204-- free(0x8A44040)
";
    let (out, trace) = import_log(dir.path(), log);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!stderr_of(&out).contains("warning"), "{}", stderr_of(&out));
    assert_eq!(dump(&trace), "a 0 314572800\nf 0\n");
}

/// Item 3.4: interleaved lines of two threads lose no allocation (before: `malloc(31)` and
/// `malloc(57)` were dropped, and the frees of their addresses counted as "not live").
/// Expected events by hand: results are matched first in, first out, ids lowest-free-first.
#[test]
fn interleaved_thread_lines_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = "\
--7-- malloc(40) = 0x1000
--7-- malloc(31)calloc(3,16) = 0x2000
--7-- malloc(57)free(0x1000)
--7--  = 0x3000
--7--  = 0x4000
--7-- free(0x2000)
--7-- free(0x3000)
--7-- free(0x4000)
";
    let (out, trace) = import_log(dir.path(), log);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        dump(&trace),
        "a 0 40\na 1 48\nf 0\na 0 31\na 2 57\nf 1\nf 0\nf 2\n"
    );
    // Two calls waited at once: said, with the count.
    assert!(
        stderr_of(&out).contains("1 result(s) matched first-in first-out"),
        "{}",
        stderr_of(&out)
    );
}

/// Item 3.4: what cannot be imported exactly is a `warning:` line with counts (before: part of
/// the import note, and a call without result was an error or dropped silently).
#[test]
fn losses_are_reported_loudly_with_counts() {
    let dir = tempfile::tempdir().unwrap();
    let log = "\
--7-- malloc(40) = 0x1000
--7-- free(0x9999)
--7-- malloc(10)
";
    let (out, _) = import_log(dir.path(), log);
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("warning:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        warning.contains("1 free(s) of an address not live"),
        "{warning}"
    );
    assert!(
        warning.contains("1 allocation call(s) never got their result"),
        "{warning}"
    );
}

/// Item 3.5: a script, whose interpreter is what valgrind records, and a run with almost no
/// allocation calls are warned about (before: silent).
#[test]
fn record_warns_when_it_records_a_wrapper() {
    if !have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("wrap.sh");
    std::fs::write(&wrapper, "#!/bin/sh\nexec true\n").unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let trace = dir.path().join("t.trace");
    let out = record_valgrind(&trace, &[s(&wrapper)]);
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("is a script (#!/bin/sh)"), "{stderr}");
    assert!(stderr.contains("allocation calls recorded"), "{stderr}");
}

/// Item 3.6: program arguments that are not UTF-8 reach the program byte for byte (before:
/// refused by the argument parser).
#[test]
fn record_passes_arguments_that_are_not_utf8() {
    if !have_valgrind() {
        return;
    }
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let arg = std::ffi::OsStr::from_bytes(b"\xff\xfe");
    let out = fragsim()
        .args([
            "record",
            "--with",
            "valgrind",
            "-o",
            s(&trace),
            "--",
            "printf",
            "%s",
        ])
        .arg(arg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(out.stdout, b"\xff\xfe");
}

/// Item 3.1 (the message and the option agree): the warning about children names
/// `record --follow-forks`, and that option, under valgrind too, writes each child's calls
/// into `TRACE.<pid>` (before: ignored under `--with valgrind`, no child trace written).
#[test]
fn valgrind_follow_forks_writes_one_trace_per_process() {
    if !have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let record = |trace: &Path, follow: bool| {
        let mut command = fragsim();
        command.args(["record", "--with", "valgrind", "-o", s(trace)]);
        if follow {
            command.arg("--follow-forks");
        }
        let out = command
            .args(["--", "sh", "-c", "(x=$(echo 2)); true"])
            .env("TMPDIR", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        stderr_of(&out)
    };
    let plain = record(&dir.path().join("plain.trace"), false);
    assert!(plain.contains("record with --follow-forks"), "{plain}");
    let trace = dir.path().join("t.trace");
    let stderr = record(&trace, true);
    let children: Vec<String> = names_in(dir.path())
        .into_iter()
        .filter(|n| {
            n.strip_prefix("t.trace.")
                .is_some_and(|pid| pid.parse::<u32>().is_ok())
        })
        .collect();
    assert!(!children.is_empty(), "{stderr}");
    for child in &children {
        let pid = child.strip_prefix("t.trace.").unwrap();
        assert!(
            stderr.contains(&format!("child {pid}: imported")),
            "{stderr}"
        );
        let bytes = std::fs::read(dir.path().join(child)).unwrap();
        assert!(bytes.starts_with(TRACE_MAGIC), "{child}");
        run_ok(&["trace", "stats", s(&dir.path().join(child))]);
    }
    assert!(!stderr.contains("its children (PIDs"), "{stderr}");
}
