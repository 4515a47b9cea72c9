//! `fragsim replay TRACE --process --live --honour-clock --runs N`: the decay model against
//! N live replays on the trace's clock (`crate::live::decay_compare`): the error table, the
//! checkpoints (`--timeline`) and the chart of resident over time (`--chart`).

use super::replay::ReplayArgs;
use crate::charts::{render_png, ResidentBand, ResidentPoint};
use crate::export::{write_atomic, Cell, Csv, Table, TableFormat};
use crate::live::decay_compare::{compare_on_clock, ClockComparison, ErrorSummary};
use crate::live::process::{ProcessAllocator, ProcessTrace};
use crate::process::ProcessOptions;
use crate::trace::Record;
use anyhow::{bail, Context, Result};

pub fn run_live_clock(
    args: &ReplayArgs,
    trace: ProcessTrace<'_>,
    options: &ProcessOptions,
    name: &str,
) -> Result<i32> {
    let flags = &args.process;
    if args.allocator.explicit_config()?.is_some() || args.disable_large_size_classes.is_some() {
        bail!("--process --live models the live jemalloc's own build: drop --preset and the build flags");
    }
    let mut options = options.clone();
    if let Some(cpus) = flags.cpus {
        options
            .narenas
            .get_or_insert(if cpus > 1 { cpus * 4 } else { 1 });
    }
    let allocator = match &args.system_jemalloc {
        Some(lib) => ProcessAllocator::System(lib.clone()),
        None => ProcessAllocator::Linked,
    };
    let exe = std::env::current_exe().context("the fragsim executable")?;
    let calls = trace
        .records()
        .iter()
        .filter(|r| !matches!(r, Record::Site { .. }))
        .count() as u64;
    // About 200 checkpoints: reading the statistics takes time the clock does not stop for.
    let every = args.every.unwrap_or_else(|| (calls / 200).max(1));
    let c = compare_on_clock(
        &exe,
        &allocator,
        trace,
        &options,
        every,
        flags.runs as usize,
        flags.seed,
    )?;
    if let Some(path) = &args.timeline {
        write_atomic(path, Csv.render(&checkpoint_table(&c, name))?.as_bytes())?;
    }
    if let Some(path) = &flags.chart {
        let chart = chart_of(&c, name, &options);
        write_atomic(path, &render_png(&chart)?)?;
    }
    args.output.emit(&error_table(&c, name, &options, every))?;
    Ok(0)
}

fn mib(b: f64) -> String {
    format!("{:.3} MiB", b / (1u64 << 20) as f64)
}

fn error_rows(t: &mut Table, what: &str, e: &ErrorSummary) {
    t.push(vec![
        format!("{what}: model mean error vs the real mean (mean, max)").into(),
        format!(
            "{} ({:.2}%), {} ({:.2}%)",
            mib(e.mean_error),
            100.0 * e.mean_relative_error,
            mib(e.max_error),
            100.0 * e.max_relative_error
        )
        .into(),
    ]);
    t.push(vec![
        format!("{what}: real run-to-run spread, max - min (mean, max)").into(),
        format!("{}, {}", mib(e.mean_spread), mib(e.max_spread)).into(),
    ]);
    t.push(vec![
        format!("{what}: checkpoints where the model lies in the real band").into(),
        format!("{} of {}", e.within_band, e.checkpoints).into(),
    ]);
}

fn error_table(c: &ClockComparison, name: &str, o: &ProcessOptions, every: u64) -> Table {
    let mut t = Table::new(
        format!(
            "{name}: decay model vs live jemalloc {} on the trace's clock, dirty_decay_ms:{} muzzy_decay_ms:{}, {} runs, every {every} events",
            c.version, o.dirty_decay_ms, o.muzzy_decay_ms, c.runs
        ),
        &["statistic", "value"],
    );
    let real_mean = c
        .checkpoints
        .iter()
        .map(|p| p.real_resident.mean)
        .sum::<f64>()
        / c.checkpoints.len().max(1) as f64;
    let duration = c.checkpoints.last().map_or(0, |p| p.time_ns);
    for (k, v) in [
        ("events", Cell::from(c.events)),
        ("checkpoints", Cell::from(c.checkpoints.len() as u64)),
        ("runs (live) = seeds (model)", Cell::from(c.runs as u64)),
        ("automatic arenas", Cell::from(u64::from(c.narenas))),
        ("trace duration (ms)", Cell::Float(duration as f64 / 1e6, 1)),
        (
            "model clock resolution (CLOCK_MONOTONIC_COARSE, ns)",
            Cell::from(c.clock_resolution_ns),
        ),
        (
            "model clock",
            if c.replayed_clock {
                "the live replay's (rebuilt from its checkpoints)"
            } else {
                "the trace's times"
            }
            .into(),
        ),
        (
            "real resident, mean over checkpoints",
            mib(real_mean).into(),
        ),
        (
            "metadata resident before the first event: arena 0, a fresh arena (bytes)",
            format!("{:.0}, {:.0}", c.metadata0, c.metadata_fresh).into(),
        ),
    ] {
        t.push(vec![k.into(), v]);
    }
    error_rows(&mut t, "resident", &c.resident());
    error_rows(
        &mut t,
        "resident less metadata (active + dirty)",
        &c.errors(|p| {
            let mut b = p.real_resident;
            let m = p.real_metadata.mean;
            // The band of active + dirty: each run's resident less its metadata is not kept,
            // so the band is the dirty band moved by the (exact) active bytes.
            b.mean -= m;
            b.min = p.real_active.mean + p.real_dirty.min;
            b.max = p.real_active.mean + p.real_dirty.max;
            (p.model_active + p.model_dirty, b)
        }),
    );
    error_rows(&mut t, "active", &c.active());
    error_rows(
        &mut t,
        "dirty",
        &c.errors(|p| (p.model_dirty, p.real_dirty)),
    );
    error_rows(
        &mut t,
        "metadata",
        &c.errors(|p| (p.model_metadata, p.real_metadata)),
    );
    t
}

fn checkpoint_table(c: &ClockComparison, name: &str) -> Table {
    let mut t = Table::new(
        format!("decay checkpoints of {name}"),
        &[
            "event",
            "time_ns",
            "model_active_bytes",
            "real_active_mean",
            "model_resident_bytes",
            "real_resident_mean",
            "real_resident_min",
            "real_resident_max",
            "model_dirty_bytes",
            "real_dirty_mean",
            "model_muzzy_bytes",
            "real_muzzy_mean",
            "model_retained_bytes",
            "real_retained_mean",
            "model_metadata_bytes",
            "real_metadata_mean",
        ],
    );
    for p in &c.checkpoints {
        let mut row: Vec<Cell> = vec![p.event.into(), p.time_ns.into()];
        for v in [
            p.model_active,
            p.real_active.mean,
            p.model_resident,
            p.real_resident.mean,
            p.real_resident.min,
            p.real_resident.max,
            p.model_dirty,
            p.real_dirty.mean,
            p.model_muzzy,
            p.real_muzzy.mean,
            p.model_retained,
            p.real_retained.mean,
            p.model_metadata,
            p.real_metadata.mean,
        ] {
            row.push(Cell::Float(v, 1));
        }
        t.push(row);
    }
    t
}

fn chart_of(c: &ClockComparison, name: &str, o: &ProcessOptions) -> ResidentBand {
    ResidentBand {
        name: format!("resident-{name}"),
        title: format!(
            "{name}: resident over time, dirty_decay_ms:{} muzzy_decay_ms:{}",
            o.dirty_decay_ms, o.muzzy_decay_ms
        ),
        points: c
            .checkpoints
            .iter()
            .map(|p| ResidentPoint {
                time_ms: p.time_ns as f64 / 1e6,
                model_resident: p.model_resident,
                live_min: p.real_resident.min,
                live_max: p.real_resident.max,
                active: p.model_active,
            })
            .collect(),
        labels: [
            format!("model resident (mean of {} seeds)", c.runs),
            format!(
                "live jemalloc {} resident, min-max of {} runs",
                c.version, c.runs
            ),
            "active (model)".into(),
        ],
    }
}
