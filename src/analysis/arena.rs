//! The one-arena model over a trace's calls (every thread in one arena, no thread cache):
//! peak and mean active bytes, the floor the process model's caches and arenas add to.
//! `OneArena` is the example of a whole analysis in one file; `ArenaReplay` is `fragsim
//! replay`'s own, with its timeline.

use super::{Analysis, Finding};
use crate::engine::Consumer;
use crate::export::{Cell, Summary};
use crate::sim::{summary_record, ArenaModel, ArenaRun, ArenaStats, ReplaySummary};
use crate::sizeclass::{build_name, AllocatorConfig};
use crate::trace::{Call, Record};
use anyhow::Result;

/// What [`OneArena`] finds: peak and mean active bytes over the calls.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ActiveBytes {
    pub calls: u64,
    pub peak: u64,
    pub mean: f64,
}

/// The one-arena model of a build, stepping on calls only.
pub struct OneArena {
    model: ArenaModel,
    calls: u64,
    peak: u64,
    sum: u128,
}

impl OneArena {
    pub fn new(config: AllocatorConfig) -> Result<Self> {
        Ok(OneArena {
            model: ArenaModel::new(config)?,
            calls: 0,
            peak: 0,
            sum: 0,
        })
    }
}

impl Analysis for OneArena {
    fn record(&mut self, record: &Record) -> Result<()> {
        let Record::Call(c) = record else {
            return Ok(());
        };
        self.model.apply(c.event)?;
        let active = self.model.stats().active_bytes;
        self.calls += 1;
        self.peak = self.peak.max(active);
        self.sum += u128::from(active);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Finding> {
        let found = ActiveBytes {
            calls: self.calls,
            peak: self.peak,
            mean: self.sum as f64 / self.calls.max(1) as f64,
        };
        let mut summary = Summary::new("the one-arena model (no thread cache)");
        summary
            .field("events", "events", found.calls)
            .field("peak_active_bytes", "peak active bytes", found.peak)
            .field(
                "mean_active_bytes",
                "mean active bytes",
                Cell::Float(found.mean, 1),
            );
        Ok(Finding::new(summary, found))
    }
}

/// What [`ArenaReplay`] finds: the replay's summary, and its timeline rows when asked for.
#[derive(Clone, Debug, Default)]
pub struct ArenaTimeline {
    pub summary: ReplaySummary,
    /// The statistics every `every` calls and after the last (empty unless asked for).
    pub rows: Vec<ArenaStats>,
}

/// `fragsim replay`'s one build through the one-arena model: peaks, the breakdown at the
/// active peak, and a timeline; its summary is the command's own (`summary_record`).
pub struct ArenaReplay {
    run: ArenaRun,
    title: String,
    build: String,
}

impl ArenaReplay {
    /// Rows every `every` calls when `rows`; `title` heads the summary.
    pub fn new(config: AllocatorConfig, every: u64, rows: bool, title: String) -> Result<Self> {
        Ok(ArenaReplay {
            run: ArenaRun::new(config, every, rows)?,
            title,
            build: build_name(&config),
        })
    }
}

impl Analysis for ArenaReplay {
    fn record(&mut self, record: &Record) -> Result<()> {
        if let Record::Call(c) = record {
            self.run.call(0, c)?;
        }
        Ok(())
    }

    fn calls(&mut self, first: u64, calls: &[Call]) -> Result<()> {
        Ok(self.run.calls(first, calls)?)
    }

    fn finish(self: Box<Self>) -> Result<Finding> {
        let (summary, rows) = self.run.finish();
        let record = summary_record(&summary, &self.title, &self.build);
        Ok(Finding::new(record, ArenaTimeline { summary, rows }))
    }
}
