//! Writing the binary form: buffered, validated event by event, header filled in on `finish`.

use super::format::{encode_event, TraceHeader, HEADER_LEN, UNFINISHED, VERSION};
use super::tally::Tally;
use super::{Event, ObjectId, TraceError};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

const FLUSH_AT: usize = 1 << 16;

type Finisher<W> = Box<dyn FnOnce(W) -> Result<(), TraceError>>;

/// Streams events into a trace. Memory: a 64 KiB buffer plus the live-object table.
///
/// Every event is checked against the ones before it (see [`Tally`]'s rules: no alloc of a
/// live id, no free or realloc of a dead one, a new id at most one past the highest used, sizes
/// below 2^63), so every finished file is consistent.
pub struct TraceWriter<W: Write + Seek> {
    out: Option<W>,
    name: String,
    buf: Vec<u8>,
    tally: Tally,
    payload_bytes: u64,
    prev_id: ObjectId,
    finisher: Option<Finisher<W>>,
}

impl<W: Write + Seek> TraceWriter<W> {
    /// Writes a placeholder header at the current position of `out`.
    pub fn new(out: W) -> Result<Self, TraceError> {
        Self::named(out, "<output>")
    }

    /// As [`TraceWriter::new`], naming the destination in errors.
    pub fn named(mut out: W, name: &str) -> Result<Self, TraceError> {
        let placeholder = TraceHeader {
            version: VERSION,
            events: UNFINISHED,
            ..TraceHeader::default()
        };
        out.write_all(&placeholder.encode())
            .map_err(|e| TraceError::io(name, e))?;
        Ok(TraceWriter {
            out: Some(out),
            name: name.to_string(),
            buf: Vec::with_capacity(FLUSH_AT + 64),
            tally: Tally::new(),
            payload_bytes: 0,
            prev_id: 0,
            finisher: None,
        })
    }

    /// Appends one event, or refuses it if it contradicts the events before it.
    pub fn write(&mut self, event: &Event) -> Result<(), TraceError> {
        self.tally
            .apply(event)
            .map_err(|what| TraceError::Inconsistent {
                file: self.name.clone(),
                event: self.tally.events,
                what,
            })?;
        encode_event(&mut self.buf, event, &mut self.prev_id);
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    /// The counts so far.
    pub fn header_so_far(&self) -> TraceHeader {
        TraceHeader {
            payload_bytes: self.payload_bytes + self.buf.len() as u64,
            ..self.tally.header()
        }
    }

    fn flush_buf(&mut self) -> Result<(), TraceError> {
        let out = self.out.as_mut().expect("writer used after finish");
        out.write_all(&self.buf)
            .map_err(|e| TraceError::io(&self.name, e))?;
        self.payload_bytes += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Writes the remaining events and the final header; returns the header and the output.
    pub fn finish_into_inner(mut self) -> Result<(TraceHeader, W), TraceError> {
        self.flush_buf()?;
        let header = TraceHeader {
            payload_bytes: self.payload_bytes,
            ..self.tally.header()
        };
        let mut out = self.out.take().expect("writer used after finish");
        let io = |e| TraceError::io(&self.name, e);
        let end = out.stream_position().map_err(io)?;
        let start = end - self.payload_bytes - HEADER_LEN as u64;
        out.seek(SeekFrom::Start(start)).map_err(io)?;
        out.write_all(&header.encode()).map_err(io)?;
        out.seek(SeekFrom::Start(end)).map_err(io)?;
        out.flush().map_err(io)?;
        Ok((header, out))
    }

    /// Writes the remaining events and the final header (and, for [`TraceWriter::create`],
    /// moves the file into place).
    pub fn finish(mut self) -> Result<TraceHeader, TraceError> {
        let finisher = self.finisher.take();
        let (header, out) = self.finish_into_inner()?;
        if let Some(finisher) = finisher {
            finisher(out)?;
        }
        Ok(header)
    }
}

impl TraceWriter<NamedTempFile> {
    /// Writes to a temporary file beside `path`, renamed to `path` by [`TraceWriter::finish`];
    /// dropped unfinished, it leaves nothing behind.
    pub fn create(path: &Path) -> Result<Self, TraceError> {
        let output = |source| TraceError::Output {
            path: path.to_path_buf(),
            source,
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if path.is_dir() {
            return Err(output(std::io::Error::other("is a directory")));
        }
        let tmp = tempfile::Builder::new()
            .prefix(".fragsim-trace-")
            .tempfile_in(dir)
            .map_err(|e| output(without_temp_path(e)))?;
        let mut writer = Self::named(tmp, &path.display().to_string())?;
        let target: PathBuf = path.to_path_buf();
        writer.finisher = Some(Box::new(move |tmp: NamedTempFile| {
            let output = |source| TraceError::Output {
                path: target.clone(),
                source,
            };
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = tmp
                    .as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o644));
            }
            tmp.as_file().sync_all().map_err(output)?;
            tmp.persist(&target).map_err(|e| output(e.error))?;
            Ok(())
        }));
        Ok(writer)
    }
}

/// tempfile's errors name the temporary file; the user named only the target.
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((cause, _)) => std::io::Error::new(e.kind(), cause.to_string()),
        None => e,
    }
}

/// Writes `events` into a new trace at `path` (atomically); returns its header.
pub fn write_trace<I>(path: &Path, events: I) -> Result<TraceHeader, TraceError>
where
    I: IntoIterator<Item = Result<Event, TraceError>>,
{
    let mut writer = TraceWriter::create(path)?;
    for event in events {
        writer.write(&event?)?;
    }
    writer.finish()
}
