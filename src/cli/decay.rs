//! `fragsim replay TRACE --process --live --honour-clock --runs N`: the decay model against
//! N live replays on the trace's clock (`crate::live::decay_compare`): the error table, the
//! checkpoints (`--timeline`) and the chart of resident over time (`--chart`).

use super::replay::ReplayArgs;
use crate::charts::{render_png, ResidentBand, ResidentPoint};
use crate::export::{write_atomic, Cell, Csv, Record as Fields, Table, TableFormat};
use crate::live::decay_compare::{compare_on_clock, ClockComparison, ErrorSummary};
use crate::live::process::ProcessTrace;
use crate::process::ProcessOptions;
use crate::trace::Record;
use anyhow::Result;

pub fn run_live_clock(
    args: &ReplayArgs,
    trace: ProcessTrace<'_>,
    options: &ProcessOptions,
    name: &str,
) -> Result<i32> {
    let flags = &args.process;
    let super::process::LiveSetup {
        options,
        allocator,
        exe,
    } = super::process::live_setup(args, options)?;
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
    args.output
        .emit_record(&error_record(&c, name, &options, every))?;
    Ok(0)
}

/// Bytes in MiB, three decimals.
fn mib(b: f64) -> Cell {
    Cell::Float(b / (1u64 << 20) as f64, 3)
}

/// A percentage, two decimals.
fn percent(x: f64) -> Cell {
    Cell::Float(100.0 * x, 2)
}

/// One statistic's error against the real runs: `key` names the fields, `what` describes them.
fn error_fields(r: &mut Fields, key: &str, what: &str, e: &ErrorSummary) {
    let pairs = [
        (
            "mean_error_mib",
            "model error vs the real mean, mean over checkpoints (MiB)",
            mib(e.mean_error),
        ),
        (
            "mean_error_percent",
            "model error vs the real mean, mean over checkpoints (%)",
            percent(e.mean_relative_error),
        ),
        (
            "max_error_mib",
            "model error vs the real mean, max over checkpoints (MiB)",
            mib(e.max_error),
        ),
        (
            "max_error_percent",
            "model error vs the real mean, max over checkpoints (%)",
            percent(e.max_relative_error),
        ),
        (
            "mean_spread_mib",
            "real run-to-run spread (max - min), mean over checkpoints (MiB)",
            mib(e.mean_spread),
        ),
        (
            "max_spread_mib",
            "real run-to-run spread (max - min), max over checkpoints (MiB)",
            mib(e.max_spread),
        ),
        (
            "checkpoints_in_band",
            "checkpoints where the model lies in the real band",
            Cell::from(e.within_band as u64),
        ),
    ];
    for (name, label, value) in pairs {
        r.field(&format!("{key}_{name}"), &format!("{what}: {label}"), value);
    }
}

fn error_record(c: &ClockComparison, name: &str, o: &ProcessOptions, every: u64) -> Fields {
    let mut r = Fields::new(format!(
        "{name}: decay model vs live jemalloc {} on the trace's clock, dirty_decay_ms:{} muzzy_decay_ms:{}, {} runs, every {every} events",
        c.version, o.dirty_decay_ms, o.muzzy_decay_ms, c.runs
    ));
    let real_mean = c
        .checkpoints
        .iter()
        .map(|p| p.real_resident.mean)
        .sum::<f64>()
        / c.checkpoints.len().max(1) as f64;
    let duration = c.checkpoints.last().map_or(0, |p| p.time_ns);
    r.field("events", "events", c.events)
        .field("checkpoints", "checkpoints", c.checkpoints.len() as u64)
        .field("runs", "runs (live) = seeds (model)", c.runs as u64)
        .field("narenas", "automatic arenas", u64::from(c.narenas))
        .field(
            "duration_ms",
            "trace duration (ms)",
            Cell::Float(duration as f64 / 1e6, 1),
        )
        .field(
            "clock_resolution_ns",
            "model clock resolution (CLOCK_MONOTONIC_COARSE, ns)",
            c.clock_resolution_ns,
        )
        .field(
            "model_clock",
            "model clock",
            if c.replayed_clock {
                "the live replay's (rebuilt from its checkpoints)"
            } else {
                "the trace's times"
            },
        )
        .field(
            "real_resident_mean_mib",
            "real resident, mean over checkpoints (MiB)",
            mib(real_mean),
        )
        .field(
            "metadata_arena0_bytes",
            "metadata resident before the first event, arena 0 (bytes)",
            Cell::Float(c.metadata0, 0),
        )
        .field(
            "metadata_fresh_arena_bytes",
            "metadata resident before the first event, a fresh arena (bytes)",
            Cell::Float(c.metadata_fresh, 0),
        );
    error_fields(&mut r, "resident", "resident", &c.resident());
    error_fields(
        &mut r,
        "active_dirty",
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
    error_fields(&mut r, "active", "active", &c.active());
    error_fields(
        &mut r,
        "dirty",
        "dirty",
        &c.errors(|p| (p.model_dirty, p.real_dirty)),
    );
    error_fields(
        &mut r,
        "metadata",
        "metadata",
        &c.errors(|p| (p.model_metadata, p.real_metadata)),
    );
    r
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
