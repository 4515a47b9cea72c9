//! The exact arena model as a what-if model, and a trace file's call count (the analysis
//! `crate::analysis::BuildModel` runs the builds over the file).

use super::replay::{ReplayError, SlabTurnover, Totals, WhatifModel};
use crate::sim::{ArenaModel, SimError};
pub use crate::trace::EventStream;
use crate::trace::{Event, TraceError};
use std::path::Path;

impl WhatifModel for ArenaModel {
    type Error = SimError;

    fn apply(&mut self, event: Event) -> Result<(), SimError> {
        ArenaModel::apply(self, event)
    }

    fn totals(&self) -> Totals {
        let s = self.stats();
        Totals {
            requested: s.requested_bytes,
            allocated: s.allocated_bytes,
            active: s.active_bytes,
            mapped: s.mapped_bytes,
        }
    }

    fn slabs(&self, bin: usize) -> u64 {
        self.bins().get(bin).map_or(0, |b| b.curslabs)
    }

    fn slab_turnover(&self) -> SlabTurnover {
        let s = self.stats();
        SlabTurnover {
            created: s.slabs_created,
            released: s.slabs_released,
        }
    }
}

fn trace_error(e: TraceError) -> ReplayError {
    ReplayError::Trace(Box::new(e))
}

/// The number of events of the trace at `path`, to size progress and timelines before the
/// run: from the header of a binary trace; a text trace is read through once (which also
/// checks it).
pub fn trace_events(path: &Path) -> Result<u64, ReplayError> {
    let opened = crate::trace::open(path).map_err(trace_error)?;
    if let Some(events) = opened.events_hint() {
        return Ok(events);
    }
    let mut count = 0;
    for event in opened.events() {
        event.map_err(trace_error)?;
        count += 1;
    }
    Ok(count)
}
