//! The native recorder (`fragsim record`, preload/) on real programs compiled here from
//! tests/native_programs/: each program prints what it did (its own log of the calls it
//! made, counts, marker sizes), and the trace must say the same. The raw files are kept
//! (`--keep-raw`) and converted with the library, which yields threads, exits and sites.

mod common;

use fragsim::record::{raw_records, ConvertSummary};
use fragsim::trace::{Call, Event, Record, TraceReader};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FRAGSIM: &str = env!("CARGO_BIN_EXE_fragsim");

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native_programs")
}

/// Compiles `source` (C or C++ by extension) into `dir`.
fn compile(dir: &Path, source: &str, extra: &[&str]) -> PathBuf {
    let src = programs().join(source);
    let exe = dir.join(source.split('.').next().unwrap());
    let compiler = if source.ends_with(".cpp") {
        "g++"
    } else {
        "cc"
    };
    let out = Command::new(compiler)
        .args(["-O0", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(extra)
        .output()
        .expect("a C/C++ compiler (build-essential)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The `--order` flags each order test runs with: the default (`auto`: sequence numbers
/// until a second thread records, then the TSC where it can order events), `--order seq`,
/// and `--order tsc` where this machine's TSC can order events (else the test says it skips
/// it).
fn orders() -> Vec<&'static [&'static str]> {
    let mut orders: Vec<&'static [&'static str]> = vec![&[], &["--order", "seq"]];
    match fragsim::record::tsc_order_unsupported_here() {
        None => orders.push(&["--order", "tsc"]),
        Some(why) => eprintln!("skipping --order tsc: {why}"),
    }
    orders
}

/// [`orders`], each with a fresh folder `<prefix><i>` in `dir` for its run.
fn order_dirs(dir: &Path, prefix: &str) -> Vec<(PathBuf, &'static [&'static str])> {
    orders()
        .into_iter()
        .enumerate()
        .map(|(i, order)| {
            let sub = dir.join(format!("{prefix}{i}"));
            std::fs::create_dir(&sub).unwrap();
            (sub, order)
        })
        .collect()
}

struct Run {
    out: Output,
    trace: PathBuf,
    raw: PathBuf,
}

fn record(dir: &Path, flags: &[&str], command: &[&str]) -> Run {
    common::build_preload();
    let trace = dir.join("t.trace");
    let raw = dir.join("raw");
    let out = Command::new(FRAGSIM)
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .arg("--keep-raw")
        .arg(&raw)
        .args(flags)
        .arg("--")
        .args(command)
        .output()
        .unwrap();
    Run { out, trace, raw }
}

/// The raw files by pid.
fn raw_files(raw: &Path) -> Vec<(u64, PathBuf)> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(raw)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let pid = p
                .file_name()?
                .to_str()?
                .strip_prefix("raw.")?
                .parse()
                .ok()?;
            Some((pid, p))
        })
        .collect();
    files.sort();
    files
}

/// The records of the program's own raw file (the one pid whose file `fragsim record` made
/// `t.trace` from: with one raw file, that one).
fn only_process(raw: &Path) -> (Vec<Record>, ConvertSummary) {
    let files = raw_files(raw);
    assert_eq!(files.len(), 1, "one process: {files:?}");
    raw_records(&files[0].1).unwrap()
}

/// `setarch -R`, which runs a program without address randomisation (so an image that execs
/// itself gets its objects at the same addresses again), where the machine allows it; else
/// nothing, said on stderr (a container's seccomp may refuse the personality).
fn without_aslr() -> Vec<&'static str> {
    let ok = Command::new("setarch")
        .args(["-R", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("note: `setarch -R` refused here: the exec tests run with randomisation");
        return Vec::new();
    }
    vec!["setarch", "-R"]
}

fn calls_by_thread(records: &[Record]) -> HashMap<u32, Vec<Call>> {
    let mut by: HashMap<u32, Vec<Call>> = HashMap::new();
    for r in records {
        if let Record::Call(c) = r {
            by.entry(c.thread).or_default().push(*c);
        }
    }
    by
}

fn alloc_sizes(records: &[Record]) -> Vec<u64> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Call(Call {
                event: Event::Alloc { size, .. },
                ..
            }) => Some(*size),
            _ => None,
        })
        .collect()
}

/// Checks `calls` against the program's log lines (see sequence.cpp): same kinds, sizes and
/// alignments in the same order, and every free/realloc names the object its log address
/// was allocated as.
fn check_against_log(calls: &[Call], log: &[&str]) {
    assert_eq!(calls.len(), log.len(), "calls {calls:?}\nlog {log:?}");
    let mut id_of: HashMap<&str, u32> = HashMap::new();
    for (call, line) in calls.iter().zip(log) {
        let f: Vec<&str> = line.split(' ').collect();
        match (f[0], call.event) {
            ("a", Event::Alloc { id, size, align }) => {
                assert_eq!(
                    (size, align),
                    (f[2].parse().unwrap(), f[3].parse().unwrap()),
                    "{line}"
                );
                id_of.insert(f[1], id);
            }
            ("r", Event::Realloc { id, size }) => {
                assert_eq!(Some(&id), id_of.get(f[1]), "{line}");
                assert_eq!(size, f[3].parse::<u64>().unwrap(), "{line}");
                id_of.remove(f[1]);
                id_of.insert(f[2], id);
            }
            ("f", Event::Free { id }) => {
                assert_eq!(id_of.remove(f[1]), Some(id), "{line}");
            }
            _ => panic!("log line '{line}' but trace call {call:?}"),
        }
    }
}

#[test]
fn known_sequence_event_for_event() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "sequence.cpp", &[]);
    for (sub, order) in order_dirs(dir.path(), "order") {
        known_sequence_with(&sub, &exe, order);
    }
}

fn known_sequence_with(dir: &Path, exe: &Path, flags: &[&str]) {
    let run = record(dir, flags, &[exe.to_str().unwrap()]);
    assert!(
        run.out.status.success(),
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let stdout = String::from_utf8(run.out.stdout).unwrap();
    let mut sections = stdout.split("T ");
    let main_log: Vec<&str> = sections.next().unwrap().lines().collect();
    let (records, summary) = only_process(&run.raw);
    assert!(!summary.truncated);
    assert_eq!(summary.issues.total(), 0, "{flags:?}: {:?}", summary.issues);
    let by = calls_by_thread(&records);
    // The main thread's window: from the first marker to the second.
    let main = &by[&0];
    let start = main
        .iter()
        .position(|c| matches!(c.event, Event::Alloc { size: 777001, .. }))
        .unwrap();
    check_against_log(&main[start..start + main_log.len()], &main_log);
    // Each worker: all its calls, then its exit as its last record.
    for (n, section) in sections.enumerate() {
        let log: Vec<&str> = section.lines().skip(1).collect();
        let size = 1000 + n as u64;
        let (&thread, calls) = by
            .iter()
            .find(|(_, c)| matches!(c[0].event, Event::Alloc { size: s, .. } if s == size))
            .unwrap();
        check_against_log(calls, &log);
        let last = records
            .iter()
            .rev()
            .find(|r| match r {
                Record::Call(c) => c.thread == thread,
                Record::ThreadExit { thread: t, .. } => *t == thread,
                _ => false,
            })
            .unwrap();
        assert!(matches!(last, Record::ThreadExit { .. }), "{last:?}");
    }
    // Times never go back.
    let times: Vec<u64> = records
        .iter()
        .filter_map(|r| match r {
            Record::Call(c) => c.time_ns,
            _ => None,
        })
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    // The written trace (v2) holds the same records.
    assert_eq!(records_of(&run.trace), records);
}

#[test]
fn concurrent_threads_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "counting.c", &[]);
    // The first round with TSC stamps, the next two with the default coarse clock; then with
    // TSC order keys, with either clock.
    let mut rounds: Vec<Vec<&str>> = vec![vec!["--precise-times"], vec![], vec![]];
    if let Some(tsc) = orders().into_iter().find(|o| o.contains(&"tsc")) {
        rounds.push(tsc.to_vec());
        rounds.push([tsc, &["--precise-times"]].concat());
    }
    for (round, flags) in rounds.iter().enumerate() {
        let sub = dir.path().join(format!("run{round}"));
        std::fs::create_dir(&sub).unwrap();
        let precise = flags.contains(&"--precise-times");
        let started = std::time::Instant::now();
        let run = record(&sub, flags, &[exe.to_str().unwrap()]);
        let wall = started.elapsed();
        assert_eq!(
            raw_flags(&raw_files(&run.raw)[0].1) & 16 != 0,
            flags.contains(&"tsc"),
            "the image header's TSC order flag, {flags:?}"
        );
        assert!(run.out.status.success());
        let stdout = String::from_utf8(run.out.stdout).unwrap();
        let (records, summary) = only_process(&run.raw);
        // Every call of a consistent recording matches a live object: no repairs.
        assert_eq!(summary.issues.total(), 0, "{:?}", summary.issues);
        let by = calls_by_thread(&records);
        for line in stdout.lines() {
            let (i, count) = line.split_once(' ').unwrap();
            let marker = 100000 + i.parse::<u64>().unwrap();
            let calls = by
                .values()
                .find(|c| matches!(c[0].event, Event::Alloc { size, .. } if size == marker))
                .unwrap_or_else(|| panic!("no thread starts with malloc({marker})"));
            assert_eq!(
                calls.len() as u64,
                count.parse::<u64>().unwrap(),
                "thread {i}, run {round} {flags:?}"
            );
        }
        assert_eq!(summary.thread_exits, 4);
        // TSC stamps scaled to ns: 4 x 20000 calls take more than 0. Either clock: the calls
        // span no more than the whole run (plus one 4 ms tick of the coarse clock).
        if precise {
            assert!(summary.duration_ns > 0);
        }
        assert!(
            summary.duration_ns <= wall.as_nanos() as u64 + 4_000_000,
            "{} ns of calls in a run of {wall:?}",
            summary.duration_ns
        );
    }
}

#[test]
fn fork_without_and_with_follow_forks() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    let exe = exe.to_str().unwrap();
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let run = record(&plain, &[], &[exe, "fork"]);
    assert!(run.out.status.success());
    let (records, _) = only_process(&run.raw);
    let sizes = alloc_sizes(&records);
    assert!(sizes.contains(&11111) && sizes.contains(&33333));
    assert!(
        !sizes.contains(&22222),
        "the child is not recorded without --follow-forks"
    );

    for (follow, order) in order_dirs(dir.path(), "follow") {
        let flags = [&["--follow-forks"], order].concat();
        fork_followed(&follow, exe, &flags);
    }
}

fn fork_followed(follow: &Path, exe: &str, flags: &[&str]) {
    let run = record(follow, flags, &[exe, "fork"]);
    assert!(run.out.status.success());
    let files = raw_files(&run.raw);
    assert_eq!(files.len(), 2, "{files:?}");
    let (parent, _) = raw_records(&files[0].1).unwrap();
    let (child, summary) = raw_records(&files[1].1).unwrap();
    assert!(alloc_sizes(&parent).contains(&33333));
    assert!(!alloc_sizes(&parent).contains(&22222));
    assert_eq!(alloc_sizes(&child), vec![22222]);
    assert!(!summary.truncated);
    // fragsim wrote the child's trace beside the program's.
    let child_trace = PathBuf::from(format!("{}.{}", run.trace.display(), files[1].0));
    assert_eq!(TraceReader::open(&child_trace).unwrap().count(), 2);
}

#[test]
fn exec_through_a_shell_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    let wrapper = dir.path().join("wrapper.sh");
    std::fs::write(&wrapper, "#!/bin/sh\nexec \"$@\"\n").unwrap();
    for (sub, order) in order_dirs(dir.path(), "order") {
        let run = record(
            &sub,
            order,
            &[
                "sh",
                wrapper.to_str().unwrap(),
                exe.to_str().unwrap(),
                "alloc",
            ],
        );
        assert!(run.out.status.success());
        let (records, summary) = only_process(&run.raw);
        assert_eq!(summary.images, 2, "the shell, then the program");
        assert!(!summary.truncated);
        assert_eq!(summary.issues.total(), 0, "{order:?}: {:?}", summary.issues);
        let sizes = alloc_sizes(&records);
        assert!(
            sizes.contains(&11111) && sizes.contains(&44444),
            "{sizes:?}"
        );
    }
}

/// Every exec function glibc has writes the image's calls before the exec: the program keeps
/// 1,000 objects (of 333 bytes) live and execs itself with `execv`, and with the list forms `execl`,
/// `execle`, `execlp` (which call the system call inside libc, past any wrapper of `execve`;
/// before the recorder wrapped them, the image's unwritten calls were lost without a word).
/// Without address randomisation the new image's 1,000 objects take the same addresses: all
/// 2,000 allocations are there, the exec frees the first 1,000, and nothing needs repair. A
/// raw `execve` system call, which no wrapper can see, is said, by `record` and by the trace
/// itself (`trace stats`): the trace misses calls, and the old image's objects are still
/// freed at the exec (no repairs at the reused addresses).
#[test]
fn every_exec_form_writes_the_image_first() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    for how in [
        "exec-self",
        "execl-self",
        "execle-self",
        "execlp-self",
        "syscall-self",
    ] {
        let sub = dir.path().join(how);
        std::fs::create_dir(&sub).unwrap();
        let mut command = without_aslr();
        let fixed = !command.is_empty();
        command.extend([exe.to_str().unwrap(), how]);
        let run = record(&sub, &[], &command);
        let stderr = String::from_utf8_lossy(&run.out.stderr);
        assert!(run.out.status.success(), "{how}: {stderr}");
        let firsts: Vec<&str> = stderr.lines().filter(|l| l.starts_with("0x")).collect();
        assert_eq!(firsts.len(), 2, "{how}: {stderr}");
        assert!(
            !fixed || firsts[0] == firsts[1],
            "{how}: the same addresses again: {stderr}"
        );
        let (records, summary) = only_process(&run.raw);
        let images = 2 + fixed as usize;
        assert_eq!(
            summary.images, images,
            "{how}: (setarch,) the program twice"
        );
        assert_eq!(summary.issues.total(), 0, "{how}: {:?}", summary.issues);
        let small = alloc_sizes(&records).iter().filter(|&&s| s == 333).count();
        let warned = stderr.contains("misses calls");
        // The trace itself says so too (`trace stats`' recording column).
        let stats = Command::new(FRAGSIM)
            .args(["trace", "stats"])
            .arg(&run.trace)
            .output()
            .unwrap();
        let stats = String::from_utf8_lossy(&stats.stdout);
        let says = stats.contains("| misses calls (1 unseen exec(s)) |");
        assert_eq!(says, how == "syscall-self", "{how}: {stats}");
        assert_eq!(
            stats.contains("| whole |"),
            how != "syscall-self",
            "{how}: {stats}"
        );
        if how == "syscall-self" {
            assert_eq!(summary.unseen_execs, 1, "{how}");
            assert!(warned, "{how}: {stderr}");
            // Some of the first image's 100,000 were written, not all; the 1,000 after it all.
            assert!(small > 1000 && small < 101_000, "{how}: {small}");
            assert!(summary.released_by_exec > 1000, "{how}: {summary:?}");
        } else {
            assert_eq!(summary.unseen_execs, 0, "{how}");
            assert!(!warned, "{how}: {stderr}");
            assert_eq!(small, 2000, "{how}");
            assert!(summary.released_by_exec >= 1000, "{how}: {summary:?}");
        }
    }
}

/// A `vfork` child runs in its parent's memory, the recorder's state included, until it execs
/// or exits, and no fork handler runs in it. Python's `subprocess` and many servers start
/// children that way, closing the descriptors they do not pass on, and the child's first
/// exec often fails (a PATH search). Before the recorder checked which process it was in, the
/// child's failed exec wrote the parent's buffers to the closed descriptor (lost), and its
/// `_exit` ended the parent's recording: `vfork-exec` lost 24,192 bytes (1,002 events) and
/// repaired 1,000 frees, `vfork-fail` kept 1,002 of its 4,002 events, and CPython running two
/// `subprocess.run`s lost 125,520 bytes and repaired 1,465 frees. Hand-derived: the 11,111 and 44,444 pairs, 1,000
/// objects of 444 bytes, their frees and 1,000 pairs of 555: 4,002 events, no exec, nothing
/// to repair or lost; the exec'd child ("alloc", 4 events) is recorded on its own with
/// `--follow-forks`.
#[test]
fn a_vfork_child_leaves_the_parents_recording_alone() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    for (how, follow) in [
        ("vfork-fail", false),
        ("vfork-exec", false),
        ("vfork-exec", true),
    ] {
        let sub = dir.path().join(format!("{how}-{follow}"));
        std::fs::create_dir(&sub).unwrap();
        let flags: &[&str] = if follow { &["--follow-forks"] } else { &[] };
        let run = record(&sub, flags, &[exe.to_str().unwrap(), how]);
        let stderr = String::from_utf8_lossy(&run.out.stderr);
        assert!(run.out.status.success(), "{how}: {stderr}");
        assert!(!stderr.contains("not recorded"), "{how}: {stderr}");
        let mut files: Vec<_> = raw_files(&run.raw)
            .into_iter()
            .map(|(_, path)| raw_records(&path).unwrap())
            .collect();
        assert_eq!(files.len(), 1 + follow as usize, "{how}");
        // The parent first (pids may wrap).
        files.sort_by_key(|(_, summary)| std::cmp::Reverse(summary.events));
        let (records, summary) = &files[0];
        assert_eq!(summary.events, 4002, "{how}: {summary:?}");
        assert_eq!((summary.allocs, summary.frees), (2001, 2001), "{how}");
        assert_eq!(summary.images, 1, "{how}: no exec in the parent");
        assert_eq!(summary.released_by_exec, 0, "{how}");
        assert_eq!(summary.issues.total(), 0, "{how}: {:?}", summary.issues);
        assert_eq!(summary.lost_bytes, 0, "{how}");
        assert!(!summary.truncated, "{how}");
        let sizes = alloc_sizes(records);
        for (size, n) in [(444, 1000), (555, 1000), (11111, 1), (44444, 0)] {
            let got = sizes.iter().filter(|&&s| s == size).count();
            assert_eq!(got, n, "{how}: allocations of {size}");
        }
        if how == "vfork-exec" {
            assert_eq!(
                stderr.contains("1 child process ran unrecorded"),
                !follow,
                "{how}: {stderr}"
            );
        }
        if follow {
            let (child, summary) = &files[1];
            assert_eq!(summary.events, 4, "the child: {summary:?}");
            let sizes = alloc_sizes(child);
            assert!(
                sizes.contains(&44444) && sizes.contains(&11111),
                "{sizes:?}"
            );
        }
    }
}

/// A daemon closes every descriptor it did not open, the recorder's raw file's too, and the
/// next file it opens takes the lowest free number. Before the recorder checked its
/// descriptor before each write, the recording went into the program's own file (3,145,463
/// bytes of chunks around its one line) and the trace was empty and "killed". Hand-derived:
/// the 11,111 pair, 1,000 objects of 444 bytes and their frees, 100,000 pairs of 555:
/// 202,002 events, whole, nothing lost; the program's file holds its line alone.
#[test]
fn a_program_that_closes_every_descriptor_keeps_its_file_and_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    let own = dir.path().join("own.txt");
    let run = record(
        dir.path(),
        &[],
        &[exe.to_str().unwrap(), "close-all", own.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(run.out.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&own).unwrap(),
        "the program's own line\n"
    );
    assert!(!stderr.contains("not recorded"), "{stderr}");
    let (records, summary) = only_process(&run.raw);
    assert_eq!(summary.events, 202_002, "{summary:?}");
    assert!(!summary.truncated && summary.lost_bytes == 0, "{summary:?}");
    assert_eq!(summary.issues.total(), 0, "{:?}", summary.issues);
    let sizes = alloc_sizes(&records);
    assert_eq!(sizes.iter().filter(|&&s| s == 555).count(), 100_000);
    assert_eq!(sizes.iter().filter(|&&s| s == 444).count(), 1000);
}

/// CPython installs its `KeyboardInterrupt` handler only where SIGINT is at its default
/// action, and the recorder's own handler (which writes the trace before a fatal signal
/// kills) showed: a recorded `python3 -m http.server` stopped with Ctrl-C died of SIGINT
/// instead of shutting down (exit 0 unrecorded). `sigint-if-default` does the same as
/// CPython: it found a handler there and exited 9 under the recorder before the recorder
/// hid it. Now it reads the default, its handler runs, it exits 0 and the trace is whole;
/// with `die` it sets the default again (as CPython does before dying of SIGINT), reads it
/// back, and dies of the signal: the recorder's handler stood in again, so the trace has the
/// 88,888-byte allocation made just before and says signal 2.
#[test]
fn the_programs_own_signal_handling_is_left_as_it_would_be() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    for die in [false, true] {
        let sub = dir.path().join(format!("die-{die}"));
        std::fs::create_dir(&sub).unwrap();
        let mut command = vec![exe.to_str().unwrap(), "sigint-if-default"];
        if die {
            command.push("die");
        }
        let run = record(&sub, &[], &command);
        let stderr = String::from_utf8_lossy(&run.out.stderr);
        let (records, summary) = only_process(&run.raw);
        let sizes = alloc_sizes(&records);
        assert!(sizes.contains(&77777), "{die}: {sizes:?}");
        if die {
            assert_eq!(run.out.status.code(), Some(130), "{stderr}");
            assert_eq!(summary.signal, Some(2), "{summary:?}");
            assert!(sizes.contains(&88888), "{sizes:?}");
        } else {
            assert!(run.out.status.success(), "{stderr}");
            assert!(!summary.truncated, "{summary:?}");
            assert_eq!(summary.issues.total(), 0, "{:?}", summary.issues);
        }
    }
}

#[test]
fn exit_from_a_worker_thread() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    let run = record(dir.path(), &[], &[exe.to_str().unwrap(), "thread-exit"]);
    assert_eq!(run.out.status.code(), Some(3), "the program's exit status");
    let (records, summary) = only_process(&run.raw);
    assert!(!summary.truncated);
    assert!(alloc_sizes(&records).contains(&55555));
}

#[test]
fn sigsegv_writes_a_truncated_trace_and_exits_139() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "lifecycle.c", &[]);
    let run = record(dir.path(), &[], &[exe.to_str().unwrap(), "segv"]);
    assert_eq!(run.out.status.code(), Some(139));
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        stderr.contains("truncated") && stderr.contains("signal 11"),
        "{stderr}"
    );
    let (records, summary) = only_process(&run.raw);
    assert!(summary.truncated);
    assert_eq!(summary.signal, Some(11));
    assert!(alloc_sizes(&records).contains(&66666));
    let written: Vec<Event> = TraceReader::open(&run.trace)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(written
        .iter()
        .any(|e| matches!(e, Event::Alloc { size: 66666, .. })));
}

#[test]
fn static_binary_says_preload_had_no_effect() {
    let dir = tempfile::tempdir().unwrap();
    let src = programs().join("lifecycle.c");
    let exe = dir.path().join("static");
    let built = Command::new("cc")
        .args(["-static", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    if !built.success() {
        eprintln!("skipped: no static libc to link against");
        return;
    }
    let run = record(dir.path(), &[], &[exe.to_str().unwrap(), "thread-exit"]);
    assert_eq!(run.out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(stderr.contains("LD_PRELOAD had no effect"), "{stderr}");
    assert_eq!(TraceReader::open(&run.trace).unwrap().count(), 0);
}

#[test]
fn stacks_name_the_call_sites() {
    if !Path::new("/usr/lib/x86_64-linux-gnu/libunwind.so.8").exists() {
        eprintln!("SKIPPED: libunwind8 is not installed (apt-get install libunwind8)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "stacks.c", &[]);
    let run = record(dir.path(), &["--stacks"], &[exe.to_str().unwrap()]);
    assert!(
        run.out.status.success(),
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let (records, _) = only_process(&run.raw);
    let mut frames_of = HashMap::new();
    for r in &records {
        if let Record::Site { id, frames } = r {
            frames_of.insert(*id, frames.clone());
        }
    }
    let sites_of = |want: u64| -> Vec<u32> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::Call(Call {
                    event: Event::Alloc { size, .. },
                    site,
                    ..
                }) if *size == want => Some(site.expect("a site")),
                _ => None,
            })
            .collect()
    };
    let (here, there) = (sites_of(12345), sites_of(23456));
    assert_eq!(here.len(), 3);
    // The same call site is one site, the other one another.
    assert!(here.iter().all(|&s| s == here[0]) && there.iter().all(|&s| s == there[0]));
    assert_ne!(here[0], there[0]);
    // Innermost first, the recorder's own frames dropped: malloc's caller, then main (the
    // names come from the test program's symbol table).
    let names = |id: u32| -> Vec<String> {
        frames_of[&id]
            .iter()
            .map(|f| f.to_string().split("+0x").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(here[0])[..2],
        ["alloc_here", "main"],
        "{:?}",
        frames_of[&here[0]]
    );
    assert_eq!(
        names(there[0])[..2],
        ["alloc_there", "main"],
        "{:?}",
        frames_of[&there[0]]
    );
    // Both called from main, at two different places in it.
    assert_ne!(frames_of[&here[0]][1], frames_of[&there[0]][1]);
}

/// Item 3 of the speed-up: the one-line summary (events, threads, duration, trace size)
/// always, and on a terminal a progress bar while the trace is written. `script` (util-linux)
/// gives the run a terminal; without one, no bar.
#[test]
fn summary_line_and_progress_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    }
    common::build_preload();
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "counting.c", &[]);
    let trace = dir.path().join("t.trace");
    let command = format!(
        "'{FRAGSIM}' record -o '{}' -- '{}'",
        trace.display(),
        exe.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("writing the trace"), "{shown}");
    // counting.c: 4 workers and the main thread.
    let summary = shown
        .lines()
        .flat_map(|l| l.split('\r'))
        .find(|l| l.contains("recorded "))
        .unwrap_or_else(|| panic!("no summary line: {shown}"));
    let size = std::fs::metadata(&trace).unwrap().len();
    assert!(summary.contains("on 5 threads"), "{summary}");
    assert!(summary.contains(&format!("({size} bytes")), "{summary}");
    assert!(summary.contains(" s (calls over "), "{summary}");
    // Without a terminal: the summary, no bar.
    let run = record(dir.path(), &[], &[exe.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        stderr.contains("recorded ") && !stderr.contains("writing the trace"),
        "{stderr}"
    );
}

/// (progress mark, lowest and highest event number) of each `EVENTS` chunk of the first
/// image of a raw file, in file order, read by hand from the format in preload/src/lib.rs.
fn chunk_marks(raw: &Path) -> Vec<(u64, u64, u64)> {
    let bytes = std::fs::read(raw).unwrap();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let mut chunks = Vec::new();
    let (mut at, mut headers) = (0, 0);
    while at + 48 <= bytes.len() {
        let kind = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
        let len = word(at + 16) as usize;
        let (start, end) = (at + 48, at + 48 + len);
        headers += usize::from(kind == 1);
        if kind == 2 && headers == 1 {
            let (mut lo, mut hi, mut p) = (u64::MAX, 0, start);
            while p < end {
                let head = word(p);
                let kind = head & 0x3f;
                let site = usize::from(head & 0x80 != 0);
                let stamp = usize::from(head & 0x40 == 0);
                if kind == 5 {
                    p += 8 * (2 + (head >> 8) as usize);
                    continue;
                }
                let body = [0, 2, 1, 4, 0, 0, 3][kind as usize];
                lo = lo.min(head >> 8);
                // A realloc's seq_after is its fourth body word.
                let after = p + 8 * (1 + stamp + 3);
                hi = hi.max(if kind == 3 { word(after) } else { head >> 8 });
                p += 8 * (1 + stamp + body + site);
            }
            chunks.push((word(at + 40), lo, hi));
        }
        at = end;
    }
    chunks
}

/// The flags word of the first image's header of a raw file.
fn raw_flags(raw: &Path) -> u64 {
    let bytes = std::fs::read(raw).unwrap();
    assert_eq!(
        u32::from_le_bytes(bytes[4..8].try_into().unwrap()),
        1,
        "a header first"
    );
    u64::from_le_bytes(bytes[48 + 32..48 + 40].try_into().unwrap())
}

/// With either order (TSC keys: the marks come from the TSC and a `membarrier`, see
/// preload/src/buf/order.rs), on the 4-thread program.
#[test]
fn progress_marks_hold_and_the_trace_converted_while_running_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "threads_map.cpp", &[]);
    for (sub, order) in order_dirs(dir.path(), "order") {
        marks_hold_with(&sub, &exe, order);
    }
}

fn marks_hold_with(dir: &Path, exe: &Path, flags: &[&str]) {
    // 4 workers x 30000 entries: about a million calls, several 1 MiB chunks per thread.
    let run = record(dir, flags, &[exe.to_str().unwrap(), "30000"]);
    assert!(run.out.status.success());
    let files = raw_files(&run.raw);
    let chunks = chunk_marks(&files[0].1);
    assert!(chunks.len() > 8, "{} chunks", chunks.len());
    // A chunk's mark: every event numbered below it is in that chunk or an earlier one.
    for (i, &(mark, _, _)) in chunks.iter().enumerate() {
        for (j, &(_, lo, _)) in chunks.iter().enumerate().skip(i + 1) {
            assert!(
                lo >= mark,
                "{flags:?}: chunk {j} has event {lo}, below chunk {i}'s mark {mark}"
            );
        }
    }
    // The marks move while the threads run (only the final flush writes none).
    let marked = chunks.iter().filter(|c| c.0 > 0).count();
    assert!(
        marked * 2 >= chunks.len(),
        "{marked} of {} chunks marked",
        chunks.len()
    );
    // What `fragsim record` converted while the program ran is what the whole file gives.
    let (records, summary) = only_process(&run.raw);
    assert_eq!(summary.issues.total(), 0, "{flags:?}: {:?}", summary.issues);
    assert_eq!(records_of(&run.trace), records, "{flags:?}");
}

/// Every record of the trace at `path`.
fn records_of(path: &std::path::Path) -> Vec<Record> {
    TraceReader::open(path)
        .unwrap()
        .records()
        .map(Result::unwrap)
        .collect()
}

/// `--order tsc` where it cannot apply is one line and exit 2, before any program runs: with
/// `--with valgrind`, and (where this machine's TSC cannot order events) natively. The
/// machine check itself is unit-tested on made-up inputs (src/record/order.rs).
#[test]
fn order_tsc_refused_where_it_cannot_apply() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let refused = |flags: &[&str]| {
        let out = Command::new(FRAGSIM)
            .arg("record")
            .args(flags)
            .args(["--order", "tsc", "-o"])
            .arg(&trace)
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: --order"), "{stderr}");
        assert!(!trace.exists());
    };
    refused(&["--with", "valgrind"]);
    if fragsim::record::tsc_order_unsupported_here().is_some() {
        common::build_preload();
        refused(&[]);
    }
}

/// Every order key of each thread of the raw file `raw`'s one image, in the thread's order,
/// by raw thread id; and the image's header flags.
fn raw_keys(raw: &Path) -> (u64, std::collections::BTreeMap<u32, Vec<u64>>) {
    let process = fragsim::record::parse(raw).unwrap();
    assert_eq!(process.images.len(), 1);
    let image = &process.images[0];
    let mut stacks = fragsim::record::Stacks::default();
    let mut keys = std::collections::BTreeMap::new();
    for (&tid, thread) in &image.threads {
        let mut cursor = process.cursor(thread, image.clock());
        let mut of_thread = Vec::new();
        while cursor.refill(&process, thread, &mut stacks).unwrap() {
            of_thread.push(cursor.current().unwrap().seq);
            cursor.advance();
        }
        keys.insert(tid, of_thread);
    }
    (image.flags, keys)
}

/// The default order (`auto`): sequence numbers while one thread records, TSC keys above
/// 2^55 from the second thread's first call on (preload/src/buf/order.rs), so every key of a
/// thread started later is a TSC key and the first thread's keys switch once; a program that
/// never starts a thread keeps sequence numbers. Where the TSC cannot order events, `auto`
/// is sequence numbers throughout.
#[test]
fn auto_order_switches_to_tsc_keys_at_the_second_thread() {
    const TSC_KEYS: u64 = 1 << 55;
    let dir = tempfile::tempdir().unwrap();
    let tsc_here = fragsim::record::tsc_order_unsupported_here().is_none();
    let threads = compile(dir.path(), "counting.c", &[]);
    let sub = dir.path().join("threads");
    std::fs::create_dir(&sub).unwrap();
    let run = record(&sub, &[], &[threads.to_str().unwrap()]);
    assert!(run.out.status.success());
    let (_, summary) = only_process(&run.raw);
    assert_eq!(summary.issues.total(), 0, "{:?}", summary.issues);
    let (flags, keys) = raw_keys(&raw_files(&run.raw)[0].1);
    assert_eq!(flags & 32 != 0, tsc_here, "the header's auto-order flag");
    assert_eq!(keys.len(), 5, "main and 4 workers");
    for (tid, k) in &keys {
        assert!(
            k.windows(2).all(|w| w[0] < w[1]),
            "thread {tid}'s keys increase"
        );
        let first_tsc = k.iter().position(|&k| k >= TSC_KEYS);
        if !tsc_here {
            assert_eq!(first_tsc, None, "thread {tid}");
        } else if *tid == 0 {
            // The main thread allocates before it starts the workers, and joins them after.
            let at = first_tsc.expect("the main thread's keys switch");
            assert!(at > 0, "the main thread's first keys are sequence numbers");
        } else {
            assert_eq!(
                first_tsc,
                Some(0),
                "thread {tid} records only after the switch"
            );
        }
    }
    let single = compile(dir.path(), "lifecycle.c", &[]);
    let sub = dir.path().join("single");
    std::fs::create_dir(&sub).unwrap();
    let run = record(&sub, &[], &[single.to_str().unwrap(), "alloc"]);
    assert!(run.out.status.success());
    let (flags, keys) = raw_keys(&raw_files(&run.raw)[0].1);
    assert_eq!(flags & 32 != 0, tsc_here);
    assert_eq!(keys.len(), 1);
    assert!(keys.values().flatten().all(|&k| k < TSC_KEYS), "{keys:?}");
}

/// A thread pool whose workers free what the main thread allocated (thread_pool.c): with
/// every order, each cross-thread free comes after its allocation and no address is handed
/// out again before its free (no repairs), and every job's memory is freed on a worker.
#[test]
fn cross_thread_frees_stay_in_order_with_every_order() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "thread_pool.c", &[]);
    for (sub, order) in order_dirs(dir.path(), "order") {
        let run = record(&sub, order, &[exe.to_str().unwrap(), "20000"]);
        assert!(run.out.status.success(), "{order:?}");
        let (records, summary) = only_process(&run.raw);
        assert_eq!(summary.issues.total(), 0, "{order:?}: {:?}", summary.issues);
        let mut owner = HashMap::new();
        let mut cross = 0;
        for r in &records {
            if let Record::Call(c) = r {
                match c.event {
                    Event::Alloc { id, .. } => {
                        owner.insert(id, c.thread);
                    }
                    Event::Free { id } => {
                        let by = owner.remove(&id).expect("freed after its allocation");
                        cross += u64::from(by != c.thread);
                    }
                    Event::Realloc { id, .. } => assert!(owner.contains_key(&id)),
                }
            }
        }
        // Each job is a header and a payload, both freed by the worker that ran it.
        assert!(cross >= 40000, "{order:?}: {cross} cross-thread frees");
    }
}

/// Threads beside the merge (`fragsim record` takes 2 decoders and the id thread on 4 cores
/// or more, so none on a 2-core machine: forced here with `FRAGSIM_DECODERS` and
/// `FRAGSIM_ID_THREAD`) change nothing: the trace converted while the program ran, with them,
/// is the raw file's conversion on one thread; converting the raw file on 1 to 8 threads (a
/// writer, the id thread, 1 or 2 decoders, the address table split over 1 to 3 shard
/// threads) writes the same bytes and the same summary; a corrupt event is the same error. On the 4-thread program, with stacks and without, on one
/// whose chunks start with a keyless event (a mapping) where jemalloc is installed, on a
/// program that a shell exec'd into (its objects released by the exec, in the id thread), on
/// one that execs itself without address randomisation (the new image's objects at the
/// addresses the exec released: a table that kept them would free them again), and on one
/// whose calls need every kind of repair (`repairs.c`).
#[test]
fn conversion_threads_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "threads_map.cpp", &[]);
    let churn = common::jemalloc_program(dir.path(), "mapping_churn", &[]);
    let life = compile(dir.path(), "lifecycle.c", &[]);
    let wrapper = dir.path().join("wrapper.sh");
    std::fs::write(&wrapper, "#!/bin/sh\nexec \"$@\"\n").unwrap();
    let exec = vec![
        "sh",
        wrapper.to_str().unwrap(),
        life.to_str().unwrap(),
        "alloc",
    ];
    let repairs = compile(dir.path(), "repairs.c", &[]);
    let mut again = without_aslr();
    let fixed = !again.is_empty();
    again.extend([life.to_str().unwrap(), "exec-self"]);
    // run0 stays the 4-thread program: the corrupt event below is put in its raw file.
    let mut runs = vec![
        (vec![exe.to_str().unwrap(), "30000"], &[][..], ""),
        (vec![exe.to_str().unwrap(), "30000"], &["--stacks"][..], ""),
        (exec, &[][..], ""),
        (vec![repairs.to_str().unwrap(), "40000"], &[][..], ""),
        (again, &[][..], ""),
    ];
    if let Some(churn) = &churn {
        let conf = "retain:false,dirty_decay_ms:0,muzzy_decay_ms:0";
        runs.push((vec![churn.to_str().unwrap(), "60000"], &[][..], conf));
    }
    for (i, (command, flags, conf)) in runs.into_iter().enumerate() {
        let sub = dir.path().join(format!("run{i}"));
        std::fs::create_dir(&sub).unwrap();
        let (trace, raw) = (sub.join("t.trace"), sub.join("raw"));
        let out = Command::new(FRAGSIM)
            .env("FRAGSIM_DECODERS", "2")
            .env("FRAGSIM_ID_THREAD", "1")
            .env("FRAGSIM_ADDRESS_SHARDS", "2")
            .env("MALLOC_CONF", conf)
            .args(["record", "-o"])
            .arg(&trace)
            .arg("--keep-raw")
            .arg(&raw)
            .args(flags)
            .arg("--")
            .args(&command)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let (records, summary) = only_process(&raw);
        let i = summary.issues;
        if command.contains(&"exec-self") {
            // (setarch,) the program twice, its 1,000 objects at the same addresses.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let firsts: Vec<&str> = stderr.lines().filter(|l| l.starts_with("0x")).collect();
            assert!(
                firsts.len() == 2 && (!fixed || firsts[0] == firsts[1]),
                "the same addresses again: {stderr}"
            );
            assert_eq!(summary.images, 2 + fixed as usize);
            assert!(summary.released_by_exec >= 1000, "{summary:?}");
            assert_eq!(i.total(), 0, "{i:?}");
        } else if command[0] == "sh" {
            assert_eq!(summary.images, 2, "the shell, then the program");
            assert!(summary.released_by_exec > 0, "the shell's objects");
        } else if command[0].ends_with("repairs") {
            // The program's 40,000 rounds each make one of every repair.
            let kinds = (i.free_of_unknown, i.realloc_of_unknown, i.duplicate_address);
            assert_eq!(kinds, (40000, 40000, 40000));
        } else {
            assert!(summary.events > 100_000, "{}", summary.events);
        }
        if !conf.is_empty() {
            assert!(summary.mappings > 50_000, "{}", summary.mappings);
        }
        assert_eq!(records_of(&trace), records, "{command:?} {flags:?}");
        let file = &raw_files(&raw)[0].1;
        let fields = fragsim::trace::Fields {
            threads: true,
            times: true,
            sites: !flags.is_empty(),
        };
        let convert = |threads: u32| {
            let out = sub.join(format!("on{threads}.trace"));
            let t = fragsim::record::convert_file_on(file, &out, fields, 0, threads).unwrap();
            let summary = serde_json::to_string(&t.summary).unwrap();
            (std::fs::read(out).unwrap(), summary)
        };
        let one = convert(1);
        for threads in 2..=8 {
            let on = convert(threads);
            assert!(on.0 == one.0, "{command:?} {flags:?}: {threads} threads");
            assert_eq!(on.1, one.1, "{command:?} {flags:?}: {threads} threads");
        }
        // `record --convert` of the kept folder takes the recording's threads too.
        let again = sub.join("again.trace");
        let out = Command::new(FRAGSIM)
            .env("FRAGSIM_DECODERS", "2")
            .env("FRAGSIM_ID_THREAD", "1")
            .env("FRAGSIM_ADDRESS_SHARDS", "3")
            .args(["record", "--convert"])
            .arg(&raw)
            .arg("-o")
            .arg(&again)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            records_of(&again),
            records,
            "{command:?} {flags:?}: --convert"
        );
    }
    // An unknown event kind in the third chunk of events: the same error, at the same offset.
    let file = &raw_files(&dir.path().join("run0/raw"))[0].1;
    let mut bytes = std::fs::read(file).unwrap();
    let (mut at, mut events_chunks) = (0, 0);
    while events_chunks < 3 {
        let kind = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
        let len = u64::from_le_bytes(bytes[at + 16..at + 24].try_into().unwrap()) as usize;
        if kind == 2 {
            events_chunks += 1;
            if events_chunks == 3 {
                // The first event's kind bits (0x1f) set to 31, no kind.
                bytes[at + 48] |= 0x1f;
            }
        }
        at += 48 + len;
    }
    let bad = dir.path().join("bad.raw");
    std::fs::write(&bad, &bytes).unwrap();
    let fields = fragsim::trace::Fields {
        threads: true,
        times: true,
        sites: false,
    };
    let error = |threads: u32| {
        let out = dir.path().join(format!("bad{threads}.trace"));
        let e = fragsim::record::convert_file_on(&bad, &out, fields, 0, threads).unwrap_err();
        assert!(!out.exists(), "no half-written trace");
        e.to_string()
    };
    let one = error(1);
    assert!(one.contains("unknown event kind 31"), "{one}");
    for threads in 2..=8 {
        assert_eq!(error(threads), one, "{threads} threads");
    }
}
