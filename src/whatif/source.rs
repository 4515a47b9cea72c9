//! The what-if run on a trace file with the exact arena model: what the CLI and the report
//! call.

use super::builds::Build;
use super::multi::replay_builds;
use super::replay::{ArenaModel, BuildReplay, ReplayError, ReplayOptions, SlabTurnover, Totals};
use crate::sim::{Arena, SimError};
use crate::trace::{read_text_named, Event, TraceError, TraceReader};
use std::io::{BufReader, Read};
use std::path::Path;

/// The first bytes of a binary trace (`trace/format.rs`).
const MAGIC: &[u8; 8] = b"FSIMTRC\0";

/// The events of a trace file, binary or text.
pub type EventStream = Box<dyn Iterator<Item = Result<Event, TraceError>> + Send>;

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

fn is_binary(path: &Path) -> Result<bool, ReplayError> {
    let mut magic = [0u8; 8];
    let mut file = std::fs::File::open(path).map_err(|e| {
        trace_error(TraceError::Input {
            file: path.display().to_string(),
            what: e.to_string(),
        })
    })?;
    let n = file.read(&mut magic).unwrap_or(0);
    Ok(magic[..n] == MAGIC[..])
}

/// Opens a trace: the binary format, or the text form (`a ID SIZE [ALIGN]`, `f ID`,
/// `r ID SIZE`) when the file does not start with the binary magic.
pub fn open_events(path: &Path) -> Result<EventStream, ReplayError> {
    if is_binary(path)? {
        Ok(Box::new(TraceReader::open(path).map_err(trace_error)?))
    } else {
        let file = std::fs::File::open(path).map_err(|e| {
            trace_error(TraceError::Input {
                file: path.display().to_string(),
                what: e.to_string(),
            })
        })?;
        let name = path.display().to_string();
        Ok(Box::new(read_text_named(BufReader::new(file), &name)))
    }
}

/// The number of events of the trace at `path`, to size progress and timelines before the
/// run: from the header of a binary trace; a text trace is read through once (which also
/// checks it).
pub fn trace_events(path: &Path) -> Result<u64, ReplayError> {
    if is_binary(path)? {
        let reader = TraceReader::open(path).map_err(trace_error)?;
        return Ok(reader.header().events);
    }
    let mut count = 0;
    for event in open_events(path)? {
        event.map_err(trace_error)?;
        count += 1;
    }
    Ok(count)
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
        || open_events(path),
        options,
        progress,
    )
}
