//! Where converted records go: the trace v2 writer (threads, times and, with `--stacks`,
//! sites) through the one output writer ([`OutputFile`]): a link is followed, a device or FIFO
//! written through, a regular file replaced whole when the trace is finished.

use crate::export::OutputFile;
use crate::trace::{Ending, Fields, Record, TraceError, TraceMeta, TraceWriter};
use std::path::Path;

/// A trace being written (it appears at its path only when finished).
pub struct TraceSink {
    writer: TraceWriter<OutputFile>,
    path: std::path::PathBuf,
}

/// The writer's error as the trace's: "cannot write 'PATH': REASON", the path said once.
fn output_error(path: &Path, e: crate::export::WriteError) -> TraceError {
    TraceError::Output {
        path: path.to_path_buf(),
        source: std::io::Error::new(e.kind, e.reason),
    }
}

impl TraceSink {
    /// A trace at `path` that says it records `command` (a recording's block, `trace/meta.rs`).
    pub fn create(path: &Path, fields: Fields, command: Vec<String>) -> Result<Self, TraceError> {
        let out = OutputFile::create(path).map_err(|e| output_error(path, e))?;
        let meta = TraceMeta {
            command,
            ending: Ending::Whole,
            // Reserved: the program's allocator is read when its recording ends.
            allocator: Some(String::new()),
        };
        let name = path.display().to_string();
        Ok(TraceSink {
            writer: TraceWriter::named_with_meta(out, &name, fields, Some(meta))?,
            path: path.to_path_buf(),
        })
    }

    pub fn write_record(&mut self, record: &Record) -> Result<(), TraceError> {
        self.writer.write_record(record)
    }

    /// Finishes the file, saying how the recording ended and what the program's allocator
    /// was (moves it into place).
    pub fn finish(mut self, ending: Ending, allocator: Option<&str>) -> Result<(), TraceError> {
        self.writer.set_ending(ending);
        if let Some(text) = allocator {
            self.writer.set_allocator(text);
        }
        let (_, out) = self.writer.finish_into_inner()?;
        out.commit().map_err(|e| output_error(&self.path, e))
    }
}
