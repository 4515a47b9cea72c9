//! `fragsim replay`: a trace through the arena model (and, with --live, the real jemalloc).

use crate::live::replay::serve_child;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Hidden: the child side of a live replay (events from FILE, snapshots to stdout).
#[derive(Args, Debug)]
pub struct ChildArgs {
    /// Compare every K events.
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    pub events: PathBuf,
}

pub fn run_child(args: ChildArgs) -> Result<i32> {
    let file = std::fs::File::open(&args.events)
        .with_context(|| format!("cannot open '{}'", args.events.display()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    serve_child(file, args.every, &mut out)?;
    Ok(0)
}

/// `fragsim replay TRACE`: the trace through the arena model under one or several builds.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A trace file (`fragsim record` or `fragsim trace import` writes them).
    pub trace: PathBuf,
    /// Builds: the options of one build, or `--preset a,b,c` for several (replayed in
    /// parallel, one row each).
    #[command(flatten)]
    pub allocator: super::AllocatorArgs,
    /// Timeline: one row every K events (and after the last).
    #[arg(long, value_name = "K")]
    pub every: Option<u64>,
    /// Write the timeline as CSV to FILE (a leading build column).
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    #[command(flatten)]
    pub output: super::OutputArgs,
    #[command(flatten)]
    pub whatif: super::whatif::WhatifArgs,
}

pub fn run(args: ReplayArgs) -> Result<i32> {
    let builds = super::whatif::builds_from(&args.allocator)?;
    super::whatif::run(
        &args.trace,
        &builds,
        &args.whatif,
        &args.output,
        args.every,
        args.timeline.as_deref(),
    )
}
