//! `fragsim replay TRACE --measure glibc,jemalloc,...`: the trace measured live under other
//! allocators, one child process each; and the hidden child command.

use super::replay_args::ReplayArgs;
use crate::charts::write_chart;
use crate::export::Format;
use crate::measure::{
    caveats, chart, measure_stream, notes, summary_table, Allocator, MeasureOptions,
};
use crate::sim::arena_replay::default_every;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

pub fn run(args: &ReplayArgs) -> Result<i32> {
    let build_given =
        !args.allocator.preset.is_empty() || args.allocator.explicit_config()?.is_some();
    if build_given {
        bail!("--measure takes no build options (it measures real allocators)");
    }
    let allocators: Vec<Allocator> = args.measure.measure.iter().flatten().copied().collect();
    // The trace is streamed (its calls, for the default --every, from the header or one
    // pass), so memory follows live objects, not the trace's length.
    let trace = crate::analysis::TraceSource::File(&args.trace);
    let calls = trace.calls()?;
    let every = match args.every {
        Some(0) => bail!("--every 0: give a positive number of events"),
        Some(k) => k,
        None => default_every(calls),
    };
    let charts_dir = args
        .whatif
        .charts
        .as_deref()
        .map(super::whatif::NewDir::create)
        .transpose()?;
    let name = args
        .trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string());
    let options = MeasureOptions {
        allocators,
        every,
        exe: std::env::current_exe().context("the fragsim executable")?,
        env: Vec::new(),
    };
    let m = measure_stream(trace, &options).map_err(super::trace::stream_error)?;
    let table = summary_table(
        &m,
        &format!("{name}: {} events measured under each allocator", m.events),
    );
    let mut lines = notes(&m);
    lines.extend(caveats(&m));
    if args.output.format == Format::Md {
        // Markdown carries its notes; CSV and JSON stay machine-readable (notes to stderr).
        let mut text = args.output.format.render(&table)?;
        text.push('\n');
        for line in &lines {
            text.push_str(&format!("- {line}\n"));
        }
        match &args.output.out {
            Some(path) => crate::export::write_atomic(path, text.as_bytes())?,
            None => super::output::print_text(&text)?,
        }
    } else {
        args.output.emit(&table)?;
        for line in &lines {
            super::output::print_error(&format!("note: {line}"));
        }
    }
    if let (Some(dir), Some(created)) = (&args.whatif.charts, charts_dir) {
        let chart = chart(&m, &format!("{name}-allocators"), &name);
        for path in write_chart(&chart, dir)? {
            super::output::print_error(&format!("wrote {}", path.display()));
        }
        created.keep();
    }
    Ok(0)
}

/// Hidden: the child side of `--measure` (one allocator; its report as JSON on stdout).
#[derive(Args, Debug)]
pub(crate) struct MeasureChildArgs {
    #[arg(long, value_parser = |s: &str| s.parse::<Allocator>().map_err(|e| e.to_string()))]
    pub allocator: Allocator,
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    pub events: PathBuf,
}

pub(crate) fn run_child(args: MeasureChildArgs) -> Result<i32> {
    let report = crate::measure::child::replay(args.allocator, &args.events, args.every)?;
    super::output::print_text(&format!("{}\n", serde_json::to_string(&report)?))?;
    Ok(0)
}
