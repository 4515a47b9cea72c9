//! `fragsim record -o TRACE -- PROGRAM ARGS...`: run a program under valgrind's malloc tracing
//! and import what it printed.

use super::trace::{import_note, import_valgrind_file};
use crate::trace::ValgrindOptions;
use anyhow::{Context, Result};
use clap::Args;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::Command;

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The binary trace to write (atomically).
    #[arg(short = 'o', long = "out")]
    pub(super) out: PathBuf,
    /// Make inconsistent calls in valgrind's log errors.
    #[arg(long)]
    strict: bool,
    /// Keep valgrind's log here (by default it is a temporary file).
    #[arg(long)]
    keep_log: Option<PathBuf>,
    /// The recorder: `native` (fragsim's LD_PRELOAD library: threads, times, stacks) or
    /// `valgrind` (--trace-malloc=yes).
    #[arg(long = "with", value_enum, default_value_t = super::record_native::Recorder::Native)]
    pub(super) with: super::record_native::Recorder,
    #[command(flatten)]
    pub(super) native: super::record_native::NativeArgs,
    /// The program and its arguments (after --).
    #[arg(required = true, last = true)]
    pub(super) command: Vec<String>,
}

pub fn run(args: RecordArgs) -> Result<i32> {
    if args.with == super::record_native::Recorder::Native {
        return super::record_native::run(&args);
    }
    let valgrind = find_valgrind().context(
        "valgrind is not installed (install it with `apt-get install valgrind` or your system's package manager)",
    )?;
    let program = &args.command[0];
    anyhow::ensure!(
        find_program(program).is_some(),
        "program '{program}' not found (neither a file nor on PATH)"
    );
    let log_dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let log = match &args.keep_log {
        Some(path) => path.clone(),
        None => log_dir.path().join("valgrind.log"),
    };
    // The program's own stdin/stdout/stderr pass through; valgrind's output goes to the log.
    let status = Command::new(&valgrind)
        .arg("--trace-malloc=yes")
        .arg(format!("--log-file={}", log.display()))
        .args(&args.command)
        .status()
        .with_context(|| format!("cannot run '{}'", valgrind.display()))?;
    let file = std::fs::File::open(&log)
        .with_context(|| format!("valgrind wrote no log for '{program}' ({status})"))?;
    let name = log.display().to_string();
    let options = ValgrindOptions {
        pid: None,
        strict: args.strict,
    };
    let (header, summary) = import_valgrind_file(
        BufReader::with_capacity(1 << 16, file),
        &name,
        &options,
        &args.out,
    )?;
    super::output::print_error(&import_note(&name, &args.out, &header, &summary));
    if !status.success() {
        super::output::print_error(&format!(
            "note: '{program}' exited with {status}; the trace holds what it allocated until then"
        ));
    }
    Ok(0)
}

fn find_valgrind() -> Option<PathBuf> {
    find_program("valgrind")
}

/// `name` itself if it has a slash, else the first file of that name on PATH.
fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let path = PathBuf::from(name);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
