//! The process child's entry point (`fragsim __process-live-child`): what it is asked for,
//! and its output on stdout.

use super::baton::serve_process_child;
use crate::analysis::TraceSource;
use crate::live::Api;
use crate::process::DumpAt;
use anyhow::Result;
use std::io::{BufWriter, Write};

/// What the process child is asked for (`fragsim __process-live-child`'s arguments).
#[derive(Clone, Debug)]
pub struct ProcessChildOptions {
    /// The trace it opens itself.
    pub trace: std::path::PathBuf,
    pub every: u64,
    /// Drive the unprefixed jemalloc preloaded into the process, not the linked one.
    pub system: bool,
    /// Replay on the trace's clock (each call at its time from the first).
    pub on_clock: bool,
    /// Multiply the trace's times by this ([`crate::process::scale_times`]).
    pub time_scale: f64,
    /// When to print jemalloc's own statistics dump.
    pub dump: Option<DumpAt>,
}

/// Replays the trace, writes the child's output to stdout (buffered) and leaves at once:
/// workers still parked are not woken (their caches would flush at exit, after the
/// comparison).
pub fn run_process_child(options: &ProcessChildOptions) -> Result<()> {
    let trace = TraceSource::File(&options.trace).scaled(options.time_scale);
    let api = if options.system {
        Api::system()?
    } else {
        Api::linked()
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let (every, on_clock) = (options.every, options.on_clock);
    let served = serve_process_child(trace, every, api, on_clock, options.dump, &mut out);
    if let Err(e) = served {
        writeln!(out, "error {e:#}")?;
    }
    out.flush()?;
    // SAFETY: _exit ends the process without running destructors (workers are parked).
    unsafe { libc::_exit(0) }
}
