//! The one-arena model over a trace's calls (every thread in one arena, no thread cache):
//! peak and mean active bytes, the floor the process model's caches and arenas add to.
//! The example of a whole analysis in one file.

use super::{Analysis, Finding};
use crate::export::{Cell, Summary};
use crate::sim::ArenaModel;
use crate::sizeclass::AllocatorConfig;
use crate::trace::Record;
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
