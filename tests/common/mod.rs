//! Helpers the black-box tests of issue 18 share (`mod common;` in each test file): running
//! the binary, and the special files a user may name as an output: FIFOs, device nodes,
//! symbolic links.
#![allow(dead_code)] // each test file uses its own part

pub mod sealed;

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary (it carries the recorder library, `build.rs`: nothing to build beside it).
pub fn fragsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
}

/// Nothing since the binary carries the recorder library (issue 39 §4); kept for the callers.
pub fn build_preload() {}

pub fn run(args: &[&str]) -> Output {
    fragsim().args(args).output().expect("run fragsim")
}

/// `run` with extra environment variables.
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    fragsim()
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run fragsim")
}

/// The standard output of a run that must succeed.
pub fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn s(path: &Path) -> &str {
    path.to_str().expect("UTF-8 test path")
}

/// Exit code 2, one line on stderr naming `names`, no panic.
pub fn assert_refused(out: &Output, names: &str) {
    assert_refused_naming(out, &[names]);
}

/// Exit code 2, one line on stderr naming each of `names`, no panic.
pub fn assert_refused_naming(out: &Output, names: &[&str]) {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for name in names {
        assert!(stderr.contains(name), "should name {name}: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A small consistent text trace (hand-written: two objects, a realloc, both freed).
pub fn text_trace(dir: &Path) -> PathBuf {
    let path = dir.join("small.txt");
    std::fs::write(&path, "a 0 24\na 1 40\nr 0 100\nf 1\nf 0\n").unwrap();
    path
}

/// The same trace in the binary form (through `fragsim trace import`).
pub fn binary_trace(dir: &Path) -> PathBuf {
    let text = text_trace(dir);
    let path = dir.join("small.trace");
    import_text(&text, &path);
    path
}

/// The arguments of `fragsim trace import --from FROM INPUT -o TRACE`.
pub fn import_args<'a>(from: &'a str, input: &'a Path, trace: &'a Path) -> Vec<&'a str> {
    vec!["trace", "import", "--from", from, s(input), "-o", s(trace)]
}

/// `fragsim trace import --from FROM INPUT -o TRACE` (its outcome, good or bad).
pub fn import_from(from: &str, input: &Path, trace: &Path) -> Output {
    run(&import_args(from, input, trace))
}

/// Imports the text trace `text` into `trace`, which must succeed.
pub fn import_text(text: &Path, trace: &Path) {
    let out = import_from("text", text, trace);
    assert!(out.status.success(), "{}", stderr_of(&out));
}

/// `fragsim trace dump TRACE`, which must succeed.
pub fn dump(trace: &Path) -> String {
    run_ok(&["trace", "dump", s(trace)])
}

/// A `stat NAME VALUE` line a test program printed (its own jemalloc statistic).
pub fn program_stat(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("stat {name} ")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .parse()
        .unwrap()
}

/// A row of a Markdown summary table (`| final resident bytes | 995,749,888 (949.62 MiB) |`:
/// Markdown writes numbers for people), as a whole number.
pub fn summary_row(text: &str, row: &str) -> u64 {
    let cell = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("| {row} | ")))
        .unwrap_or_else(|| panic!("no '{row}' in {text}"))
        .trim_end_matches(" |");
    let exact = cell.split(" (").next().unwrap_or(cell).replace(',', "");
    exact
        .parse::<f64>()
        .unwrap_or_else(|e| panic!("'{cell}': {e}")) as u64
}

/// The arguments of `fragsim record --with valgrind -o TRACE -- PROGRAM...`.
pub fn record_valgrind_args<'a>(trace: &'a Path, program: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["record", "--with", "valgrind", "-o", s(trace), "--"];
    args.extend_from_slice(program);
    args
}

/// `fragsim record --with valgrind -o TRACE -- PROGRAM...` (its outcome).
pub fn record_valgrind(trace: &Path, program: &[&str]) -> Output {
    run(&record_valgrind_args(trace, program))
}

/// A trace committed under `data/traces/`.
pub fn committed_trace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/traces")
        .join(name)
}

/// The binary trace format's magic, the first bytes of every binary trace.
pub const TRACE_MAGIC: &[u8] = b"FSIMTRC\0";

pub fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

pub fn is_fifo(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

pub fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

pub fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// A private character device `major:minor` at `path` (1:3 is a null device, 1:7 a full
/// one), or `false` with a message when this process may not make one (not root).
pub fn mknod_char(path: &Path, major: u32, minor: u32) -> bool {
    let made = Command::new("mknod")
        .arg(path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: cannot make a device node (needs root)");
    }
    made
}

/// Reads everything written into the FIFO at `path`, in a thread (opening blocks until a
/// writer comes).
pub fn drain_fifo(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        bytes
    })
}

/// Names in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Processes whose parent is `parent` (from /proc/PID/stat: "pid (comm) state ppid ...").
pub fn children_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(after_comm) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let ppid = after_comm.split_whitespace().nth(1);
        if ppid.and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// Whether process `pid` is gone (or a zombie waiting for its parent).
pub fn is_gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z "))
}

/// Waits up to `limit` for `done`, polling.
pub fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// Sends `signal` (e.g. "INT", "TERM") to `child`.
pub fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// Whether valgrind is installed (the recording tests skip with a message otherwise).
pub fn have_valgrind() -> bool {
    let found = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: valgrind is not installed");
    }
    found
}

/// The JSON a run that must succeed prints on standard output.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let text = run_ok(args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"))
}

/// Standard error (and output) of `fragsim ARGS` run on a pseudo-terminal (util-linux
/// `script`), or `None` with a message where `script` is missing.
pub fn run_on_terminal(args: &[&str]) -> Option<String> {
    build_preload();
    let mut line = String::from(env!("CARGO_BIN_EXE_fragsim"));
    for arg in args {
        line.push_str(&format!(" '{}'", arg.replace('\'', r"'\''")));
    }
    // Bars appear after a second; here at once, so a fast machine still draws one.
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("FRAGSIM_PROGRESS_AFTER_MS", "0")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.code().is_some() => {
            assert!(out.status.success(), "{args:?}: {}", stdout_of(&out));
            Some(stdout_of(&out))
        }
        _ => {
            eprintln!("skipped: util-linux `script` is not installed");
            None
        }
    }
}

/// One CSV row by column name.
pub type Row = std::collections::HashMap<String, String>;

/// A CSV table (one header line, quoted cells allowed) as rows by column name.
pub fn csv_rows(text: &str) -> Vec<Row> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.expect("a CSV row as long as the header");
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// A row's cell as a whole number.
pub fn num(row: &Row, column: &str) -> u64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column}: '{}'", row[column]))
}

/// Debian's jemalloc 5.3.0 (`libjemalloc2`), which the native test programs link.
pub const DEBIAN_JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

/// `tests/native_programs/NAME.c` compiled into `dir`, linked with Debian's jemalloc (and
/// `extra` arguments); `None`, saying so, where that library or `cc` is missing.
pub fn jemalloc_program(dir: &Path, name: &str, extra: &[&str]) -> Option<PathBuf> {
    let cc = Command::new("cc").arg("--version").output().is_ok();
    if !Path::new(DEBIAN_JEMALLOC).exists() || !cc {
        eprintln!("skipped: needs {DEBIAN_JEMALLOC} (apt-get install libjemalloc2) and cc");
        return None;
    }
    let exe = dir.join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/native_programs/{name}.c"));
    let built = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(DEBIAN_JEMALLOC)
        .args(extra)
        .output()
        .unwrap();
    assert!(built.status.success(), "{name}.c: {}", stderr_of(&built));
    Some(exe)
}

/// The figures a recorded program prints (`stat NAME VALUE`) beside the rows of `replay
/// --process`'s summary that hold them, the first two compared by most tests.
pub const FINAL_FIGURES: [(&str, &str); 3] = [
    ("stats.allocated", "final allocated bytes"),
    ("stats.active", "final active bytes"),
    ("stats.mapped", "final mapped bytes (stats.mapped)"),
];

/// Replay flags for a recording of a program on Debian's jemalloc 5.3.0: its address width,
/// 48 bits (`LG_VADDR` is fixed where the library is built: measured on a machine with 57,
/// the library's arena 0 starts with a 2,734,064-byte base, which holds a 48-bit build's
/// 2 MiB radix-tree leaf; a 57-bit build's base starts under 2 MiB). Without it the model
/// takes this machine's width.
pub const DEBIAN_530_BUILD: [&str; 2] = ["--vaddr-bits", "48"];

/// `replay TRACE --process --preset default` with `extra` arguments: its summary.
pub fn replay_process(trace: &Path, extra: &[&str]) -> String {
    let mut args = vec!["replay", s(trace), "--process", "--preset", "default"];
    args.extend_from_slice(extra);
    run_ok(&args)
}

/// Asserts that each of `figures` in the summary `replay` equals the program's own (`real`,
/// its `stat` lines).
pub fn assert_figures(replay: &str, real: &str, figures: &[(&str, &str)], context: &str) {
    for (name, row) in figures {
        assert_eq!(
            summary_row(replay, row),
            program_stat(real, name),
            "{name} {context}"
        );
    }
}
