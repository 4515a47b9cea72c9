//! Where converted records go. STAND-IN until the lead's trace v2 writer lands on main
//! (`TraceWriter::create_with(path, Fields { threads, times, sites })` + `write_record`): this
//! writes the calls through the v1 writer and drops what v1 cannot hold (threads, times,
//! thread exits, sites). Only this file changes when v2 arrives.

use crate::trace::{Record, TraceError, TraceWriter};
use std::path::Path;
use tempfile::NamedTempFile;

/// Which of the v2 context fields a trace carries (the v2 writer's `Fields`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    pub threads: bool,
    pub times: bool,
    pub sites: bool,
}

/// A trace being written (atomically: it appears at its path only when finished).
pub struct TraceSink {
    writer: TraceWriter<NamedTempFile>,
}

impl TraceSink {
    pub fn create(path: &Path, _fields: Fields) -> Result<Self, TraceError> {
        Ok(TraceSink {
            writer: TraceWriter::create(path)?,
        })
    }

    pub fn write_record(&mut self, record: &Record) -> Result<(), TraceError> {
        match record {
            Record::Call(call) => self.writer.write(&call.event),
            Record::ThreadExit { .. } | Record::Site { .. } => Ok(()),
        }
    }

    /// Finishes the file (moves it into place).
    pub fn finish(self) -> Result<(), TraceError> {
        self.writer.finish().map(|_| ())
    }
}
