//! Replaying one trace under one build: peaks over every event, the breakdown of the active
//! peak, per-class rows and a sampled timeline.

use super::builds::Build;
use super::ledger::{Ledger, LedgerError};
use crate::sim::arena_replay::excess_ratio;
use crate::sizeclass::{ClassKind, ConfigError, SizeClasses};
use crate::trace::Event;
use serde::Serialize;

/// Byte counters an arena model keeps current after every event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Bytes the program asked for, live objects only.
    pub requested: u64,
    /// Usable bytes of the live objects' size classes (`small.allocated + large.allocated`).
    pub allocated: u64,
    /// Bytes of active pages: live slabs, and large extents with their padding (`pactive`).
    pub active: u64,
    /// Bytes of every mapping the arena made.
    pub mapped: u64,
}

/// What the what-if analysis needs from an arena model (the exact one is `crate::sim`'s).
pub trait WhatifModel {
    type Error: std::error::Error + Send + Sync + 'static;
    fn apply(&mut self, event: Event) -> Result<(), Self::Error>;
    fn totals(&self) -> Totals;
    /// Slabs small class `bin` holds now.
    fn slabs(&self, bin: usize) -> u64;
    /// Slabs made and released so far, all classes (the timeline's columns).
    fn slab_turnover(&self) -> SlabTurnover;
}

/// Slabs an arena has made and released so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SlabTurnover {
    pub created: u64,
    pub released: u64,
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("reading the trace: {0}")]
    Trace(Box<dyn std::error::Error + Send + Sync>),
    #[error("build '{build}', event {event}: {source}")]
    Arena {
        build: String,
        event: u64,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("build '{build}', event {event}: {source}")]
    Ledger {
        build: String,
        event: u64,
        source: LedgerError,
    },
    #[error("build '{0}': {1}")]
    Config(String, ConfigError),
    #[error("build '{build}': {source}")]
    Model {
        build: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The peak active bytes, split by what they hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PeakBreakdown {
    /// The event (1-based count of events applied) at which active bytes first reached
    /// their peak; 0 for an empty trace.
    pub event: u64,
    pub active: u64,
    pub requested: u64,
    /// Usable minus requested bytes: size-class rounding.
    pub rounding: u64,
    /// Free regions of live slabs: slab fragmentation.
    pub empty_regions: u64,
    /// The padding page of each live large allocation (cache-oblivious builds).
    pub large_pad: u64,
}

impl PeakBreakdown {
    /// Share of the peak that is size-class rounding.
    pub(crate) fn rounding_share(&self) -> f64 {
        share(self.rounding, self.active)
    }

    /// Share of the peak that is neither requested nor rounding: empty slab regions and
    /// large padding.
    pub(crate) fn external_share(&self) -> f64 {
        share(self.empty_regions + self.large_pad, self.active)
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// One size class the trace used.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassRow {
    pub index: usize,
    pub size: u64,
    pub kind: ClassKind,
    pub slab_size: u64,
    pub nregs: u64,
    /// Alloc events in this class, and reallocs that moved an object into it.
    pub allocations: u64,
    pub peak_live: u64,
    /// Most slabs the bin held at once (0 for large classes).
    pub peak_slabs: u64,
    /// At the build's active peak:
    pub live_at_peak: u64,
    pub requested_at_peak: u64,
    pub active_at_peak: u64,
    pub rounding_at_peak: u64,
    pub empty_regions_at_peak: u64,
    pub large_pad_at_peak: u64,
}

impl ClassRow {
    /// Bytes lost at the active peak: rounding, empty regions and large padding.
    pub fn lost(&self) -> u64 {
        self.rounding_at_peak + self.empty_regions_at_peak + self.large_pad_at_peak
    }
}

/// The totals after one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TimelinePoint {
    /// Events applied so far (1-based).
    pub event: u64,
    pub live_objects: u64,
    pub totals: Totals,
    pub slabs: SlabTurnover,
}

/// Everything one build's replay found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuildReplay {
    pub build: String,
    pub events: u64,
    /// The maximum of each statistic over every event (each may peak at a different event).
    pub peak: Totals,
    pub at_peak: PeakBreakdown,
    pub last: Totals,
    /// Classes with at least one allocation, smallest first.
    pub classes: Vec<ClassRow>,
    pub timeline: Vec<TimelinePoint>,
}

impl BuildReplay {
    /// allocated / requested − 1 at the active peak, as `fragsim replay` for one build
    /// (`crate::sim::arena_replay::ReplaySummary`) defines it; 0 when nothing was requested.
    pub fn internal_fragmentation(&self) -> f64 {
        let p = &self.at_peak;
        excess_ratio(p.requested + p.rounding, p.requested)
    }

    /// active / allocated − 1 at the active peak.
    pub fn external_fragmentation(&self) -> f64 {
        let p = &self.at_peak;
        excess_ratio(p.active, p.requested + p.rounding)
    }

    /// The classes ordered by bytes lost at the active peak, most first (then by class).
    pub fn classes_by_loss(&self) -> Vec<&ClassRow> {
        let mut rows: Vec<&ClassRow> = self.classes.iter().collect();
        rows.sort_by_key(|r| (std::cmp::Reverse(r.lost()), r.index));
        rows
    }
}

/// How to replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Record a timeline point every this many events (and after the last); `None`: none.
    pub every: Option<u64>,
}

/// Events between two progress reports.
pub const PROGRESS_STEP: u64 = 1 << 16;

/// Replays `events` through `arena` (a fresh model of `build`), keeping every peak.
/// `progress` hears the number of events done every `PROGRESS_STEP` events and at the end.
pub fn replay_build<A, I, E>(
    build: &Build,
    arena: A,
    events: I,
    options: ReplayOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<BuildReplay, ReplayError>
where
    A: WhatifModel,
    I: IntoIterator<Item = Result<Event, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut run = BuildRun::new(build, arena, options)?;
    let mut count = 0u64;
    for event in events {
        let event = event.map_err(|e| ReplayError::Trace(Box::new(e)))?;
        count += 1;
        run.apply(count, event)?;
        if count.is_multiple_of(PROGRESS_STEP) {
            progress(PROGRESS_STEP);
        }
    }
    progress(count % PROGRESS_STEP);
    Ok(run.finish())
}

/// One build's replay in progress: the model, its ledger, peaks and timeline. The engine
/// (`crate::engine`) feeds several of them from one read of the trace.
pub struct BuildRun<A> {
    build: String,
    arena: A,
    classes: SizeClasses,
    ledger: Ledger,
    peak: Totals,
    at_peak: PeakBreakdown,
    timeline: Vec<TimelinePoint>,
    every: Option<u64>,
    /// The event of the next timeline point (`u64::MAX` without a timeline): a comparison
    /// per event instead of a division.
    next_point: u64,
    count: u64,
    live_objects: u64,
}

impl<A: WhatifModel> BuildRun<A> {
    pub fn new(build: &Build, arena: A, options: ReplayOptions) -> Result<Self, ReplayError> {
        let classes = SizeClasses::new(build.config)
            .map_err(|e| ReplayError::Config(build.name.clone(), e))?;
        let ledger = Ledger::new(&classes);
        let peak = arena.totals();
        Ok(BuildRun {
            build: build.name.clone(),
            arena,
            classes,
            ledger,
            peak,
            at_peak: PeakBreakdown::default(),
            timeline: Vec::new(),
            every: options.every.map(|k| k.max(1)),
            next_point: options.every.map_or(u64::MAX, |k| k.max(1)),
            count: 0,
            live_objects: 0,
        })
    }

    /// Event number `count` (1-based; the next call gets `count + 1`). Inlined into the
    /// engine's loop over a batch (`Consumer::calls`): it runs on every event of every build.
    #[inline]
    pub fn apply(&mut self, count: u64, event: Event) -> Result<(), ReplayError> {
        self.count = count;
        match event {
            Event::Alloc { .. } => self.live_objects += 1,
            Event::Free { .. } => self.live_objects = self.live_objects.saturating_sub(1),
            Event::Realloc { .. } => {}
        }
        self.arena.apply(event).map_err(|e| ReplayError::Arena {
            build: self.build.clone(),
            event: count,
            source: Box::new(e),
        })?;
        let ledger = &mut self.ledger;
        ledger.apply(event).map_err(|source| ReplayError::Ledger {
            build: self.build.clone(),
            event: count,
            source,
        })?;
        for class in ledger.changed {
            if (class as usize) < ledger.nbins() {
                ledger.set_slabs(class as usize, self.arena.slabs(class as usize));
            }
        }
        let now = self.arena.totals();
        let (peak, at_peak) = (&mut self.peak, &mut self.at_peak);
        if now.active > peak.active || (at_peak.event == 0 && now.active >= peak.active) {
            ledger.mark_peak();
            let large_pad = ledger.live_large * ledger.large_pad();
            *at_peak = PeakBreakdown {
                event: count,
                active: now.active,
                requested: now.requested,
                rounding: now.allocated.saturating_sub(now.requested),
                empty_regions: now
                    .active
                    .saturating_sub(now.allocated)
                    .saturating_sub(large_pad),
                large_pad,
            };
        }
        *peak = Totals {
            requested: peak.requested.max(now.requested),
            allocated: peak.allocated.max(now.allocated),
            active: peak.active.max(now.active),
            mapped: peak.mapped.max(now.mapped),
        };
        if count == self.next_point {
            // Every `k`-th event, as `count % k == 0` with consecutive counts.
            self.next_point = self.every.map_or(u64::MAX, |k| count.saturating_add(k));
            self.timeline.push(TimelinePoint {
                event: count,
                live_objects: self.live_objects,
                totals: now,
                slabs: self.arena.slab_turnover(),
            });
        }
        Ok(())
    }

    /// The replay's findings after the last event.
    pub fn finish(mut self) -> BuildReplay {
        let count = self.count;
        let last = self.arena.totals();
        if self.every.is_some() && self.timeline.last().is_none_or(|p| p.event != count) {
            self.timeline.push(TimelinePoint {
                event: count,
                live_objects: self.live_objects,
                totals: last,
                slabs: self.arena.slab_turnover(),
            });
        }
        BuildReplay {
            build: self.build,
            events: count,
            peak: self.peak,
            at_peak: self.at_peak,
            last,
            classes: class_rows(&self.ledger, &self.classes),
            timeline: self.timeline,
        }
    }
}

impl<A: WhatifModel + Send> crate::engine::Consumer for BuildRun<A> {
    type Error = ReplayError;

    #[inline]
    fn call(&mut self, index: u64, call: &crate::trace::Call) -> Result<(), ReplayError> {
        self.apply(index, call.event)
    }
}

fn class_rows(ledger: &Ledger, classes: &SizeClasses) -> Vec<ClassRow> {
    let pad = ledger.large_pad();
    classes
        .all()
        .iter()
        .filter(|c| ledger.counters[c.index].allocations > 0)
        .map(|c| {
            let counters = ledger.counters[c.index];
            let at = ledger.at_peak[c.index];
            let small = ledger.is_small(c.index);
            let (active, empty, large_pad) = if small {
                let active = at.slabs * c.slab_size;
                (active, active.saturating_sub(at.live_usable), 0)
            } else {
                (at.live_usable + at.live * pad, 0, at.live * pad)
            };
            ClassRow {
                index: c.index,
                size: c.size,
                kind: c.kind,
                slab_size: c.slab_size,
                nregs: c.nregs,
                allocations: counters.allocations,
                peak_live: counters.peak_live,
                peak_slabs: counters.peak_slabs,
                live_at_peak: at.live,
                requested_at_peak: at.live_requested,
                active_at_peak: active,
                rounding_at_peak: at.live_usable - at.live_requested,
                empty_regions_at_peak: empty,
                large_pad_at_peak: large_pad,
            }
        })
        .collect()
}
