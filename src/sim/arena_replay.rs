//! A whole trace through the one-arena model under one build (`fragsim replay TRACE`): the
//! engine consumer, the summary users read and the timeline rows.

use super::{ArenaModel, ArenaStats, SimError};
use crate::engine::Consumer;
use crate::export::{Cell, Summary};
use crate::sizeclass::AllocatorConfig;
use crate::trace::Call;
use serde::Serialize;

/// The columns of a timeline row, in order (the first five are fixed by the CLI's contract).
pub const TIMELINE_COLUMNS: &[&str] = &[
    "event",
    "live_objects",
    "requested_bytes",
    "allocated_bytes",
    "active_bytes",
    "mapped_bytes",
    "slabs_created",
    "slabs_released",
];

/// One timeline row.
pub(crate) fn timeline_row(s: &ArenaStats) -> Vec<Cell> {
    [
        s.events,
        s.live_objects,
        s.requested_bytes,
        s.allocated_bytes,
        s.active_bytes,
        s.mapped_bytes,
        s.slabs_created,
        s.slabs_released,
    ]
    .into_iter()
    .map(Cell::Int)
    .collect()
}

/// Peaks and final state of one replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ReplaySummary {
    pub peak_requested_bytes: u64,
    pub peak_allocated_bytes: u64,
    pub peak_active_bytes: u64,
    /// The statistics at the first event where active bytes peaked.
    pub at_active_peak: ArenaStats,
    pub final_stats: ArenaStats,
}

impl ReplaySummary {
    /// Peaks after one event (the final statistics are taken once, after the last).
    #[inline]
    fn observe(&mut self, s: &ArenaStats) {
        self.peak_requested_bytes = self.peak_requested_bytes.max(s.requested_bytes);
        self.peak_allocated_bytes = self.peak_allocated_bytes.max(s.allocated_bytes);
        if s.active_bytes > self.peak_active_bytes {
            self.peak_active_bytes = s.active_bytes;
            self.at_active_peak = *s;
        }
    }

    /// allocated / requested − 1 at the active peak (0 when nothing was requested).
    pub fn internal_fragmentation(&self) -> f64 {
        excess_ratio(
            self.at_active_peak.allocated_bytes,
            self.at_active_peak.requested_bytes,
        )
    }

    /// active / allocated − 1 at the active peak.
    pub fn external_fragmentation(&self) -> f64 {
        excess_ratio(
            self.at_active_peak.active_bytes,
            self.at_active_peak.allocated_bytes,
        )
    }
}

/// How much `a` exceeds `b`, as a fraction of `b` (`a / b - 1`; 0 when `b` is 0): the
/// fragmentation figures of one build and of several.
pub(crate) fn excess_ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64 - 1.0
    }
}

/// The default timeline spacing: about 1,000 rows for `events` events.
pub(crate) fn default_every(events: u64) -> u64 {
    (events / 1000).max(1)
}

/// One build's replay as an [`engine`](crate::engine) consumer: a fresh model of the build,
/// its peaks after every call, and with `rows` the statistics every `every` calls and after
/// the last (a timeline: about 1,000 rows by default, [`ArenaRun::finish`]). Streams: memory
/// follows live objects and the rows, not calls.
pub struct ArenaRun {
    arena: ArenaModel,
    summary: ReplaySummary,
    every: u64,
    /// Calls until the next row.
    until_row: u64,
    rows: Option<Vec<ArenaStats>>,
}

impl ArenaRun {
    pub fn new(config: AllocatorConfig, every: u64, rows: bool) -> Result<Self, SimError> {
        Ok(ArenaRun {
            arena: ArenaModel::new(config)?,
            summary: ReplaySummary::default(),
            every: every.max(1),
            until_row: every.max(1),
            rows: rows.then(Vec::new),
        })
    }

    /// The summary, and the rows if asked for (the last after the last call).
    pub fn finish(mut self) -> (ReplaySummary, Vec<ArenaStats>) {
        let last = self.arena.stats();
        self.summary.final_stats = last;
        let mut rows = self.rows;
        if let Some(rows) = rows
            .as_mut()
            .filter(|_| !last.events.is_multiple_of(self.every))
        {
            rows.push(last);
        }
        (self.summary, rows.unwrap_or_default())
    }
}

impl Consumer for ArenaRun {
    type Error = SimError;

    // Always inlined: the model's fast path then runs in the engine's loop.
    #[inline(always)]
    fn call(&mut self, _index: u64, call: &Call) -> Result<(), SimError> {
        self.arena.apply(call.event)?;
        let s = &self.arena.stats();
        self.summary.observe(s);
        self.until_row -= 1;
        if self.until_row == 0 {
            self.until_row = self.every;
            if let Some(rows) = &mut self.rows {
                rows.push(*s);
            }
        }
        Ok(())
    }
}

/// The three peaks every replay summary shows (the one-arena and the process model's), as
/// named fields.
pub(crate) fn peak_fields(
    r: &mut Summary,
    requested: u64,
    allocated: u64,
    active: u64,
) -> &mut Summary {
    r.field("peak_requested_bytes", "peak requested bytes", requested)
        .field("peak_allocated_bytes", "peak allocated bytes", allocated)
        .field("peak_active_bytes", "peak active bytes", active)
}

/// The summary as named fields (`build` is the build's name, as `--preset` takes it).
pub fn summary_record(summary: &ReplaySummary, title: &str, build: &str) -> Summary {
    let mut r = Summary::new(title);
    let f = &summary.final_stats;
    let p = &summary.at_active_peak;
    r.field("build", "build", build)
        .field("events", "events", f.events);
    peak_fields(
        &mut r,
        summary.peak_requested_bytes,
        summary.peak_allocated_bytes,
        summary.peak_active_bytes,
    )
    .field("peak_event", "event of the active peak", p.events)
    .field(
        "internal_fragmentation",
        "internal fragmentation at the active peak (allocated/requested - 1)",
        Cell::Float(summary.internal_fragmentation(), 4),
    )
    .field(
        "external_fragmentation",
        "external fragmentation at the active peak (active/allocated - 1)",
        Cell::Float(summary.external_fragmentation(), 4),
    )
    .field("final_live_objects", "final live objects", f.live_objects)
    .field(
        "final_requested_bytes",
        "final requested bytes",
        f.requested_bytes,
    )
    .field(
        "final_allocated_bytes",
        "final allocated bytes",
        f.allocated_bytes,
    )
    .field("final_active_bytes", "final active bytes", f.active_bytes)
    .field("slabs_created", "slabs created", f.slabs_created)
    .field("slabs_released", "slabs released", f.slabs_released)
    .field("mappings", "mappings", f.mappings)
    .field("mapped_bytes", "mapped bytes", f.mapped_bytes);
    r
}
