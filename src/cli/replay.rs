//! `fragsim replay`: a trace through the arena model (and, with --live, the real jemalloc).

use crate::live::replay::{serve_child, Api};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Hidden: the child side of a live replay (events from FILE, snapshots to stdout).
#[derive(Args, Debug)]
pub struct ChildArgs {
    /// Compare every K events.
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// Drive the unprefixed jemalloc preloaded into this process, not the linked one.
    #[arg(long)]
    pub system: bool,
    pub events: PathBuf,
}

pub fn run_child(args: ChildArgs) -> Result<i32> {
    let file = std::fs::File::open(&args.events)
        .with_context(|| format!("cannot open '{}'", args.events.display()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let api = if args.system {
        Api::system()?
    } else {
        Api::linked()
    };
    serve_child(file, args.every, api, &mut out)?;
    Ok(0)
}
