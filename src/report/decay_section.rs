//! The report's decay section (issue 25): the decay model against live bands measured once
//! and kept as data (`data/decay/*.csv`, [`crate::check::saved_band`]: measured by
//! `scripts/decay-band.sh`, whose command and machine each file names). The live runs cannot
//! be repeated byte for byte, so the band is data; the model is seeded and its inputs (each
//! live run's start-up, the machine's coarse clock) are in the file, so the tables and charts
//! here are the same on every rerun. Also the renderers `replay --live --honour-clock` uses.

use super::{write_table, SectionOutput, Written};
use crate::charts::{write_chart, ResidentBand, ResidentPoint};
use crate::check::decay_compare::{compare_with_band, ClockComparison, ErrorSummary};
use crate::check::saved_band::RecordedBand;
use crate::export::{write_atomic, Cell, Csv, Summary, Table, TableFormat};
use crate::process::ProcessOptions;
use crate::trace::Record;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The heading of this section in the report index.
pub(crate) const SECTION: &str = "Resident memory over time (decay)";

/// The band files in `dir` (`*.csv`, name order; none when the folder does not exist).
fn band_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading '{}'", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.retain(|p| p.extension().is_some_and(|e| e == "csv"));
    files.sort();
    Ok(files)
}

/// One band file against the model: the file, the options it names and the comparison.
type Compared = (RecordedBand, ProcessOptions, ClockComparison);

fn compare_file(path: &Path, root: &Path) -> Result<Compared> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading '{}'", path.display()))?;
    let recorded =
        RecordedBand::parse(&text).with_context(|| format!("band file '{}'", path.display()))?;
    let h = &recorded.header;
    let trace = root.join(&h.trace);
    let mut records: Vec<Record> = crate::trace::open(&trace)?
        .records()
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading '{}'", trace.display()))?;
    records.retain(|r| !matches!(r, Record::Site { .. }));
    if h.time_scale != 1.0 {
        crate::process::scale_times(&mut records, h.time_scale);
    }
    let options = ProcessOptions::parse(&h.malloc_conf)?;
    let c = compare_with_band(
        &recorded.band,
        &records,
        &options,
        h.seed,
        h.clock_resolution_ns,
    )
    .with_context(|| format!("band file '{}'", path.display()))?;
    Ok((recorded, options, c))
}

/// The summary's row of one band.
fn summary_row(name: &str, compared: &Compared) -> Vec<Cell> {
    let (recorded, o, c) = compared;
    let (r, a) = (c.resident(), c.active());
    vec![
        name.into(),
        o.dirty_decay_ms.to_string().into(),
        o.muzzy_decay_ms.to_string().into(),
        Cell::Float(recorded.header.time_scale, 1),
        (c.runs as u64).into(),
        (c.checkpoints.len() as u64).into(),
        mib(r.mean_error),
        mib(r.max_error),
        mib(r.mean_spread),
        mib(r.max_spread),
        (r.within_band as u64).into(),
        mib(a.max_error),
    ]
}

/// Writes the section: per band file its checkpoints and chart, and one summary table.
/// `root` is the repository's (the band files name their traces relative to it).
pub fn write_section(dir: &Path, root: &Path) -> Result<SectionOutput> {
    let files = band_files(&root.join("data").join("decay"))?;
    let mut summary = Table::new(
        "decay model vs live bands measured once (data/decay)",
        &[
            "band",
            "dirty_decay_ms",
            "muzzy_decay_ms",
            "time_scale",
            "runs",
            "checkpoints",
            "resident_mean_error_mib",
            "resident_max_error_mib",
            "real_mean_spread_mib",
            "real_max_spread_mib",
            "checkpoints_in_band",
            "active_max_error_mib",
        ],
    );
    // One thread per band (each a model pass over its trace): the report's time is the
    // longest trace's, not the sum.
    let compared = std::thread::scope(|s| {
        let jobs: Vec<_> = files
            .iter()
            .map(|f| s.spawn(|| compare_file(f, root)))
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("a band comparison panicked"))
            .collect::<Result<Vec<_>>>()
    })?;
    let (mut written, mut provenance) = (Vec::new(), String::new());
    for (path, one) in files.iter().zip(&compared) {
        let (recorded, options, c) = one;
        let name = path
            .file_stem()
            .map_or("band".into(), |s| s.to_string_lossy().to_string());
        summary.push(summary_row(&name, one));
        let csv = dir.join(format!("decay-{name}.csv"));
        write_atomic(&csv, Csv.render(&checkpoint_table(c, &name))?.as_bytes())?;
        written.push(Written::at(
            dir,
            &csv,
            format!("{name}: the model's mean over seeds and the live band at every checkpoint"),
        ));
        for p in write_chart(&chart_of(c, &name, options), &dir.join("charts"))? {
            written.push(Written::at(
                dir,
                &p,
                format!(
                    "{name}: resident over time, the model against the live band measured once ({})",
                    recorded.header.malloc_conf
                ),
            ));
        }
        let h = &recorded.header;
        provenance.push_str(&format!("- {name}: `{}` on {}\n", h.command, h.machine));
    }
    let mut files = write_table(
        dir,
        "decay-summary",
        &summary,
        "per band: the model's error on resident against the live runs' mean, beside their run-to-run spread (MiB)",
    )?;
    files.append(&mut written);
    let markdown = match compared.is_empty() {
        true => String::new(),
        false => format!("The decay model (one run per live run, seeds seed..seed+N, each from its live run's start-up as measured) against live bands measured once and kept in data/decay/; the live runs are not repeated here. Measured with:\n\n{provenance}"),
    };
    Ok(SectionOutput { files, markdown })
}

/// Bytes in MiB, three decimals.
pub(crate) fn mib(b: f64) -> Cell {
    Cell::Float(b / (1u64 << 20) as f64, 3)
}

/// A percentage, two decimals.
fn percent(x: f64) -> Cell {
    Cell::Float(100.0 * x, 2)
}

/// One statistic's error against the real runs: `key` names the fields, `what` describes them.
fn error_fields(r: &mut Summary, key: &str, what: &str, e: &ErrorSummary) {
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

pub(crate) fn error_record(
    c: &ClockComparison,
    name: &str,
    o: &ProcessOptions,
    every: u64,
) -> Summary {
    let mut r = Summary::new(format!(
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

pub(crate) fn checkpoint_table(c: &ClockComparison, name: &str) -> Table {
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

pub(crate) fn chart_of(c: &ClockComparison, name: &str, o: &ProcessOptions) -> ResidentBand {
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
