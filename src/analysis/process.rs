//! The process model over a trace (`replay --process`, the report's "Whole process"
//! section): one run per seed, each an analysis of its own, and the summary over them, one
//! set of column names wherever it is shown.

use super::{Analysis, Finding};
use crate::export::{Cell, Summary};
use crate::process::{ArenaSnapshot, ProcessRun, ProcessRunResult, ProcessSummary};
use crate::trace::Record;
use anyhow::Result;
use std::collections::BTreeMap;

/// One seed's run of the process model ([`ProcessRun`]); its finding's result is a
/// [`ProcessModelRun`].
pub struct ProcessModel {
    run: ProcessRun,
    /// Dump the statistics after the last record (`--stats-json FILE --at end`).
    dump_at_end: bool,
    arenas: Option<ArenaPeaks>,
    /// Threads that called so far.
    threads: u32,
}

/// Per arena: its peak active bytes, and every arena at the process's active peak.
#[derive(Clone, Debug, Default)]
pub struct ArenaPeaks {
    pub peaks: BTreeMap<u32, u64>,
    pub at_active_peak: Vec<ArenaSnapshot>,
    peak: Option<u64>,
}

/// What [`ProcessModel`] finds.
pub struct ProcessModelRun {
    pub run: ProcessRunResult,
    /// When asked for ([`ProcessModel::with_arena_peaks`]).
    pub arenas: Option<ArenaPeaks>,
}

impl ProcessModel {
    pub fn new(run: ProcessRun) -> Self {
        ProcessModel {
            run,
            dump_at_end: false,
            arenas: None,
            threads: 0,
        }
    }

    /// Dumps the statistics after the last record.
    pub(crate) fn dump_at_end(mut self) -> Self {
        self.dump_at_end = true;
        self
    }

    /// Also keeps each arena's peak active bytes and every arena at the process's active
    /// peak, after each call (a snapshot per call: for small traces).
    pub fn with_arena_peaks(mut self) -> Self {
        self.arenas = Some(ArenaPeaks::default());
        self
    }
}

impl Analysis for ProcessModel {
    fn record(&mut self, record: &Record) -> Result<()> {
        crate::engine::RecordConsumer::record(&mut self.run, record)?;
        if let Record::Call(c) = record {
            self.threads = self.threads.max(c.thread + 1);
        }
        if let (Some(a), Record::Call(_)) = (self.arenas.as_mut(), record) {
            let active = self.run.stats().active_bytes;
            let arenas = self.run.arenas();
            for s in &arenas {
                let p = a.peaks.entry(s.index).or_default();
                *p = (*p).max(s.active_bytes);
            }
            if a.peak.is_none_or(|p| active > p) {
                a.peak = Some(active);
                a.at_active_peak = arenas;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Finding> {
        if self.dump_at_end {
            self.run.dump_now()?;
        }
        let run = self.run.finish();
        let runs = std::slice::from_ref(&run);
        let summary = summary_of("the process model".into(), self.threads, runs);
        Ok(Finding::new(
            summary,
            ProcessModelRun {
                run,
                arenas: self.arenas,
            },
        ))
    }
}

/// A summary field: its name, its label and how to read it off a run's summary.
type Figure<'a> = (&'a str, &'a str, &'a dyn Fn(&ProcessSummary) -> f64);

/// The summary: the first run's figures as named fields, resident memory over every run's
/// seed.
pub(crate) fn summary_of(title: String, threads: u32, runs: &[ProcessRunResult]) -> Summary {
    let first = &runs[0];
    let summary = &first.summary;
    let p = &summary.at_active_peak;
    let f = &summary.final_stats;
    let mut r = Summary::new(title);
    r.field("events", "events", summary.final_stats.events)
        .field("threads", "threads", u64::from(threads))
        .field(
            "narenas",
            "automatic arenas (narenas)",
            u64::from(first.narenas),
        )
        .field(
            "cache_block_bytes",
            "thread cache block bytes",
            first.cache_block_bytes,
        );
    crate::sim::arena_replay::peak_fields(
        &mut r,
        summary.peak_requested_bytes,
        summary.peak_allocated_bytes,
        summary.peak_active_bytes,
    )
    .field("active_peak_event", "event of the active peak", p.events)
    .field(
        "tcache_bytes_at_active_peak",
        "thread cache bytes at the active peak",
        p.tcache_bytes,
    )
    .field(
        "mapped_bytes_at_active_peak",
        "mapped bytes at the active peak (stats.mapped)",
        p.mapped_bytes,
    )
    .field(
        "mean_active_bytes",
        "mean active bytes",
        Cell::Float(summary.mean_active_bytes(), 1),
    );
    resident_fields(&mut r, runs);
    let mapped = "final mapped bytes (stats.mapped)";
    for (name, label, bytes) in [
        (
            "final_allocated_bytes",
            "final allocated bytes",
            f.allocated_bytes,
        ),
        ("final_active_bytes", "final active bytes", f.active_bytes),
        (
            "final_tcache_bytes",
            "final thread cache bytes",
            f.tcache_bytes,
        ),
        ("final_dirty_bytes", "final dirty bytes", f.dirty_bytes),
        ("final_muzzy_bytes", "final muzzy bytes", f.muzzy_bytes),
        (
            "final_retained_bytes",
            "final retained bytes",
            f.retained_bytes,
        ),
        ("final_mapped_bytes", mapped, f.mapped_bytes),
        (
            "final_resident_bytes",
            "final resident bytes",
            f.resident_bytes,
        ),
    ] {
        r.field(name, label, bytes);
    }
    r
}

/// Resident memory: the one run's, or the mean and range over the seeds' runs.
fn resident_fields(r: &mut Summary, runs: &[ProcessRunResult]) {
    let spread = |f: &dyn Fn(&ProcessSummary) -> f64| -> (f64, f64, f64) {
        let v: Vec<f64> = runs.iter().map(|r| f(&r.summary)).collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (min, mean, max)
    };
    let resident: [Figure; 2] = [
        ("peak_resident_bytes", "peak resident bytes", &|s| {
            s.peak_resident_bytes as f64
        }),
        (
            "mean_resident_bytes",
            "mean resident bytes over time",
            &|s| s.mean_resident_bytes(),
        ),
    ];
    for (name, label, f) in resident {
        if runs.len() > 1 {
            let (min, mean, max) = spread(f);
            r.field(
                name,
                &format!("{label} (mean of {} seeds)", runs.len()),
                Cell::Float(mean, 1),
            );
            r.field(
                &format!("{name}_range"),
                &format!("{label} (min-max over seeds)"),
                format!("{min:.0}-{max:.0}"),
            );
        } else {
            r.field(name, label, Cell::Float(f(&runs[0].summary), 1));
        }
    }
}
