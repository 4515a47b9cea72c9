//! The trace of a live process replay, read as a stream on both sides: the parent's model
//! reads it through the engine, the baton child opens the file itself (twice: a scan, then
//! the replay), so neither holds the trace's records, only its live objects and threads.

use crate::analysis::TraceSource;
use crate::trace::{Call, Fields, Record, TraceError};
use anyhow::{Context, Result};
use std::borrow::Cow;
use std::path::Path;
use std::process::Command;

/// The trace of a live process replay: a file the child opens too, or records in memory.
#[derive(Clone, Copy, Debug)]
pub enum ProcessTrace<'a> {
    /// The trace at `path` (calls and exits; sites dropped), its times multiplied by
    /// `time_scale` ([`crate::process::scale_times`]) on both sides.
    File { path: &'a Path, time_scale: f64 },
    /// Records in memory (a generated trace): the child gets them as a binary trace written
    /// once to a temporary folder, removed on success, failure and interrupt.
    Records(&'a [Record]),
}

from_in_memory!(ProcessTrace, Record, Records);

/// A record stream of a process replay (sites dropped, times scaled).
pub type ProcessRecords<'a> = Box<dyn Iterator<Item = Result<Record, TraceError>> + 'a>;

pub use crate::analysis::TraceShape;

impl<'a> ProcessTrace<'a> {
    /// The records the process model applies, as a stream (a file is opened here, so a bad
    /// one is refused before any child starts).
    pub fn records(&self) -> Result<ProcessRecords<'a>> {
        Ok(match *self {
            ProcessTrace::File { path, time_scale } => Box::new(crate::process::replay_records(
                crate::trace::open(path)?.records(),
                time_scale,
            )),
            ProcessTrace::Records(records) => Box::new(
                records
                    .iter()
                    .filter(|r| !matches!(r, Record::Site { .. }))
                    .map(|r| Ok(r.clone())),
            ),
        })
    }

    /// The records in memory, for the comparison on the trace's clock (which restamps them
    /// per live run): a file is read whole here.
    pub fn load(&self) -> Result<Cow<'a, [Record]>> {
        Ok(match *self {
            ProcessTrace::File { .. } => Cow::Owned(self.records()?.collect::<Result<_, _>>()?),
            ProcessTrace::Records(records) => Cow::Borrowed(records),
        })
    }

    /// One streaming pass over the records: the model's events, the calls, the threads.
    pub fn shape(&self) -> Result<TraceShape> {
        let mut s = TraceShape::default();
        for r in self.records()? {
            s.add(&r?);
        }
        Ok(s)
    }

    /// The calls, for a progress bar: a binary trace's header says, else one pass.
    pub fn calls(&self) -> Result<u64> {
        match *self {
            ProcessTrace::File { path, .. } => Ok(TraceSource::File(path).calls()?),
            ProcessTrace::Records(_) => Ok(self.shape()?.calls),
        }
    }

    /// The child's trace arguments (`--time-scale F` and the path), and the temporary folder
    /// to keep until it exits.
    pub(super) fn child_args(&self) -> Result<ChildTrace> {
        match *self {
            ProcessTrace::File { path, time_scale } => Ok(ChildTrace {
                path: path.to_path_buf(),
                time_scale,
                _temporary: None,
            }),
            ProcessTrace::Records(records) => {
                let dir = tempfile::tempdir().context("temporary folder for the child's trace")?;
                // An interrupt exits without running destructors: remove the folder then too.
                let registration = crate::cleanup::remove_on_interrupt(dir.path());
                let path = dir.path().join("records.trace");
                write_without_sites(&path, records)?;
                Ok(ChildTrace {
                    path,
                    time_scale: 1.0,
                    _temporary: Some((dir, registration)),
                })
            }
        }
    }
}

/// The trace a process child reads: its path, the time scale it applies, and the temporary
/// folder holding it if it is one.
pub(super) struct ChildTrace {
    path: std::path::PathBuf,
    time_scale: f64,
    _temporary: Option<(tempfile::TempDir, crate::cleanup::Registration)>,
}

impl ChildTrace {
    /// Adds the trace to the child's command line.
    pub(super) fn add_to(&self, command: &mut Command) {
        if self.time_scale != 1.0 {
            command.args(["--time-scale", &self.time_scale.to_string()]);
        }
        command.arg(&self.path);
    }
}

/// `records` as a binary trace with their threads and times (the child has no use for sites,
/// whose definitions the caller may have dropped).
fn write_without_sites(path: &Path, records: &[Record]) -> Result<()> {
    let calls = records.iter().filter(|r| !matches!(r, Record::Site { .. }));
    let fields = calls.clone().fold(Fields::NONE, |f, r| {
        let g = Fields::of(r);
        Fields {
            threads: f.threads || g.threads,
            times: f.times || g.times,
            sites: false,
        }
    });
    let unsited = calls.map(|r| match r {
        Record::Call(c) => Ok(Record::Call(Call { site: None, ..*c })),
        other => Ok(other.clone()),
    });
    crate::trace::write_records(path, fields, unsited)?;
    Ok(())
}
