//! `replay --process --stats-json FILE`: the model's statistics in the shape of jemalloc's
//! `malloc_stats_print(.., "J")` (`crate::process::stats_json`), and under `--live` the live
//! jemalloc's own dump at the same event beside it, in FILE with the extension `real.json`.
//! Also the live child's arguments, which carry when it dumps.

use super::replay_args::ReplayArgs;
use crate::check::process::{ProcessChildOptions, StatsDumps};
use crate::export::{check_output, write_atomic};
use crate::process::{stats_json, DumpAt, StatsView};
use anyhow::{bail, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// The live dump's file beside `path`: its extension replaced (`stats.json` ->
/// `stats.real.json`, `stats` -> `stats.real.json`).
pub(crate) fn real_path(path: &Path) -> PathBuf {
    path.with_extension("real.json")
}

/// When `--stats-json` dumps: `--at end` (the default) or `--at EVENT`.
pub(crate) fn dump_at(args: &ReplayArgs) -> Result<Option<DumpAt>> {
    if args.process.stats_json.is_none() {
        return Ok(None);
    }
    Ok(Some(match args.blame.at.as_deref() {
        None | Some("end") => DumpAt::End,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if n >= 1 => DumpAt::Event(n),
            _ => bail!("--at '{text}': give end or an event number from 1 (--stats-json)"),
        },
    }))
}

/// Refuses, before any work, what `--stats-json` cannot do, and a file that cannot be
/// written (its live counterpart too).
pub fn check(args: &ReplayArgs) -> Result<()> {
    if args.blame.at.is_some() && !args.blame.blame && args.process.stats_json.is_none() {
        bail!("--at applies to --blame and --stats-json");
    }
    let Some(path) = &args.process.stats_json else {
        return Ok(());
    };
    if args.process.honour_clock || args.process.route.is_some() {
        bail!("--stats-json does not apply to --honour-clock or --route");
    }
    check_output(path)?;
    if super::args::is_stdout(path) {
        if args.live {
            bail!("--stats-json with --live writes two files: give it a file, not standard output");
        }
        if args
            .output
            .out
            .as_deref()
            .is_none_or(super::args::is_stdout)
        {
            bail!("--stats-json '{}' is standard output, where the summary goes: give the summary --out FILE or the dump a file", path.display());
        }
    }
    if args.live {
        let real = real_path(path);
        super::args::refuse_outputs_over_inputs(
            &[("the trace", &args.trace), ("--stats-json", path)],
            &[("--stats-json's live dump", Some(&real))],
        )?;
        check_output(&real)?;
    }
    Ok(())
}

/// Refuses `--at EVENT` past the trace's `events` (calls and thread exits).
pub(crate) fn check_event(dump: Option<DumpAt>, events: u64) -> Result<()> {
    if let Some(DumpAt::Event(n)) = dump {
        if n > events {
            bail!("--at {n}: the trace has {events} events");
        }
    }
    Ok(())
}

/// Writes the model's dump to `path`.
pub(crate) fn write_model(path: &Path, view: &StatsView) -> Result<()> {
    let text = serde_json::to_string(&stats_json(view))? + "\n";
    write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// Writes the model's dump to `path` and the live jemalloc's beside it ([`real_path`]).
pub(crate) fn write_both(path: &Path, dumps: &StatsDumps) -> Result<()> {
    write_model(path, &dumps.model)?;
    write_atomic(&real_path(path), format!("{}\n", dumps.live).as_bytes())?;
    Ok(())
}

/// Hidden: the child side of a live process replay.
#[derive(Args, Debug)]
pub(crate) struct ChildArgs {
    #[command(flatten)]
    pub live: super::replay_args::LiveChildArgs,
    /// Replay on the trace's clock (each call at its time from the first).
    #[arg(long)]
    pub on_clock: bool,
    /// Multiply the trace's times by this factor (as the parent did).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Print jemalloc's own statistics dump after this event, or `end`.
    #[arg(long)]
    pub dump_at: Option<String>,
    /// The trace (any form `trace::open` reads).
    pub trace: PathBuf,
}

pub(crate) fn run_child(args: ChildArgs) -> Result<i32> {
    let dump = match args.dump_at.as_deref() {
        None => None,
        Some("end") => Some(DumpAt::End),
        Some(n) => Some(DumpAt::Event(n.parse()?)),
    };
    crate::check::process::run_process_child(&ProcessChildOptions {
        trace: args.trace,
        every: args.live.every,
        system: args.live.system,
        on_clock: args.on_clock,
        time_scale: args.time_scale,
        dump,
    })?;
    Ok(0)
}
