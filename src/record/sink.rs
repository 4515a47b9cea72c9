//! Where converted records go: the trace v2 writer (threads, times and, with `--stacks`,
//! sites), atomic like every trace write.

use crate::trace::{Fields, Record, TraceError, TraceWriter};
use std::path::Path;
use tempfile::NamedTempFile;

/// A trace being written (it appears at its path only when finished).
pub struct TraceSink {
    writer: TraceWriter<NamedTempFile>,
}

impl TraceSink {
    pub fn create(path: &Path, fields: Fields) -> Result<Self, TraceError> {
        Ok(TraceSink {
            writer: TraceWriter::create_with(path, fields)?,
        })
    }

    pub fn write_record(&mut self, record: &Record) -> Result<(), TraceError> {
        self.writer.write_record(record)
    }

    /// Finishes the file (moves it into place).
    pub fn finish(self) -> Result<(), TraceError> {
        self.writer.finish().map(|_| ())
    }
}
