//! The what-if run on a trace file with the exact arena model: what the CLI and the report
//! call.

use super::builds::Build;
use super::multi::replay_builds;
use super::replay::{ArenaModel, BuildReplay, ReplayError, ReplayOptions, Totals};
use crate::sim::{Arena, SimError};
use crate::trace::{Event, TraceHeader, TraceReader};
use std::path::Path;

impl ArenaModel for Arena {
    type Error = SimError;

    fn apply(&mut self, event: Event) -> Result<(), SimError> {
        Arena::apply(self, event)
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
}

/// The header of the trace at `path` (opens and closes it), to size progress and timelines
/// before the run.
pub fn trace_header(path: &Path) -> Result<TraceHeader, ReplayError> {
    let reader = TraceReader::open(path).map_err(|e| ReplayError::Trace(Box::new(e)))?;
    Ok(reader.header().clone())
}

/// Replays the trace at `path` under every build with [`crate::sim::Arena`], one rayon task
/// per build; rows keep the order of `builds`. `progress` hears events done, summed over
/// builds (the total is `builds.len() * header.events`).
pub fn replay_trace(
    path: &Path,
    builds: &[Build],
    options: ReplayOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<BuildReplay>, ReplayError> {
    replay_builds(
        builds,
        |build| {
            Arena::new(build.config).map_err(|e| ReplayError::Model {
                build: build.name.clone(),
                source: Box::new(e),
            })
        },
        || TraceReader::open(path).map_err(|e| ReplayError::Trace(Box::new(e))),
        options,
        progress,
    )
}
