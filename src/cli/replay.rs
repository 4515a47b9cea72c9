//! `fragsim replay`: a trace through the arena model (and, with --live, the real jemalloc).

use super::{AllocatorArgs, OutputArgs};
use crate::export::{write_atomic, Csv, Table, TableFormat};
use crate::live::replay::{replay_compare, serve_child, Api, LiveAllocator, LiveOptions};
use crate::sim::replay::{default_every, timeline_row, TIMELINE_COLUMNS};
use crate::sim::{replay, summary_table};
use crate::trace::{read_text_named, Event, TraceReader};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// The build to model (default: the linked jemalloc's).
    #[command(flatten)]
    pub allocator: AllocatorArgs,
    /// jemalloc 5.3.1's `disable_large_size_classes` (the linked jemalloc's default: true).
    /// Under --live the real jemalloc runs with it (in a child process if needed).
    #[arg(long)]
    pub disable_large_size_classes: Option<bool>,
    /// Timeline rows (and, with --live, comparisons) every K events; always after the last.
    /// Default: about 1,000 timeline rows; every event under --live.
    #[arg(long)]
    pub every: Option<u64>,
    /// Write the timeline CSV here.
    #[arg(long)]
    pub timeline: Option<PathBuf>,
    /// Replay through the real jemalloc too and compare at every K-th event.
    #[arg(long)]
    pub live: bool,
    /// With --live: drive this jemalloc shared library (e.g. Debian's 5.3.0
    /// /usr/lib/x86_64-linux-gnu/libjemalloc.so.2) instead of the linked one.
    #[arg(long, requires = "live")]
    pub system_jemalloc: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub whatif: super::whatif::WhatifArgs,
    #[command(flatten)]
    pub process: super::process::ProcessFlags,
}

/// Whether `path` starts with the binary trace magic.
fn is_binary(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut magic))
        .with_context(|| format!("cannot read trace '{}'", path.display()))?;
    Ok(magic[..n] == *b"FSIMTRC\0")
}

/// Reads a whole trace into memory: the binary format, or the text form when the file does
/// not start with the binary magic.
pub fn load_trace(path: &Path) -> Result<Vec<Event>> {
    if is_binary(path)? {
        let reader = TraceReader::open(path)?;
        Ok(reader.collect::<Result<Vec<_>, _>>()?)
    } else {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot read trace '{}'", path.display()))?;
        let name = path.display().to_string();
        Ok(read_text_named(std::io::BufReader::new(file), &name).collect::<Result<Vec<_>, _>>()?)
    }
}

pub fn run(args: ReplayArgs) -> Result<i32> {
    if args.every == Some(0) {
        bail!("--every 0: give a positive number of events");
    }
    if args.process.process {
        return super::process::run(&args);
    }
    if super::whatif::wanted(&args.allocator, &args.whatif) {
        if args.live || args.disable_large_size_classes.is_some() {
            bail!("--live and --disable-large-size-classes take one build, not a --preset list or --by-class/--charts");
        }
        let builds = super::whatif::builds_from(&args.allocator)?;
        return super::whatif::run(
            &args.trace,
            &builds,
            &args.whatif,
            &args.output,
            args.every,
            args.timeline.as_deref(),
        );
    }
    let name = args
        .trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string());
    if args.live {
        let events = load_trace(&args.trace)?;
        return run_live(&args, &events, &name);
    }
    let mut config = match args.allocator.explicit_config()? {
        Some(config) => config,
        None => Api::linked().config()?,
    };
    if let Some(v) = args.disable_large_size_classes {
        config.large_page_rounding = v;
    }
    let mut timeline = Table::new(
        format!("timeline of {name}, {}", config.label()),
        TIMELINE_COLUMNS,
    );
    let mut on_row = |s: &crate::sim::ArenaStats| {
        if args.timeline.is_some() {
            timeline.push(timeline_row(s));
        }
    };
    // A binary trace streams (its header has the event count); a text trace is loaded.
    let summary = if is_binary(&args.trace)? {
        let reader = TraceReader::open(&args.trace)?;
        let every = args
            .every
            .unwrap_or_else(|| default_every(reader.header().events));
        let mut read_error = None;
        let events = reader.map_while(|r| match r {
            Ok(e) => Some(e),
            Err(e) => {
                read_error = Some(e);
                None
            }
        });
        let summary = replay(config, events, every, &mut on_row)?;
        if let Some(e) = read_error {
            return Err(e.into());
        }
        summary
    } else {
        let events = load_trace(&args.trace)?;
        let every = args
            .every
            .unwrap_or_else(|| default_every(events.len() as u64));
        replay(config, events, every, &mut on_row)?
    };
    if let Some(path) = &args.timeline {
        write_atomic(path, Csv.render(&timeline)?.as_bytes())?;
    }
    let table = summary_table(
        &summary,
        &format!("replay of {name} on the model of {}", config.label()),
    );
    args.output.emit(&table)?;
    Ok(0)
}

fn run_live(args: &ReplayArgs, events: &[Event], name: &str) -> Result<i32> {
    let allocator = match (&args.system_jemalloc, args.disable_large_size_classes) {
        (Some(_), Some(_)) => {
            bail!("--disable-large-size-classes cannot be set for a system jemalloc")
        }
        (Some(lib), None) => LiveAllocator::System(lib.clone()),
        (None, Some(v)) => LiveAllocator::LinkedWith(v),
        (None, None) => LiveAllocator::Linked,
    };
    let options = LiveOptions {
        every: args.every.unwrap_or(1),
        allocator,
        child_exe: Some(std::env::current_exe().context("the fragsim executable")?),
        keep: 5,
    };
    // Build flags must describe the live allocator: checked before a long replay where the
    // linked jemalloc is the one (a system library is known only from its child).
    if args.system_jemalloc.is_none() {
        let mut linked = Api::linked().config()?;
        if let Some(v) = args.disable_large_size_classes {
            linked.large_page_rounding = v;
        }
        check_build_flags(args, &linked)?;
    }
    let result = replay_compare(events, &options)?;
    check_build_flags(args, &result.config)?;
    let c = &result.comparison;
    let mut table = Table::new(
        format!(
            "{name}: model vs live jemalloc {} ({}), every {} events",
            result.config.version.as_str(),
            result.config.label(),
            options.every
        ),
        &["statistic", "value"],
    );
    for (k, v) in [
        ("events", result.final_stats.events),
        ("snapshots compared", c.snapshots),
        ("values compared", c.values),
        ("snapshots mismatched", c.mismatched_snapshots),
        ("values mismatched", c.mismatched_values),
    ] {
        table.push(vec![k.into(), v.into()]);
    }
    for m in &c.first {
        table.push(vec![
            format!(
                "mismatch at event {}: {} (predicted, measured)",
                m.event, m.statistic
            )
            .into(),
            format!("{}, {}", m.predicted, m.measured).into(),
        ]);
    }
    args.output.emit(&table)?;
    if c.is_exact() {
        Ok(0)
    } else {
        for m in &c.first {
            super::output::print_error(&format!(
                "mismatch: event {} {}: predicted {}, measured {}",
                m.event, m.statistic, m.predicted, m.measured
            ));
        }
        Ok(1)
    }
}

fn check_build_flags(args: &ReplayArgs, live: &crate::sizeclass::AllocatorConfig) -> Result<()> {
    if let Some(mut explicit) = args.allocator.explicit_config()? {
        explicit.version = live.version;
        if let Some(v) = args.disable_large_size_classes {
            explicit.large_page_rounding = v;
        }
        if explicit != *live {
            bail!(
                "the build flags describe {} but the live jemalloc is {}: drop them under --live",
                explicit.label(),
                live.label()
            );
        }
    }
    Ok(())
}

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
