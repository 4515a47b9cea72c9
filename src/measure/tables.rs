//! The measurement as a table (one row per allocator), its notes and caveats, and the chart
//! of resident bytes over events with the model beside it.

use super::{AllocatorRun, Measurement};
use crate::charts::MeasuredTimeline;
use crate::export::{Cell, Table};

pub const SUMMARY_COLUMNS: &[&str] = &[
    "allocator",
    "version",
    "peak_resident_bytes",
    "mean_resident_bytes",
    "peak_requested_bytes",
    "requested_at_peak_bytes",
    "peak_resident_over_peak_requested",
    "ns_per_event",
    "peak_in_use_bytes",
    "peak_held_bytes",
];

const NOT_AVAILABLE: &str = "not available";

/// A figure over its baseline (below it: negative), or an empty cell (JSON `null`) where the
/// allocator reports none: numeric columns hold numbers only.
fn optional(v: Option<i64>) -> Cell {
    match v {
        Some(v) if v >= 0 => Cell::Int(v as u64),
        Some(v) => Cell::Float(v as f64, 0),
        None => Cell::Missing(""),
    }
}

fn row(m: &Measurement, run: &AllocatorRun) -> Vec<Cell> {
    let peak = run.peak();
    // Both peaks of the run: what the allocator needed at its worst for the most the program
    // held. (Resident over requested at the resident peak reached 2,258.7 where the resident
    // peak fell where almost nothing was requested.)
    let ratio = if m.peak_requested > 0 {
        Cell::Float(peak.resident.max(0) as f64 / m.peak_requested as f64, 3)
    } else {
        Cell::Missing("")
    };
    vec![
        run.allocator.name().into(),
        run.library
            .version
            .clone()
            .unwrap_or_else(|| "-".into())
            .into(),
        Cell::Int(peak.resident.max(0) as u64),
        Cell::Float(run.mean_resident(), 0),
        Cell::Int(m.peak_requested),
        Cell::Int(peak.requested),
        ratio,
        run.ns_per_event()
            .map_or(Cell::Missing(""), |ns| Cell::Float(ns, 1)),
        optional(run.peak_in_use()),
        optional(run.peak_held()),
    ]
}

/// One row per measured allocator (missing ones are in [`notes`]).
pub fn summary_table(m: &Measurement, title: &str) -> Table {
    let mut t = Table::new(title, SUMMARY_COLUMNS);
    for run in &m.runs {
        t.push(row(m, run));
    }
    t
}

/// What the measurement is not: said with every output.
pub fn caveats(m: &Measurement) -> Vec<String> {
    let tables = m
        .runs
        .iter()
        .map(|r| r.library.tables_bytes)
        .max()
        .unwrap_or(0);
    vec![
        format!(
            "Measured, not modelled: resident bytes are the child's anonymous resident memory (/proc/self/smaps_rollup) over its baseline at event 0, taken after the allocator started and after the replayer's own mmap'd tables ({tables} bytes) were written; sampled every {} events, so a peak between samples can be missed.",
            m.every
        ),
        "A replay is not the program: no program memory outside the heap (stacks, code, its own mappings); one replay thread per trace thread, each with its own caches and arenas as the allocator assigns them, but running one at a time in the recorded order (no two threads ever allocate at once); and each block is written once per page when allocated (a program that leaves pages untouched keeps fewer resident).".into(),
        "Replay speed is not program speed: time-based purging (jemalloc's decay, 10 s by default) sees the events far faster than the program made them, so memory the program would have returned may still be held here. ns_per_event is the time spent in the calls on their own threads (handing calls from one thread to the next excluded) and includes writing each new page.".into(),
    ]
}

/// Missing allocators (one line each, naming the Debian package), the model's peak, and
/// where each allocator's own figures come from.
pub fn notes(m: &Measurement) -> Vec<String> {
    let mut out: Vec<String> = m
        .missing
        .iter()
        .map(|x| {
            format!(
                "{}: not measured, {} is not installed (Debian package {})",
                x.allocator, x.library, x.package
            )
        })
        .collect();
    let threads = m.runs.iter().map(|r| r.threads).max().unwrap_or(1);
    out.push(format!(
        "replayed on {threads} thread{} (one per trace thread, in the recorded order)",
        if threads == 1 { "" } else { "s" }
    ));
    out.push(format!(
        "model: fragsim's jemalloc {} ({}) peaks at {} active bytes",
        m.model_label, m.model_kind, m.model_peak_active
    ));
    for r in &m.runs {
        out.push(format!(
            "{}: {}; in use = {}; held = {}",
            r.allocator,
            r.library.library,
            r.library.in_use_source.as_deref().unwrap_or(NOT_AVAILABLE),
            r.library.held_source.as_deref().unwrap_or(NOT_AVAILABLE)
        ));
    }
    out
}

/// Resident bytes over events, one line per allocator, the model's active bytes and the
/// requested bytes beside them.
pub fn chart(m: &Measurement, name: &str, trace: &str) -> MeasuredTimeline {
    MeasuredTimeline {
        name: name.to_string(),
        title: format!("{trace}: resident bytes per allocator (measured)"),
        measured: m
            .runs
            .iter()
            .map(|r| {
                (
                    r.allocator.name().to_string(),
                    r.samples.iter().map(|s| (s.event, s.resident)).collect(),
                )
            })
            .collect(),
        model: (
            format!("model: jemalloc {} active", short_label(&m.model_label)),
            m.model.clone(),
        ),
        requested: m
            .runs
            .first()
            .map(|r| r.samples.iter().map(|s| (s.event, s.requested)).collect())
            .unwrap_or_default(),
    }
}

fn short_label(label: &str) -> &str {
    label.split(' ').next().unwrap_or(label)
}
