//! Reading the binary form: an iterator of events in constant memory (a 256 KiB buffer plus a
//! bitset of live ids).

use super::codec::{decode_record, CodecState};
use super::flow::Flow;
use super::format::{decode_event, DecodeError, TraceHeader, MAX_EVENT_LEN, VERSION_CHECKSUMS};
use super::frame::{Deframer, FrameError};
use super::ids::LiveSet;
use super::{Call, Event, ObjectId, Record, SiteTable, TraceError, TraceMeta};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

mod fill;
mod header;

use header::read_header;

const BUF_LEN: usize = 1 << 18;

/// Streams the events of a trace, checking each one: an id below the header's `id_limit`, no
/// alloc of a live id, no free or realloc of a dead one (one bit per id), and at the end that
/// the event count and length match the header with nothing after. So consumers may index a
/// table of `id_limit` slots by id and trust every yielded stream to be consistent. After the
/// first error the iterator ends.
pub struct TraceReader<R> {
    inner: R,
    /// The event section's checksummed chunks as one stream (version 4).
    frames: Deframer,
    name: String,
    header: TraceHeader,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    eof: bool,
    /// File offset of `buf[0]`.
    base: u64,
    events_read: u64,
    prev_id: ObjectId,
    live: LiveSet,
    done: bool,
    /// A damaged or unreadable chunk met while refilling: raised when the records need the
    /// bytes past the verified ones (so both ways of reading see the same records first).
    pending: Option<TraceError>,
    /// Length of the header (where the events start).
    header_len: usize,
    /// With context only: the context rules, the decoder's memory and the sites read so far.
    flow: Flow,
    codec: CodecState,
    sites: SiteTable,
    /// A recording's block after the header's fixed part (`meta.rs`), if it has one.
    meta: Option<TraceMeta>,
}

impl TraceReader<BufReader<File>> {
    /// Opens a trace file and reads its header.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| TraceError::io(&name, e))?;
        Self::named(BufReader::new(file), &name)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the header from `reader`.
    pub fn new(reader: R) -> Result<Self, TraceError> {
        Self::named(reader, "<input>")
    }

    /// As [`TraceReader::new`], naming the source in errors. A trace without checksums
    /// (versions 2 and 3) is refused with the command that upgrades it.
    pub fn named(inner: R, name: &str) -> Result<Self, TraceError> {
        let reader = Self::named_any_version(inner, name)?;
        match reader.header.version {
            VERSION_CHECKSUMS => Ok(reader),
            version => Err(TraceError::OldVersion {
                file: name.to_string(),
                version,
            }),
        }
    }

    /// As [`TraceReader::named`], reading versions 2 and 3 too (what `trace upgrade` reads).
    pub(crate) fn named_any_version(mut inner: R, name: &str) -> Result<Self, TraceError> {
        let (header, header_len, meta) = read_header(&mut inner, name)?;
        let framed = header.version == VERSION_CHECKSUMS;
        Ok(TraceReader {
            inner,
            frames: Deframer::new(framed, header_len as u64),
            name: name.to_string(),
            header,
            buf: vec![0u8; BUF_LEN].into_boxed_slice(),
            pos: 0,
            end: 0,
            eof: false,
            base: header_len as u64,
            events_read: 0,
            prev_id: 0,
            // Sized from the header up front (bounded, in case the header is corrupt: the set
            // grows on demand past that).
            live: LiveSet::with_capacity(header.id_limit.min(1 << 26) as usize),
            done: false,
            pending: None,
            header_len,
            flow: Flow::new(header.fields),
            codec: CodecState::default(),
            sites: SiteTable::new(),
            meta,
        })
    }

    /// What a recording says about itself: the program's command line and how it ended.
    pub fn meta(&self) -> Option<&TraceMeta> {
        self.meta.as_ref()
    }

    /// The call stacks defined so far (all of them once the stream has been read).
    pub fn sites(&self) -> &SiteTable {
        &self.sites
    }

    /// The records of the trace (calls with their thread, time and site; thread exits; site
    /// definitions). A trace without context gives calls on thread 0 without time or site.
    pub fn records(self) -> Records<R> {
        Records { reader: self }
    }

    /// The counts written in front of the events.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Events yielded so far.
    pub fn events_read(&self) -> u64 {
        self.events_read
    }

    /// The stream offset of the next byte (the header's length plus the event bytes before
    /// it, framing left out).
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The file offset of stream offset `offset`.
    fn file_at(&self, offset: u64) -> u64 {
        self.frames
            .file_offset(offset.saturating_sub(self.header_len as u64))
    }

    /// Moves the unread bytes to the front and reads until at least `MAX_EVENT_LEN` are
    /// buffered or the input ends.
    fn refill(&mut self) -> Result<(), TraceError> {
        self.refill_to(MAX_EVENT_LEN)
    }

    fn refill_to(&mut self, want: usize) -> Result<(), TraceError> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        while !self.eof && self.end < want {
            match self.frames.read(&mut self.inner, &mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) => {
                    self.pending = Some(self.frame_error(e));
                    self.eof = true;
                }
            }
        }
        Ok(())
    }

    fn frame_error(&self, e: FrameError) -> TraceError {
        let file = self.name.clone();
        match e {
            FrameError::Io(e) => TraceError::Io { file, source: e },
            FrameError::Cut { .. } => {
                let (offset, what) = e.describe();
                TraceError::Truncated { file, offset, what }
            }
            _ => {
                let (offset, what) = e.describe();
                TraceError::Corrupt { file, offset, what }
            }
        }
    }

    /// A corruption at stream offset `offset`, named by its file offset.
    fn corrupt(&self, offset: u64, what: String) -> TraceError {
        TraceError::Corrupt {
            file: self.name.clone(),
            offset: self.file_at(offset),
            what,
        }
    }

    /// The file ends early, at stream offset `offset`.
    fn truncated(&self, offset: u64, what: String) -> TraceError {
        TraceError::Truncated {
            file: self.name.clone(),
            offset: self.file_at(offset),
            what,
        }
    }

    /// The error that ended the verified bytes, if one did.
    fn pending(&mut self) -> Result<(), TraceError> {
        self.pending.take().map_or(Ok(()), Err)
    }

    /// After the last event: the length matches the header and nothing follows.
    fn check_end(&mut self) -> Result<(), TraceError> {
        self.pending()?;
        let payload = self.offset() - self.header_len as u64;
        if payload != self.header.payload_bytes {
            return Err(self.corrupt(
                self.offset(),
                format!(
                    "the events end after {payload} bytes but the header says {}",
                    self.header.payload_bytes
                ),
            ));
        }
        if self.pos == self.end {
            self.refill()?;
            self.pending()?;
        }
        if self.pos < self.end {
            return Err(self.corrupt(self.offset(), "data after the last event".into()));
        }
        Ok(())
    }

    fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        if self.header.fields.any() {
            loop {
                match self.next_record()? {
                    None => return Ok(None),
                    Some(Record::Call(call)) => return Ok(Some(call.event)),
                    Some(_) => {}
                }
            }
        }
        if self.events_read == self.header.events {
            self.done = true;
            self.check_end()?;
            return Ok(None);
        }
        if self.end - self.pos < MAX_EVENT_LEN && !self.eof {
            self.refill()?;
        }
        let start = self.offset();
        let (event, len) = match decode_event(&self.buf[self.pos..self.end], self.prev_id) {
            Ok(decoded) => decoded,
            Err(DecodeError::Short) => {
                self.pending()?;
                return Err(self.truncated(
                    start,
                    format!(
                        "event {} of {} is missing or cut short",
                        self.events_read, self.header.events
                    ),
                ));
            }
            Err(DecodeError::Malformed(what)) => return Err(self.corrupt(start, what.into())),
        };
        self.pos += len;
        self.prev_id = event.id();
        self.check_event(&event, start)?;
        self.events_read += 1;
        Ok(Some(event))
    }

    /// The object rules: an id below the header's limit, alloc of a dead id, free or realloc
    /// of a live one.
    fn check_event(&mut self, event: &Event, start: u64) -> Result<(), TraceError> {
        let id = event.id();
        if id as u64 >= self.header.id_limit {
            return Err(self.corrupt(
                start,
                format!(
                    "id {id} is not below the header's id limit {}",
                    self.header.id_limit
                ),
            ));
        }
        let consistent = match event {
            Event::Alloc { .. } => self.live.insert(id),
            Event::Free { .. } => self.live.remove(id),
            Event::Realloc { .. } => self.live.contains(id),
        };
        if !consistent {
            let what = match event {
                Event::Alloc { .. } => format!("alloc of id {id}, which is already live"),
                Event::Free { .. } => format!("free of id {id}, which is not live"),
                Event::Realloc { .. } => format!("realloc of id {id}, which is not live"),
            };
            return Err(self.corrupt(start, what));
        }
        Ok(())
    }

    /// With context: the next record, checked, or `None` at the end of the event section.
    fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        let payload_end = self.header_len as u64 + self.header.payload_bytes;
        if self.offset() >= payload_end {
            self.done = true;
            if self.events_read != self.header.events {
                return Err(self.corrupt(
                    self.offset(),
                    format!(
                        "the events end after {} calls but the header says {}",
                        self.events_read, self.header.events
                    ),
                ));
            }
            self.check_end()?;
            return Ok(None);
        }
        if self.end - self.pos < MAX_EVENT_LEN && !self.eof {
            self.refill()?;
        }
        let start = self.offset();
        let (record, len) = loop {
            let avail = (self.end - self.pos).min((payload_end - start) as usize);
            match decode_record(
                &self.buf[self.pos..self.pos + avail],
                self.header.fields,
                &mut self.codec,
            ) {
                Ok(decoded) => break decoded,
                // A long site definition: read more and retry.
                Err(DecodeError::Short) if !self.eof && self.end - self.pos < BUF_LEN => {
                    self.refill_to(BUF_LEN)?;
                }
                Err(DecodeError::Short) => {
                    self.pending()?;
                    return Err(self.truncated(
                        start,
                        format!("record after call {} is cut short", self.events_read),
                    ));
                }
                Err(DecodeError::Malformed(what)) => return Err(self.corrupt(start, what.into())),
            }
        };
        self.pos += len;
        // A mark, not a clone of the flow: no allocation per record.
        let mark = self.flow.mark();
        if let Err(what) = self.flow.other(&record) {
            self.flow.undo(mark);
            return Err(TraceError::Inconsistent {
                file: self.name.clone(),
                event: self.events_read,
                what,
            });
        }
        match &record {
            Record::Call(call) => {
                self.check_event(&call.event, start)?;
                self.events_read += 1;
                if self.events_read > self.header.events {
                    return Err(self.corrupt(
                        start,
                        format!("more calls than the header's {}", self.header.events),
                    ));
                }
            }
            Record::Site { id, frames } => {
                self.sites
                    .push(*id, frames.clone())
                    .map_err(|what| self.corrupt(start, what))?;
            }
            Record::ThreadExit { .. } | Record::Mapping { .. } | Record::Control { .. } => {}
        }
        Ok(Some(record))
    }
}

impl<R: Read> TraceReader<R> {
    /// The common case without refills or errors; `None` sends the caller to the slow path,
    /// which redoes the event with full error reporting (a failed check changes nothing).
    #[inline(always)]
    fn next_fast(&mut self) -> Option<Event> {
        if self.done
            || self.header.fields.any()
            || self.events_read >= self.header.events
            || self.end - self.pos < MAX_EVENT_LEN
        {
            return None;
        }
        let (event, len) = decode_event(&self.buf[self.pos..self.end], self.prev_id).ok()?;
        let id = event.id();
        if id as u64 >= self.header.id_limit {
            return None;
        }
        let consistent = match event {
            Event::Alloc { .. } => self.live.insert(id),
            Event::Free { .. } => self.live.remove(id),
            Event::Realloc { .. } => self.live.contains(id),
        };
        if !consistent {
            return None;
        }
        self.pos += len;
        self.prev_id = id;
        self.events_read += 1;
        Some(event)
    }

    #[cold]
    #[inline(never)]
    fn next_slow(&mut self) -> Option<Result<Event, TraceError>> {
        if self.done {
            return None;
        }
        match self.next_event() {
            Ok(Some(event)) => Some(Ok(event)),
            Ok(None) => None,
            Err(err) => {
                self.done = true;
                Some(Err(err))
            }
        }
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Event, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_fast() {
            Some(event) => Some(Ok(event)),
            None => self.next_slow(),
        }
    }
}

/// The records of a trace: see [`TraceReader::records`]. After the first error it ends.
pub struct Records<R> {
    reader: TraceReader<R>,
}

impl<R: Read> Records<R> {
    pub fn header(&self) -> &TraceHeader {
        self.reader.header()
    }

    /// The call stacks defined so far.
    pub fn sites(&self) -> &SiteTable {
        self.reader.sites()
    }

    /// Calls read so far.
    pub fn events_read(&self) -> u64 {
        self.reader.events_read()
    }
}

impl<R: Read> Iterator for Records<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let r = &mut self.reader;
        if !r.header.fields.any() {
            return r.next().map(|e| e.map(|e| Record::Call(Call::plain(e))));
        }
        if r.done {
            return None;
        }
        match r.next_record() {
            Ok(record) => record.map(Ok),
            Err(err) => {
                r.done = true;
                Some(Err(err))
            }
        }
    }
}
