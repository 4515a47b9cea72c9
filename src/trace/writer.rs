//! Writing the binary form: buffered, validated event by event, header filled in on `finish`.

use super::codec::{encode_call, encode_record, CodecState};
use super::flow::{Fields, Flow};
use super::format::{encode_event, TraceHeader, UNFINISHED, VERSION_CHECKSUMS};
use super::frame::write_chunk;
use super::tally::Tally;
use super::{Call, Ending, Event, ObjectId, Record, TraceError, TraceMeta};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

const FLUSH_AT: usize = 1 << 16;
/// The longest site definition a writer accepts (the reader buffers a whole record).
const MAX_SITE_RECORD: usize = 1 << 17;

type Finisher<W> = Box<dyn FnOnce(W) -> Result<(), TraceError> + Send>;

/// Streams events into a trace. Memory: a 64 KiB buffer plus the live-object table.
///
/// Every event is checked against the ones before it (see `Tally`'s rules: no alloc of a
/// live id, no free or realloc of a dead one, a new id at most one past the highest used, sizes
/// below 2^63), so every finished file is consistent.
pub struct TraceWriter<W: Write + Seek> {
    out: Option<W>,
    name: String,
    buf: Vec<u8>,
    tally: Tally,
    /// Event bytes written (the header's `payload_bytes`) and the file bytes they took.
    payload_bytes: u64,
    framed_bytes: u64,
    prev_id: ObjectId,
    flow: Flow,
    codec: CodecState,
    finisher: Option<Finisher<W>>,
    /// A recording's block after the header (`meta.rs`): written with the placeholder,
    /// again (its ending filled in) on `finish`, at the same length.
    meta: Option<TraceMeta>,
}

impl<W: Write + Seek> TraceWriter<W> {
    /// Writes a placeholder header at the current position of `out`.
    pub fn new(out: W) -> Result<Self, TraceError> {
        Self::named(out, "<output>")
    }

    /// As [`TraceWriter::new`], naming the destination in errors.
    pub fn named(out: W, name: &str) -> Result<Self, TraceError> {
        Self::named_with(out, name, Fields::NONE)
    }

    /// A writer of records with the given context (format v2); without any field, of calls
    /// only, as [`TraceWriter::named`]. Either is file version 4, checksummed.
    pub fn named_with(out: W, name: &str, fields: Fields) -> Result<Self, TraceError> {
        Self::named_with_meta(out, name, fields, None)
    }

    /// As [`TraceWriter::named_with`], the header followed by a recording's block (the
    /// program's command line; its ending is set by [`TraceWriter::set_ending`]).
    pub(crate) fn named_with_meta(
        mut out: W,
        name: &str,
        fields: Fields,
        meta: Option<TraceMeta>,
    ) -> Result<Self, TraceError> {
        let placeholder = TraceHeader {
            version: VERSION_CHECKSUMS,
            events: UNFINISHED,
            fields,
            ..TraceHeader::default()
        };
        let head = super::meta::encode_header(&placeholder, meta.as_ref());
        out.write_all(&head).map_err(|e| TraceError::io(name, e))?;
        Ok(TraceWriter {
            out: Some(out),
            name: name.to_string(),
            buf: Vec::with_capacity(FLUSH_AT + 64),
            tally: Tally::new(),
            payload_bytes: 0,
            framed_bytes: 0,
            prev_id: 0,
            flow: Flow::new(fields),
            codec: CodecState::default(),
            finisher: None,
            meta,
        })
    }

    /// How the recording ended (written on `finish`; only with a recording's block).
    pub(crate) fn set_ending(&mut self, ending: Ending) {
        if let Some(meta) = &mut self.meta {
            meta.ending = ending;
        }
    }

    /// Fills the recorded allocator's slot, where the block reserved one (a recording's):
    /// `text` is [`TraceMeta::allocator`]'s lines (those that fit).
    pub(crate) fn set_allocator(&mut self, text: &str) {
        if let Some(slot) = self.meta.as_mut().and_then(|m| m.allocator.as_mut()) {
            *slot = text.to_string();
        }
    }

    /// The context this writer's records carry.
    pub fn fields(&self) -> Fields {
        self.flow.fields
    }

    fn inconsistent(&self, what: String) -> TraceError {
        TraceError::Inconsistent {
            file: self.name.clone(),
            event: self.tally.events,
            what,
        }
    }

    /// Appends one event (on the current thread, at the latest time, without a site), or
    /// refuses it if it contradicts the events before it.
    pub fn write(&mut self, event: &Event) -> Result<(), TraceError> {
        if self.flow.fields.any() {
            let call = Call {
                event: *event,
                thread: self.flow.thread,
                time_ns: None,
                site: None,
                reentrant: false,
                mallocx_flags: 0,
            };
            return self.write_record(&Record::Call(call));
        }
        self.tally.apply(event).map_err(|w| self.inconsistent(w))?;
        encode_event(&mut self.buf, event, &mut self.prev_id);
        self.flush_if_full()
    }

    /// Appends one record, or refuses it if it contradicts the records before it or needs a
    /// field the writer was not created with.
    pub fn write_record(&mut self, record: &Record) -> Result<(), TraceError> {
        if let Record::Call(call) = record {
            if let Some(written) = self.write_call_in_run(call) {
                return written;
            }
        }
        let fields = self.flow.fields;
        if !fields.any() {
            return match record {
                Record::Call(call) if Fields::of(record) == Fields::NONE => self.write(&call.event),
                _ => Err(self.inconsistent(format!(
                    "{record:?} needs threads, times or sites, and this trace was created without them"
                ))),
            };
        }
        // The context first, taken back if the objects refuse the record: a refused record
        // changes nothing.
        let mark = self.flow.mark();
        let checked = self.flow.other(record).and_then(|()| match record {
            Record::Call(call) => self.tally.apply(&call.event),
            _ => Ok(()),
        });
        if let Err(w) = checked {
            self.flow.undo(mark);
            return Err(self.inconsistent(w));
        }
        let start = self.buf.len();
        encode_record(&mut self.buf, record, fields, &mut self.codec);
        if self.buf.len() - start > MAX_SITE_RECORD {
            return Err(self.inconsistent(format!(
                "a site definition of {} bytes (at most {MAX_SITE_RECORD})",
                self.buf.len() - start
            )));
        }
        self.flush_if_full()
    }

    /// The common case of [`TraceWriter::write_record`], checked the same way for less: a
    /// call on a thread seen before (alive) with a time not before the last and a site
    /// defined before (the thread and site rules then hold without the flow's general path,
    /// its mark and undo: a tenth of a recording's conversion; a recording of threads that
    /// run at once switches threads every few calls). `None`: any other record, or a call
    /// that breaks a rule, which the general path then refuses with its reason.
    #[inline]
    fn write_call_in_run(&mut self, call: &Call) -> Option<Result<(), TraceError>> {
        let fields = self.flow.fields;
        let (sites, time_ns) = self.flow.run_or_switch(call.thread)?;
        let time_ok = match call.time_ns {
            None => true,
            Some(t) => fields.times && t >= time_ns,
        };
        let site_ok = match call.site {
            None => true,
            Some(s) => s < sites && !matches!(call.event, Event::Free { .. }),
        };
        if !fields.any() || !time_ok || !site_ok {
            return None;
        }
        // The objects' rules last: a refused call changes nothing.
        if let Err(w) = self.tally.apply(&call.event) {
            return Some(Err(self.inconsistent(w)));
        }
        if let Some(t) = call.time_ns {
            self.flow.time_ns = t;
        }
        self.flow.thread = call.thread;
        encode_call(&mut self.buf, call, fields, &mut self.codec);
        Some(self.flush_if_full())
    }

    fn flush_if_full(&mut self) -> Result<(), TraceError> {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    /// The counts so far.
    pub fn header_so_far(&self) -> TraceHeader {
        let mut header = self.tally.header();
        header.payload_bytes = self.payload_bytes + self.buf.len() as u64;
        header.version = VERSION_CHECKSUMS;
        let f = &self.flow;
        if f.fields.any() {
            header.fields = f.fields;
            header.threads = f.threads as u64;
            header.thread_exits = f.thread_exits;
            header.sites = f.sites as u64;
            header.duration_ns = f.time_ns;
        }
        header
    }

    fn flush_buf(&mut self) -> Result<(), TraceError> {
        let out = self.out.as_mut().expect("writer used after finish");
        // Each flush is one checksummed chunk.
        self.framed_bytes +=
            write_chunk(out, &self.buf).map_err(|e| TraceError::io(&self.name, e))?;
        self.payload_bytes += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Writes the remaining events and the final header; returns the header and the output.
    pub fn finish_into_inner(mut self) -> Result<(TraceHeader, W), TraceError> {
        self.flush_buf()?;
        let header = self.header_so_far();
        let mut out = self.out.take().expect("writer used after finish");
        let io = |e| TraceError::io(&self.name, e);
        let end = out.stream_position().map_err(io)?;
        let head = super::meta::encode_header(&header, self.meta.as_ref());
        let start = end - self.framed_bytes - head.len() as u64;
        out.seek(SeekFrom::Start(start)).map_err(io)?;
        out.write_all(&head).map_err(io)?;
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
        Self::create_with(path, Fields::NONE)
    }

    /// As [`TraceWriter::create`], for records with the given context.
    pub(crate) fn create_with(path: &Path, fields: Fields) -> Result<Self, TraceError> {
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
        let mut writer = Self::named_with(tmp, &path.display().to_string(), fields)?;
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

/// Writes `records` into a new trace at `path` (atomically) with the given context; returns
/// its header.
pub fn write_records<I>(path: &Path, fields: Fields, records: I) -> Result<TraceHeader, TraceError>
where
    I: IntoIterator<Item = Result<Record, TraceError>>,
{
    let mut writer = TraceWriter::create_with(path, fields)?;
    for record in records {
        writer.write_record(&record?)?;
    }
    writer.finish()
}
