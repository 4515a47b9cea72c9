//! `fragsim record -o TRACE -- PROGRAM ARGS...`: run a program under valgrind's malloc tracing
//! and import what it printed.

use super::trace::{import_note, import_valgrind_file};
use crate::export::OutputFile;
use crate::trace::{ValgrindOptions, ValgrindSummary};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::ffi::{OsStr, OsString};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

#[derive(Args, Debug)]
pub(crate) struct RecordArgs {
    /// The binary trace to write (atomically).
    #[arg(short = 'o', long = "out")]
    pub(super) out: PathBuf,
    /// Replace an existing -o file that is not a fragsim trace (refused otherwise: it may be
    /// the user's own file).
    #[arg(long)]
    force: bool,
    /// Make inconsistent calls in valgrind's log errors.
    #[arg(long)]
    strict: bool,
    /// Keep valgrind's log here (by default it is a temporary file, removed unless the import
    /// fails).
    #[arg(long)]
    keep_log: Option<PathBuf>,
    /// The recorder: `native` (fragsim's LD_PRELOAD library: threads, times, stacks) or
    /// `valgrind` (--trace-malloc=yes).
    #[arg(long = "with", value_enum, default_value_t = super::record_native::Recorder::Native)]
    pub(super) with: super::record_native::Recorder,
    #[command(flatten)]
    pub(super) native: super::record_native::NativeArgs,
    /// Convert the raw files a native recording left in this folder (stopped by a second
    /// interrupt, or --keep-raw) into -o's trace, its children's into TRACE.<pid>; runs nothing.
    #[arg(long, value_name = "RAWDIR", conflicts_with_all = ["with", "strict", "keep_log"])]
    pub(super) convert: Option<PathBuf>,
    /// The program and its arguments (after --), passed on byte for byte (any encoding).
    #[arg(
        required_unless_present = "convert",
        conflicts_with = "convert",
        last = true,
        value_parser = clap::value_parser!(OsString)
    )]
    pub(super) command: Vec<OsString>,
}

/// Fewer allocation calls than this from a whole program is suspicious: a shell wrapper
/// (pyenv's `python3` shim records 263 events) that execs the real program, which valgrind
/// then does not follow.
const FEW_CALLS: u64 = 1000;

pub fn run(args: RecordArgs) -> Result<i32> {
    if let Some(dir) = &args.convert {
        check_outputs(&args, &[])?;
        return super::record_native::convert(&args, dir);
    }
    // valgrind runs the program's threads one at a time and logs its calls in that order:
    // `seq` in effect, and so `auto` too.
    if args.with == super::record_native::Recorder::Valgrind
        && args.native.order == super::record_native::Order::Tsc
    {
        bail!(
            "--order tsc orders the native recorder's events: it does not apply to --with valgrind"
        );
    }
    let valgrind = if args.with == super::record_native::Recorder::Valgrind {
        Some(find_valgrind().context(
            "valgrind is not installed (install it with `apt-get install valgrind` or your system's package manager)",
        )?)
    } else {
        None
    };
    let program = args.command[0].to_string_lossy().into_owned();
    let program_path = find_program(&args.command[0])
        .with_context(|| format!("program '{program}' not found (neither a file nor on PATH)"))?;
    // The program reads its arguments that are files: none of them is an output either.
    let mut inputs = vec![("the program".to_string(), program_path.clone())];
    for arg in &args.command[1..] {
        let path = PathBuf::from(arg);
        if path.is_file() {
            inputs.push(("the program's argument".to_string(), path));
        }
    }
    check_outputs(&args, &inputs)?;
    if args.with == super::record_native::Recorder::Native {
        if args.keep_log.is_some() {
            bail!("--keep-log keeps valgrind's log: it applies to --with valgrind only");
        }
        return super::record_native::run(&args);
    }
    let valgrind = valgrind.expect("found above for --with valgrind");
    record_valgrind(&args, &valgrind, &program, &program_path)
}

/// `record --with valgrind`: the program under valgrind, its log imported as the trace.
fn record_valgrind(
    args: &RecordArgs,
    valgrind: &Path,
    program: &str,
    program_path: &Path,
) -> Result<i32> {
    if let Some(interpreter) = script_interpreter(program_path) {
        super::output::print_error(&format!(
            "warning: '{program}' is a script ({interpreter}): valgrind records its interpreter, and a program it starts with exec is not recorded"
        ));
    }
    // Both outputs are checked (and their temporary files made) before the program runs.
    let trace_out = super::trace::create_trace(&args.out)?;
    let keep_log = args
        .keep_log
        .as_deref()
        .map(OutputFile::create)
        .transpose()?;
    let log_dir = tempfile::Builder::new()
        .prefix("fragsim-record-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let _remove_log = crate::cleanup::remove_on_interrupt(log_dir.path());
    let (pid, status, log) = run_valgrind(args, valgrind, log_dir.path())?;
    if let Some(out) = keep_log {
        copy_log(&log, out)?;
    }
    let file = std::fs::File::open(&log)
        .with_context(|| format!("valgrind wrote no log for '{program}' ({status})"))?;
    let name = args
        .keep_log
        .as_ref()
        .map_or_else(|| "valgrind's log".to_string(), |p| p.display().to_string());
    let options = ValgrindOptions {
        pid: Some(pid),
        strict: args.strict,
    };
    let imported = import_valgrind_file(
        BufReader::with_capacity(1 << 16, file),
        &name,
        &options,
        trace_out,
    );
    let (header, summary) = match imported {
        Ok(done) => done,
        Err(err) if args.keep_log.is_none() => {
            // The log is what the user needs to see why: kept, and named.
            let kept = log_dir.keep();
            return Err(err.context(format!(
                "valgrind's log is kept at '{}'",
                kept.join("valgrind.log").display()
            )));
        }
        Err(err) => return Err(err),
    };
    super::output::print_error(&import_note(&name, &args.out, &header, &summary));
    if args.native.follow_forks {
        import_children(args, log_dir.path(), pid)?;
    } else {
        warn_about_children(args, &summary, pid, log_dir);
    }
    warn_about_few_calls(&summary, program, args.native.follow_forks);
    let code = exit_status_code(status);
    if code != 0 {
        super::output::print_error(&format!(
            "note: '{program}' exited with {status}; the trace holds what it allocated until then"
        ));
    }
    Ok(code)
}

/// Runs the program under valgrind, its log in `log_dir`: valgrind's PID (the program's
/// lines in the log carry it), its exit status and the log of the program itself.
fn run_valgrind(
    args: &RecordArgs,
    valgrind: &Path,
    log_dir: &Path,
) -> Result<(u32, ExitStatus, PathBuf)> {
    // Following children, one log per process (`%p`): an exec'd child would truncate a
    // shared log, and processes would interleave within a line.
    let log_arg = if args.native.follow_forks {
        log_dir.join("valgrind.%p.log")
    } else {
        log_dir.join("valgrind.log")
    };
    // The program's own stdin/stdout/stderr pass through; valgrind's output goes to the log.
    let mut child = crate::cleanup::GuardedChild::spawn(
        Command::new(valgrind)
            .arg("--trace-malloc=yes")
            // No gdbserver: its FIFOs (vgdb-pipe-*) go into the temporary folder, and a
            // valgrind interrupted while starting leaves them there.
            .arg("--vgdb=no")
            .arg(format!(
                "--trace-children={}",
                if args.native.follow_forks {
                    "yes"
                } else {
                    "no"
                }
            ))
            .arg(format!("--log-file={}", log_arg.display()))
            .args(&args.command),
    )
    .with_context(|| format!("cannot run '{}'", valgrind.display()))?;
    // valgrind runs the program in its own process: the log's lines of this PID are the
    // program's; other PIDs are children it forked.
    let pid = child.id();
    let status = child
        .wait()
        .with_context(|| format!("cannot wait for '{}'", valgrind.display()))?;
    drop(child);
    let log = if args.native.follow_forks {
        log_dir.join(format!("valgrind.{pid}.log"))
    } else {
        log_arg
    };
    Ok((pid, status, log))
}

/// `--follow-forks` under valgrind: each other process's log (`valgrind.<pid>.log`) into
/// `OUT.<pid>`, as the native recorder names them.
fn import_children(args: &RecordArgs, log_dir: &Path, root: u32) -> Result<()> {
    let mut children: Vec<(u32, PathBuf)> = std::fs::read_dir(log_dir)
        .context("valgrind's logs")?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid = name.strip_prefix("valgrind.")?.strip_suffix(".log")?;
            let pid: u32 = pid.parse().ok()?;
            (pid != root).then(|| (pid, e.path()))
        })
        .collect();
    children.sort();
    for (child, log) in children {
        let path = PathBuf::from(format!("{}.{child}", args.out.display()));
        let out = super::trace::create_trace(&path)?;
        let file = std::fs::File::open(&log).context("valgrind's log")?;
        let options = ValgrindOptions {
            pid: Some(child),
            strict: args.strict,
        };
        let name = format!("valgrind's log of PID {child}");
        let (header, summary) = import_valgrind_file(
            BufReader::with_capacity(1 << 16, file),
            &name,
            &options,
            out,
        )?;
        super::output::print_error(&format!(
            "child {child}: {}",
            import_note(&name, &path, &header, &summary)
        ));
    }
    Ok(())
}

/// Children left in the log (which is then kept): how to record or import them.
fn warn_about_children(
    args: &RecordArgs,
    summary: &ValgrindSummary,
    pid: u32,
    log_dir: tempfile::TempDir,
) {
    if summary.other_pids.is_empty() {
        return;
    }
    let others: Vec<String> = summary.other_pids.iter().map(u32::to_string).collect();
    let log = match &args.keep_log {
        Some(path) => path.clone(),
        None => log_dir.keep().join("valgrind.log"),
    };
    super::output::print_error(&format!(
        "warning: the trace holds PID {pid} only; its children (PIDs {}) are in the log kept at '{}': record with --follow-forks for one trace per process ({}.<pid>), or `fragsim trace import --from valgrind --pid PID '{}' -o OUT`",
        others.join(", "),
        log.display(),
        args.out.display(),
        log.display()
    ));
}

/// Every check of the outputs, before the program runs: none is one of `inputs` (the program
/// and its arguments that are files) or another output; each can be written (its folder
/// exists, it is no folder, a device takes a write); and `-o` replaces no file of the user's
/// (an existing file that is not a fragsim trace needs `--force`).
fn check_outputs(args: &RecordArgs, inputs: &[(String, PathBuf)]) -> Result<()> {
    let inputs: Vec<(&str, &Path)> = inputs
        .iter()
        .map(|(w, p)| (w.as_str(), p.as_path()))
        .collect();
    super::args::refuse_outputs_over_inputs(
        &inputs,
        &[
            ("-o", Some(&args.out)),
            ("--keep-log", args.keep_log.as_deref()),
        ],
    )?;
    for out in std::iter::once(&args.out).chain(&args.keep_log) {
        crate::export::check_output(out)?;
    }
    super::args::refuse_replacing_non_trace(&args.out, args.force)
}

/// Too few calls for a real program: a wrapper that execs it, most likely.
fn warn_about_few_calls(summary: &ValgrindSummary, program: &str, following: bool) {
    if summary.calls < FEW_CALLS {
        super::output::print_error(&format!(
            "warning: only {} allocation calls recorded: if '{program}' starts the real program with exec (a shell wrapper such as pyenv's shim), record that program instead{}",
            summary.calls,
            if following { "" } else { ", or record with --follow-forks" }
        ));
    }
}

/// The exit code a shell would report for a child that ended with `status`: its own code, or
/// 128 + N when signal N killed it (as `time` and `valgrind` pass it on).
pub(crate) fn exit_status_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// Copies valgrind's log to the `--keep-log` output.
fn copy_log(log: &Path, mut out: OutputFile) -> Result<()> {
    let mut file = std::fs::File::open(log).context("valgrind wrote no log")?;
    std::io::copy(&mut file, &mut out)
        .with_context(|| format!("cannot write '{}'", out.path().display()))?;
    out.commit()?;
    Ok(())
}

fn find_valgrind() -> Option<PathBuf> {
    find_program(OsStr::new("valgrind"))
}

/// The `#!` line of a script, or `None` for a binary.
fn script_interpreter(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 128];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let head = &head[..n];
    let line = head.strip_prefix(b"#!")?;
    let end = line.iter().position(|&b| b == b'\n').unwrap_or(line.len());
    Some(format!(
        "#!{}",
        String::from_utf8_lossy(&line[..end]).trim()
    ))
}

use crate::record::find_program;
