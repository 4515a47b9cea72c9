//! `fragsim replay TRACE --process --live --honour-clock --runs N`: the decay model against
//! N live replays on the trace's clock (`crate::check::decay_compare`): the error table, the
//! checkpoints (`--timeline`) and the chart of resident over time (`--chart`).

use super::replay_args::ReplayArgs;
use crate::analysis::TraceSource;
use crate::charts::render_png;
use crate::check::decay_compare::compare_on_clock;
use crate::check::saved_band::{machine_description, BandHeader, RecordedBand};
use crate::export::{write_atomic, Csv, TableFormat};
use crate::process::{machine_coarse_clock_ns, ProcessOptions};
use crate::report::decay_section::{chart_of, checkpoint_table, error_record};
use anyhow::Result;

pub(crate) fn run_live_clock(
    args: &ReplayArgs,
    trace: TraceSource<'_>,
    options: &ProcessOptions,
    name: &str,
) -> Result<i32> {
    let flags = &args.process;
    let super::process::LiveSetup {
        options,
        allocator,
        exe,
    } = super::process::live_setup(args, options)?;
    let calls = trace.shape()?.events;
    // About 200 checkpoints: reading the statistics takes time the clock does not stop for.
    let every = args.every.unwrap_or_else(|| (calls / 200).max(1));
    let (band, c) = compare_on_clock(
        &exe,
        &allocator,
        trace,
        &options,
        every,
        flags.runs as usize,
        flags.seed,
    )?;
    if let Some(path) = &flags.save_band {
        let recorded = RecordedBand {
            header: BandHeader {
                command: std::env::args().collect::<Vec<_>>().join(" "),
                machine: machine_description(),
                trace: args.trace.display().to_string(),
                malloc_conf: flags.malloc_conf.clone(),
                time_scale: flags.time_scale,
                seed: flags.seed,
                clock_resolution_ns: machine_coarse_clock_ns(),
            },
            band,
        };
        write_atomic(path, recorded.to_csv()?.as_bytes())?;
    }
    if let Some(path) = &args.timeline {
        write_atomic(path, Csv.render(&checkpoint_table(&c, name))?.as_bytes())?;
    }
    if let Some(path) = &flags.chart {
        let chart = chart_of(&c, name, &options);
        write_atomic(path, &render_png(&chart)?)?;
    }
    let mut record = error_record(&c, name, &options, every);
    if let Some(note) = options.background_note() {
        record.field(
            "background_threads",
            "background threads",
            crate::export::Cell::Text(note),
        );
    }
    args.output.emit_summary(&record)?;
    Ok(0)
}
