//! The trace of a live process replay, read as a stream on both sides: the parent's model
//! reads it through the engine, the baton child opens the file itself (twice: a scan, then
//! the replay), so neither holds the trace's records, only its live objects and threads.

use crate::analysis::TraceSource;
use crate::trace::{Call, Fields, Record, TraceError};
use anyhow::{Context, Result};
use std::borrow::Cow;
use std::path::Path;
use std::process::Command;

/// A record stream of a process replay (sites dropped, times scaled).
pub type ProcessRecords<'a> = Box<dyn Iterator<Item = Result<Record, TraceError>> + 'a>;

/// What a live process replay needs of its trace ([`TraceSource`]: a file the child opens
/// too, as is or with its times scaled on both sides, or records in memory, which the child
/// gets as a binary trace written once to a temporary folder, removed on success, failure
/// and interrupt).
pub(crate) trait ProcessInput<'a> {
    /// The records the process model applies, as a stream, sites dropped (a file is opened
    /// here, so a bad one is refused before any child starts).
    fn replay_records(&self) -> Result<ProcessRecords<'a>>;
    /// The records in memory, for the comparison on the trace's clock (which restamps them
    /// per live run): a file is read whole here.
    fn load(&self) -> Result<Cow<'a, [Record]>>;
    /// The child's trace arguments (`--time-scale F` and the path), and the temporary folder
    /// to keep until it exits.
    fn child_args(&self) -> Result<ChildTrace>;
}

impl<'a> ProcessInput<'a> for TraceSource<'a> {
    fn replay_records(&self) -> Result<ProcessRecords<'a>> {
        Ok(match *self {
            TraceSource::Records(records) => Box::new(
                records
                    .iter()
                    .filter(|r| !matches!(r, Record::Site { .. }))
                    .map(|r| Ok(r.clone())),
            ),
            _ => Box::new(
                self.records()?
                    .filter(|r| !matches!(r, Ok(Record::Site { .. }))),
            ),
        })
    }

    fn load(&self) -> Result<Cow<'a, [Record]>> {
        Ok(match *self {
            TraceSource::Records(records) => Cow::Borrowed(records),
            _ => Cow::Owned(self.replay_records()?.collect::<Result<_, _>>()?),
        })
    }

    fn child_args(&self) -> Result<ChildTrace> {
        match *self {
            TraceSource::File(path) | TraceSource::Scaled(path, _) => Ok(ChildTrace {
                path: path.to_path_buf(),
                time_scale: self.time_scale(),
                _temporary: None,
            }),
            TraceSource::Records(records) => {
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
pub(crate) struct ChildTrace {
    path: std::path::PathBuf,
    time_scale: f64,
    _temporary: Option<(tempfile::TempDir, crate::cleanup::Registration)>,
}

impl ChildTrace {
    /// The trace file the child opens.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

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
