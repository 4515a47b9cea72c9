//! Issue 39 §1-3: recording a real program the way a user stops it and names its output.
//! §1: an interrupt (Ctrl-C at a terminal signals the whole foreground process group; here
//! `setsid` makes the group and `kill -SIG -PGID` signals it) keeps the trace; a second one
//! keeps the raw files and names the command that converts them. §2: `-o` never destroys
//! a user's file and every output check comes before the program runs. §3: children the
//! program starts are named, recorded or not.

mod common;

use common::{fragsim, s, stderr_of, wait_for};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native_programs")
}

/// Compiles the C program `source` of tests/native_programs into `dir`.
fn compile(dir: &Path, source: &str) -> PathBuf {
    let exe = dir.join(source.trim_end_matches(".c"));
    let out = Command::new("cc")
        .args(["-O0", "-g", "-o"])
        .arg(&exe)
        .arg(programs().join(source))
        .output()
        .expect("a C compiler (build-essential)");
    assert!(out.status.success(), "{}", stderr_of(&out));
    exe
}

/// `setsid fragsim record -o TRACE -- until_signal MARKER MODE`: fragsim leads a process
/// group of its own (its pid is the group's id), the program in it, as at a terminal. The
/// marker is named after the trace, so each run waits for its own program.
fn record_in_group(dir: &Path, trace: &Path, mode: &str) -> (Child, PathBuf) {
    common::build_preload();
    let program = dir.join("until_signal");
    if !program.exists() {
        compile(dir, "until_signal.c");
    }
    let marker = PathBuf::from(format!("{}.started", trace.display()));
    assert!(!marker.exists());
    let child = Command::new("setsid")
        .arg(env!("CARGO_BIN_EXE_fragsim"))
        .args([
            "record",
            "-o",
            s(trace),
            "--",
            s(&program),
            s(&marker),
            mode,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setsid (util-linux)");
    (child, marker)
}

/// Waits until the program has made its first 100,000 calls (it then creates `marker`).
fn wait_started(marker: &Path) {
    assert!(
        wait_for(Duration::from_secs(60), || marker.exists()),
        "the program never started"
    );
}

/// `kill -SIG -PGID`: the signal to every process of the group.
fn kill_group(leader: &Child, sig: &str) {
    let sent = Command::new("kill")
        .args([format!("-{sig}"), "--".into(), format!("-{}", leader.id())])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// The trace's summary row from `trace stats --format json` (it opens and reads the whole
/// trace, so a trace that is not whole fails here).
fn stats(trace: &Path) -> serde_json::Value {
    let row = common::run_json(&["trace", "stats", s(trace), "--format", "json"]);
    row["rows"][0].clone()
}

/// §1: the program dies of the group's SIGINT (its default action): fragsim goes on, writes
/// the trace of everything recorded, says it is truncated by signal 2, and exits 130 as
/// the program did. The same with SIGTERM and SIGHUP (143, 129).
#[test]
fn interrupted_group_keeps_the_trace_and_the_programs_status() {
    let dir = tempfile::tempdir().unwrap();
    for (sig, number) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        let trace = dir.path().join(format!("{sig}.trace"));
        let (child, marker) = record_in_group(dir.path(), &trace, "die");
        wait_started(&marker);
        kill_group(&child, sig);
        let out = child.wait_with_output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(128 + number), "SIG{sig}: {err}");
        let row = stats(&trace);
        assert!(
            row["events"].as_u64().unwrap() >= 100_000,
            "SIG{sig}: {row}"
        );
        assert!(
            err.contains(&format!("truncated: the process died of signal {number}")),
            "SIG{sig}: {err}"
        );
        assert!(
            err.contains(&format!("SIG{sig} came while recording")),
            "{err}"
        );
        // §3: the trace itself says so, and names its program.
        assert_eq!(
            row["recording"],
            format!("truncated (signal {number})"),
            "{row}"
        );
        let command = row["command"].as_str().unwrap();
        assert!(
            command.ends_with(" die") && command.contains("until_signal"),
            "{row}"
        );
    }
}

/// §1: a program that handles the signal and exits with its own status (3): fragsim exits
/// 3 too, and the trace is whole (every object freed, nothing truncated).
#[test]
fn interrupted_group_whose_program_exits_gives_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let (child, marker) = record_in_group(dir.path(), &trace, "exit3");
    wait_started(&marker);
    kill_group(&child, "INT");
    let out = child.wait_with_output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(!err.contains("truncated"), "{err}");
    let row = stats(&trace);
    assert_eq!(row["final_requested_bytes"], 0, "{row}");
    assert_eq!(row["allocs"], row["frees"], "{row}");
    assert_eq!(row["recording"], "whole", "{row}");
}

/// A server that runs as a daemon (`daemon()`: a fork whose parent exits at once, the child
/// in a session of its own), recorded with `--follow-forks`: fragsim says the program left
/// it running, records it until it exits, and passes the group's interrupt on to it (it is
/// no longer in the group). Before, the recording ended with the parent: the daemon's trace
/// was converted while it still ran (0 events, said to be killed) and its raw file removed
/// under it; the parent's own trace was empty and "killed" too (glibc's `daemon` ends the
/// parent with an `_exit` inside libc, past the recorder).
#[test]
fn a_daemon_is_recorded_until_it_exits_and_gets_the_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    common::build_preload();
    let program = compile(dir.path(), "until_signal.c");
    let trace = dir.path().join("t.trace");
    let marker = dir.path().join("started");
    let mut child = Command::new("setsid")
        .arg(env!("CARGO_BIN_EXE_fragsim"))
        .args(["record", "--follow-forks", "-o", s(&trace), "--"])
        .args([s(&program), s(&marker), "daemon"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setsid (util-linux)");
    wait_started(&marker);
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(
        first.contains("the program exited and left 1 process running"),
        "{first}"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "fragsim waits: {first}"
    );
    kill_group(&child, "INT");
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    // The program's own status: its parent process exited 0.
    assert_eq!(status.code(), Some(0), "{first}{rest}");
    let pid: u32 = first
        .split("running: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no pid in: {first}"));
    let parent = stats(&trace);
    assert_eq!(parent["recording"], "whole", "{parent}");
    let daemon = stats(&dir.path().join(format!("t.trace.{pid}")));
    assert!(daemon["events"].as_u64().unwrap() >= 100_000, "{daemon}");
    // It took the interrupt, freed what it held and exited: whole.
    assert_eq!(daemon["recording"], "whole", "{daemon}{rest}");
    assert_eq!(daemon["final_requested_bytes"], 0, "{daemon}");
}

/// §1: SIGTERM sent to fragsim alone (not to the group) is passed on to the program, which
/// dies of it; the trace is written and fragsim exits 143.
#[test]
fn sigterm_to_fragsim_alone_reaches_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let (child, marker) = record_in_group(dir.path(), &trace, "die");
    wait_started(&marker);
    common::signal(&child, "TERM");
    let out = child.wait_with_output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(stats(&trace)["events"].as_u64().unwrap() >= 100_000);
}

/// §1: a program that ignores SIGINT keeps running after the first; the second stops
/// fragsim (130) without a trace and stops the program (SIGKILL: what its recorder still
/// buffered is lost, what it wrote to its raw file is not), keeps the raw files and names
/// the one command that converts them, which then writes a trace that opens, holding at
/// least the recorder's first full buffer (1 MiB: over 30,000 calls).
#[test]
fn second_interrupt_keeps_the_raw_files_and_names_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let (mut child, marker) = record_in_group(dir.path(), &trace, "ignore");
    wait_started(&marker);
    kill_group(&child, "INT");
    // fragsim says it took the first signal before the second is sent (two signals sent
    // before it runs its handler would arrive as one).
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.contains("SIGINT"), "{first}");
    let program = common::children_of(child.id());
    assert_eq!(program.len(), 1, "{program:?}");
    kill_group(&child, "INT");
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(!trace.exists(), "{rest}");
    assert!(wait_for(Duration::from_secs(20), || common::is_gone(
        program[0]
    )));
    // The one command, between backquotes, run as a shell would run it.
    let command = rest
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in: {rest}"));
    assert!(command.starts_with("fragsim record --convert "), "{rest}");
    let line = command.replacen("fragsim", env!("CARGO_BIN_EXE_fragsim"), 1);
    let out = Command::new("sh").args(["-c", &line]).output().unwrap();
    assert!(out.status.success(), "{line}: {}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("killed before the recorder could finish"),
        "{}",
        stderr_of(&out)
    );
    assert!(stats(&trace)["events"].as_u64().unwrap() >= 30_000);
}

/// §1: `--convert` of a folder without raw files is one line naming it, exit 2.
#[test]
fn convert_of_a_folder_without_raw_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = fragsim()
        .args(["record", "--convert", s(dir.path()), "-o"])
        .arg(dir.path().join("t.trace"))
        .output()
        .unwrap();
    common::assert_refused(&out, &format!("'{}' holds no raw file", s(dir.path())));
}

/// `fragsim record -o OUT [extra] -- sh -c 'touch MARKER' ...` in `dir`: the program would
/// leave `marker` behind if it ran.
fn record_marking(dir: &Path, out: &str, extra: &[&str], args: &[&str]) -> std::process::Output {
    let mut command = fragsim();
    command.current_dir(dir).args(["record", "-o", out]);
    command
        .args(extra)
        .args(["--", "sh", "-c", "touch marker", "sh"]);
    command.args(args).output().unwrap()
}

/// §2: `-o` naming a file the program reads (its argument) is refused before it runs, even
/// with --force, and the file is untouched (before: `record -o script.py -- python3
/// script.py` replaced the script with the trace).
#[test]
fn output_over_a_programs_argument_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.sh"), "echo hi\n").unwrap();
    for force in [&[][..], &["--force"][..]] {
        let out = record_marking(dir.path(), "script.sh", force, &["script.sh"]);
        common::assert_refused(&out, "-o 'script.sh' is the program's argument 'script.sh'");
        assert!(!dir.path().join("marker").exists(), "the program ran");
        let kept = std::fs::read_to_string(dir.path().join("script.sh")).unwrap();
        assert_eq!(kept, "echo hi\n");
    }
}

/// §2: an existing file that is not a fragsim trace is refused (exit 2, one line naming it
/// and --force), the program not run; with --force it is replaced by the trace; an existing
/// trace (a recording made before) is replaced without asking.
#[test]
fn output_over_a_users_file_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    let out = record_marking(dir.path(), "notes.txt", &[], &[]);
    common::assert_refused_naming(&out, &["'notes.txt'", "not a fragsim trace", "--force"]);
    assert!(!dir.path().join("marker").exists(), "the program ran");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
    let out = record_marking(dir.path(), "notes.txt", &["--force"], &[]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(dir.path().join("marker").exists());
    stats(&notes);
    std::fs::remove_file(dir.path().join("marker")).unwrap();
    let out = record_marking(dir.path(), "notes.txt", &[], &[]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(dir.path().join("marker").exists());
}

/// §2: an output that cannot be written is reported before the program runs, in one line
/// that names the path as given once and no temporary name: a folder, a device that takes
/// no write (/dev/full), a missing folder (before: "cannot write 'adir': cannot write
/// 'adir': it is a folder" after the program ran; a missing folder named fragsim's
/// temporary folder).
#[test]
fn unwritable_outputs_are_refused_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    let mut cases = vec![
        ("adir", "it is a folder"),
        ("missing/t.trace", "the folder 'missing' does not exist"),
    ];
    if common::is_char_device(Path::new("/dev/full")) {
        cases.push(("/dev/full", "No space left on device"));
    } else {
        eprintln!("skipped /dev/full: not on this system");
    }
    for (out, why) in cases {
        let refused = record_marking(dir.path(), out, &[], &[]);
        common::assert_refused_naming(&refused, &[&format!("cannot write '{out}': {why}")]);
        let err = stderr_of(&refused);
        assert_eq!(err.matches(out).count(), 1, "{err}");
        assert!(!err.contains(".fragsim"), "{err}");
        assert!(
            !dir.path().join("marker").exists(),
            "{out}: the program ran"
        );
    }
    assert_eq!(common::names_in(dir.path()), ["adir"]);
}

/// §3: a shell that runs `ls` in a child (not as its last command, which it would exec):
/// without --follow-forks fragsim says one child ran unrecorded, names it, and names the
/// option; with it, the child's line and its trace name `ls`, and the program's trace names
/// the whole command line (`trace stats`).
#[test]
fn children_are_named_recorded_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("sh.trace");
    let script = "ls / >/dev/null; true";
    let out = fragsim()
        .args(["record", "-o", s(&trace), "--", "sh", "-c", script])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: 1 child process ran unrecorded: `ls /`; record with --follow-forks"),
        "{err}"
    );
    let row = stats(&trace);
    assert_eq!(row["command"], format!("sh -c '{script}'"), "{row}");
    assert_eq!(row["recording"], "whole", "{row}");
    let out = fragsim()
        .args([
            "record",
            "-o",
            s(&trace),
            "--follow-forks",
            "--",
            "sh",
            "-c",
            script,
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("unrecorded"), "{err}");
    let child = err
        .lines()
        .find_map(|l| l.strip_prefix("child ")?.split_once(" (`ls /`): recorded "))
        .unwrap_or_else(|| panic!("no line of the child: {err}"))
        .0;
    let child_trace = PathBuf::from(format!("{}.{child}", trace.display()));
    let row = stats(&child_trace);
    assert_eq!(row["command"], "ls /", "{row}");
    assert!(row["events"].as_u64().unwrap() > 0, "{row}");
}
