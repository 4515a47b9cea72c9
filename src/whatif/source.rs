//! The what-if run on a trace file with the exact arena model: what the CLI and the report
//! call.

use super::builds::Build;
use super::multi::replay_opened;
use super::replay::{BuildReplay, ReplayError, ReplayOptions, SlabTurnover, Totals, WhatifModel};
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

/// Replays the trace at `path` under every build with [`crate::sim::ArenaModel`], each build on
/// a thread of its own, from one read of the trace; rows keep the order of `builds`. `progress` hears events done, summed over
/// builds (the total is `builds.len() * header.events`).
pub fn replay_trace(
    path: &Path,
    builds: &[Build],
    options: ReplayOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<BuildReplay>, ReplayError> {
    replay_opened(
        builds,
        |build| {
            ArenaModel::new(build.config).map_err(|e| ReplayError::Model {
                build: build.name.clone(),
                source: Box::new(e),
            })
        },
        || crate::trace::open(path).map_err(trace_error),
        options,
        progress,
    )
}
