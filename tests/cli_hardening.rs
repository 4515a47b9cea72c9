//! Black-box checks of the built binary against the failures a newcomer found (issue 13):
//! closed pipes, full disks, `--out` onto links and devices, options checked before any work,
//! resource limits, interrupted reports, whole clap messages, JSON column order.
//! Every command here is small; the report runs use a tiny arena workload (about 2 s each).

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fragsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
}

fn run(args: &[&str]) -> Output {
    fragsim().args(args).output().expect("run fragsim")
}

/// Commands that finish in milliseconds and print something.
const QUICK: &[&[&str]] = &[
    &["classes"],
    &["classes", "--format", "json"],
    &["table", "--sizes", "24..=32:8", "--max-capacity", "64"],
    &["table", "--model", "d8485933", "--format", "csv"],
    &[
        "layout",
        "--array",
        "keys:8x1000",
        "--array",
        "vals:48x1000",
    ],
    &["arena", "--vectors", "1000", "--model-only"],
];

/// A small report: the fixed steps plus an arena scenario of 1,000 vectors measured once.
fn small_report(out: &Path) -> Vec<String> {
    [
        "report",
        "--arena-vectors",
        "1000",
        "--arena-runs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code 2, one line on stderr naming `names`, no panic.
fn assert_rejected(args: &[&str], names: &str) {
    let out = run(args);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains(names),
        "{args:?} should name {names}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

/// A closed pipe ends the program quietly: exit 0, or 141 / SIGPIPE as Unix tools do.
fn assert_quiet_pipe_end(args: &[&str], status: std::process::ExitStatus, stderr: &str) {
    use std::os::unix::process::ExitStatusExt;
    let ok = status.code() == Some(0) || status.code() == Some(141) || status.signal() == Some(13);
    assert!(ok, "{args:?}: {status:?}: {stderr}");
    assert!(stderr.is_empty(), "{args:?} should say nothing: {stderr}");
}

fn wait_with_stderr(mut child: Child) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        pipe.read_to_string(&mut stderr).unwrap();
    }
    (child.wait().unwrap(), stderr)
}

#[test]
fn pipe_closed_before_the_first_write_is_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let validate_out = dir.path().join("v");
    let validate: &[&str] = &["validate", "--out", validate_out.to_str().unwrap()];
    for args in QUICK.iter().copied().chain([validate]) {
        let mut child = fragsim()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before the program has started up, so its first write meets a closed pipe.
        drop(child.stdout.take());
        let (status, stderr) = wait_with_stderr(child);
        assert_quiet_pipe_end(args, status, &stderr);
    }
}

#[test]
fn pipe_closed_after_one_line_is_quiet() {
    // About 1 MB of table: more than a pipe holds, so the program is still writing.
    let args: &[&str] = &[
        "table",
        "--sizes",
        "8..=4096:8",
        "--max-capacity",
        "1048576",
    ];
    let mut child = fragsim()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("F14"), "{line}");
    drop(reader);
    let (status, stderr) = wait_with_stderr(child);
    assert_quiet_pipe_end(args, status, &stderr);
}

#[test]
fn report_into_a_closed_pipe_is_quiet_and_leaves_no_partial_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let args = small_report(&out);
    let mut child = fragsim()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let (status, stderr) = wait_with_stderr(child);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_quiet_pipe_end(&args, status, &stderr);
    // Either the whole report or nothing: never a folder without its index.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    if out.exists() {
        assert!(out.join("README.md").exists());
        assert_eq!(entries.len(), 1);
    } else {
        assert!(entries.is_empty(), "left behind: {entries:?}");
    }
}

/// Runs `args` with standard output on /dev/full.
fn run_into_full_disk(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    fragsim()
        .args(args)
        .stdout(Stdio::from(full))
        .output()
        .unwrap()
}

#[test]
fn full_disk_on_stdout_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let validate_out = dir.path().join("v");
    let validate: &[&str] = &["validate", "--out", validate_out.to_str().unwrap()];
    for args in QUICK.iter().copied().chain([validate]) {
        let out = run_into_full_disk(args);
        let stderr = stderr_of(&out);
        assert!(
            !out.status.success() && out.status.code().is_some(),
            "{args:?}: {:?}",
            out.status
        );
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("No space left"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn report_onto_a_full_disk_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let args = small_report(&out);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let result = run_into_full_disk(&args);
    let stderr = stderr_of(&result);
    assert!(!result.status.success(), "{stderr}");
    assert_ne!(result.status.code(), Some(101), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn out_onto_a_symlink_writes_the_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.csv");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink("target.csv", &link).unwrap();
    let out = run(&[
        "classes",
        "--format",
        "csv",
        "--out",
        link.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.starts_with("index,size,kind"), "{text}");

    // A dangling link: its target is created, the link stays.
    let dangling = dir.path().join("dangling.csv");
    std::os::unix::fs::symlink("created.csv", &dangling).unwrap();
    let out = run(&[
        "classes",
        "--format",
        "csv",
        "--out",
        dangling.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(dir.path().join("created.csv"))
        .unwrap()
        .starts_with("index,size,kind"));
    // Nothing else: no temporary files left over.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
}

#[test]
fn out_onto_a_fifo_writes_into_it_and_keeps_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let reader_path = fifo.clone();
    // Opening a FIFO for reading waits for a writer; if fragsim never opens it (it replaced
    // it instead), this thread just stays blocked until the test process ends.
    let reader = std::thread::spawn(move || std::fs::read_to_string(reader_path).unwrap());
    let out = run(&[
        "classes",
        "--format",
        "csv",
        "--out",
        fifo.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let text = reader.join().unwrap();
    assert!(text.starts_with("index,size,kind"), "{text}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn out_errors_name_the_users_path_not_a_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-folder/t.csv");
    assert_rejected(
        &["classes", "--out", missing.to_str().unwrap()],
        "no-such-folder/t.csv",
    );
    let out = run(&["classes", "--out", missing.to_str().unwrap()]);
    assert!(
        !stderr_of(&out).contains(".fragsim-"),
        "{}",
        stderr_of(&out)
    );
    assert_rejected(
        &["classes", "--out", dir.path().to_str().unwrap()],
        "folder",
    );
    let out = run(&["classes", "--out", "/dev/full"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("/dev/full"), "{}", stderr_of(&out));
    assert!(!std::fs::metadata("/dev/full").unwrap().is_file());
}

#[test]
fn options_that_do_not_apply_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, [0u8, 159, 146, 150, 255]).unwrap();
    let seed = ["table", "--model", "d8485933"];
    for (extra, names) in [
        (&["--sizes", "8..=16:8"][..], "--sizes"),
        (&["--max-capacity", "0"][..], "--max-capacity"),
        (&["--value-align", "3"][..], "--value-align"),
    ] {
        let args: Vec<&str> = seed.iter().chain(extra).copied().collect();
        let out = run(&args);
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
    // --seed-file belongs to the seed model only; under the physical model it was ignored.
    let out = run(&["table", "--seed-file", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("--seed-file"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn zero_counts_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    for args in [
        &["arena", "--runs", "0", "--vectors", "1000"][..],
        &["arena", "--vectors", "0"][..],
        &["arena", "--elements", "0"][..],
    ] {
        assert_rejected(args, "0");
    }
    for flag in ["--arena-vectors", "--arena-runs"] {
        let result = run(&["report", flag, "0", "--out", out.to_str().unwrap()]);
        let stderr = stderr_of(&result);
        assert_eq!(result.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains('0'), "{stderr}");
        // Checked before the first file: nothing written.
        assert!(!out.exists(), "{flag} 0 wrote a partial report");
    }
}

#[test]
fn bad_names_and_targets_are_rejected_before_any_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    // The default workload measures a million vectors five times (seconds); these must fail
    // at once.
    for (args, names) in [
        (
            vec!["arena", "--name", "../evil", "--out", d.to_str().unwrap()],
            "../evil",
        ),
        (vec!["arena", "--out", "/proc/nope"], "/proc/nope"),
        // A report over a device: refused before the job, not after it.
        (vec!["report", "--out", "/dev/null"], "/dev/null"),
        (
            vec![
                "validate",
                "--variant",
                "../x",
                "--out",
                d.to_str().unwrap(),
            ],
            "../x",
        ),
        (
            vec!["validate", "--variant", "", "--out", d.to_str().unwrap()],
            "variant",
        ),
    ] {
        let start = Instant::now();
        assert_rejected(&args, names);
        assert!(
            start.elapsed() < Duration::from_millis(300),
            "{args:?} took {:?}: checked after the work",
            start.elapsed()
        );
    }
    assert!(!d.exists());
    assert!(!dir.path().join("evil.md").exists());
}

#[test]
fn seed_file_with_a_repeated_row_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("dup.csv");
    std::fs::write(
        &seed,
        "value_size,footprint_change\n48,1.1\n64,1.0\n48,1.2\n",
    )
    .unwrap();
    assert_rejected(
        &[
            "table",
            "--model",
            "d8485933",
            "--seed-file",
            seed.to_str().unwrap(),
        ],
        "48",
    );
}

#[test]
fn oversized_tables_are_refused_up_front() {
    for args in [
        &[
            "table",
            "--sizes",
            "1..=1073741824:1",
            "--max-capacity",
            "2",
        ][..],
        &[
            "table",
            "--sizes",
            "1..=1000000:1",
            "--max-capacity",
            "1099511627776",
        ][..],
    ] {
        let start = Instant::now();
        assert_rejected(args, "rows");
        assert!(start.elapsed() < Duration::from_secs(1), "{args:?}");
    }
}

/// MemAvailable from /proc/meminfo, in bytes.
fn available_memory() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = info
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn arena_larger_than_memory_is_refused_and_the_model_is_closed_form() {
    // Four times the available memory (each vector costs 448 B): refused before allocating.
    let vectors = (available_memory() * 4 / 448).to_string();
    let start = Instant::now();
    assert_rejected(&["arena", "--vectors", &vectors], "memory");
    assert!(start.elapsed() < Duration::from_secs(1));
    // The prediction alone is arithmetic, whatever the count (10^12 one-byte vectors took
    // 12 minutes when the arena's chunks were replayed one vector at a time).
    let start = Instant::now();
    let out = run(&[
        "arena",
        "--vectors",
        "1000000000000",
        "--elements",
        "1",
        "--elem-bytes",
        "1",
        "--model-only",
    ]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    // Ideal bytes by hand: 10^12 vectors of 1 B plus a 24-byte Vec header each.
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        // Markdown writes it for people: 25 x 10^12 / 2^40 = 22.74 TiB.
        text.contains("| general allocator | 25,000,000,000,000 (22.74 TiB) |"),
        "{text}"
    );
}

#[test]
fn clap_messages_are_kept_whole() {
    let out = run(&["layout"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--array"), "{}", stderr_of(&out));
    let out = run(&["classes", "--formt", "csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--format"), "{}", stderr_of(&out));
}

#[test]
fn json_keys_follow_the_column_order() {
    let out = run(&["classes", "--format", "json"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let columns: Vec<&str> = doc["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    // The first row's keys, in the order the text gives them.
    let first_row = &text[text.find("\"rows\"").unwrap()..];
    let first_row = &first_row[..first_row.find('}').unwrap()];
    let mut at: Vec<(usize, &str)> = columns
        .iter()
        .map(|c| (first_row.find(&format!("\"{c}\"")).unwrap(), *c))
        .collect();
    at.sort();
    let order: Vec<&str> = at.iter().map(|(_, c)| *c).collect();
    assert_eq!(order, columns);
}

#[test]
fn validate_writes_nothing_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/validation.md");
    let before = std::fs::read(&committed).unwrap();
    for preset in [None, Some("quantum8")] {
        let mut command = fragsim();
        command.current_dir(dir.path()).arg("validate");
        if let Some(p) = preset {
            command.args(["--preset", p]);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr_of(&out)
        );
        assert_eq!(std::fs::read(&committed).unwrap(), before, "{preset:?}");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }
}

use common::children_of;

fn interrupt(child: &Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// An old report with a marker index, to see that an interrupted run leaves it as it was.
fn old_report(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("r1");
    std::fs::create_dir_all(out.join("charts")).unwrap();
    std::fs::write(out.join("README.md"), "old index").unwrap();
    std::fs::write(out.join("stale.csv"), "old").unwrap();
    // A previous report lists its files (issue 18): only those are replaced.
    std::fs::write(
        out.join(".fragsim-report"),
        "# old\nREADME.md\nstale.csv\n.fragsim-report\n",
    )
    .unwrap();
    out
}

fn assert_old_report_intact(dir: &Path, out: &Path) {
    assert_eq!(
        std::fs::read_to_string(out.join("README.md")).unwrap(),
        "old index"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("stale.csv")).unwrap(),
        "old"
    );
    let files: Vec<String> = files_under(out, "").into_iter().map(|f| f.0).collect();
    assert_eq!(
        files,
        [".fragsim-report", "README.md", "stale.csv"],
        "the old report was changed"
    );
    assert!(std::fs::read_dir(out.join("charts"))
        .unwrap()
        .next()
        .is_none());
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["r1"], "a temporary folder was left behind");
}

#[test]
fn interrupted_report_leaves_the_old_one_intact() {
    let dir = tempfile::tempdir().unwrap();
    let out = old_report(dir.path());
    // A bump-arena workload that takes a second or more, so the job is still running when
    // the interrupt comes.
    let args = [
        "report",
        "--arena-vectors",
        "300000",
        "--arena-runs",
        "3",
        "--out",
        out.to_str().unwrap(),
    ];
    let child = fragsim()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the new report has its first files (in its temporary folder).
    let start = Instant::now();
    let building = loop {
        let staging = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("classes-5.3.0.csv").exists());
        if staging.is_some() || start.elapsed() > Duration::from_secs(30) {
            break staging;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(building.is_some(), "the report never started writing");
    interrupt(&child);
    let (status, stderr) = wait_with_stderr(child);
    assert!(!status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_old_report_intact(dir.path(), &out);
}

#[test]
fn interrupted_report_stops_its_child() {
    let dir = tempfile::tempdir().unwrap();
    let out = old_report(dir.path());
    // Large enough that the decay-off child runs for a second or so.
    let args = [
        "report",
        "--arena-vectors",
        "200000",
        "--arena-runs",
        "3",
        "--out",
        out.to_str().unwrap(),
    ];
    let child = fragsim()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // The report's only child process is the decay-off bump-arena run.
    let seen = loop {
        let children = children_of(child.id());
        if !children.is_empty() || start.elapsed() > Duration::from_secs(30) {
            break children;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!seen.is_empty(), "the decay-off child never started");
    interrupt(&child);
    let (status, stderr) = wait_with_stderr(child);
    assert!(!status.success(), "{stderr}");
    std::thread::sleep(Duration::from_millis(200));
    for pid in seen {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "child {pid} still runs"
        );
    }
    assert_old_report_intact(dir.path(), &out);
}

#[test]
fn a_finished_report_replaces_the_old_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let real = old_report(dir.path());
    // A variant validation from scripts/validate-variants.sh is not the report's: it stays.
    std::fs::write(real.join("validation-mine.md"), "variant").unwrap();
    // Reached through a symbolic link, which must stay one.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink("r1", &link).unwrap();
    let result = fragsim().args(small_report(&link)).output().unwrap();
    assert!(
        result.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr_of(&result)
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(
        !real.join("stale.csv").exists(),
        "a stale file from the old report survived"
    );
    assert_eq!(
        std::fs::read_to_string(real.join("validation-mine.md")).unwrap(),
        "variant"
    );
    assert!(std::fs::read_to_string(real.join("README.md"))
        .unwrap()
        .starts_with("# fragsim reports"));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["link", "r1"]);
}

/// Every file under `dir` (relative path, bytes), skipping `skip` folders.
fn files_under(dir: &Path, skip: &str) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                if rel != skip {
                    stack.push(path);
                }
            } else {
                files.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// A stand-in fragsim project in `dir`: a Cargo.toml naming the package, and a subfolder `src`.
fn stand_in_project(dir: &Path) -> std::path::PathBuf {
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"fragsim\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    let sub = dir.join("src");
    std::fs::create_dir(&sub).unwrap();
    sub
}

#[test]
fn two_reports_are_identical_outside_the_timing_folder() {
    // One report into `--out a`, one with no `--out` from a stand-in project's subfolder,
    // which lands in that project's reports/ (one run less than testing each apart).
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let sub = stand_in_project(&project);
    let b = project.join("reports");
    let result = fragsim().args(small_report(&a)).output().unwrap();
    assert!(
        result.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr_of(&result)
    );
    let result = fragsim()
        .current_dir(&sub)
        .args(["report", "--arena-vectors", "1000", "--arena-runs", "1"])
        .output()
        .unwrap();
    assert!(
        result.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr_of(&result)
    );
    assert!(b.join("README.md").exists());
    assert!(!sub.join("reports").exists());
    let (fa, fb) = (files_under(&a, "timing"), files_under(&b, "timing"));
    assert_eq!(
        fa.iter().map(|f| &f.0).collect::<Vec<_>>(),
        fb.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(x == y, "{name} differs between two runs");
    }
    // The measured times are somewhere, and the index says where.
    assert!(a.join("timing").is_dir());
    let index = std::fs::read_to_string(a.join("README.md")).unwrap();
    assert!(index.contains("timing/"), "{index}");
}

#[test]
fn outside_a_project_the_report_needs_out() {
    // Outside any fragsim project there is no default: say so, write nothing.
    let outside = tempfile::tempdir().unwrap();
    let out = fragsim()
        .current_dir(outside.path())
        .args(["report", "--arena-vectors", "1000", "--arena-runs", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("--out"), "{}", stderr_of(&out));
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}
