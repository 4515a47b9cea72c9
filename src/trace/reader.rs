//! Reading the binary form: an iterator of events in constant memory (a 256 KiB buffer plus a
//! bitset of live ids).

use super::codec::{decode_record, CodecState};
use super::flow::Flow;
use super::format::{
    decode_event, DecodeError, HeaderError, TraceHeader, MAGIC, MAX_EVENT_LEN, UNFINISHED, VERSION,
    VERSION_CONTEXT,
};
use super::ids::LiveSet;
use super::{Call, Event, ObjectId, Record, SiteTable, TraceError, TraceMeta};
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

mod fill;

const BUF_LEN: usize = 1 << 18;

/// Streams the events of a trace, checking each one: an id below the header's `id_limit`, no
/// alloc of a live id, no free or realloc of a dead one (one bit per id), and at the end that
/// the event count and length match the header with nothing after. So consumers may index a
/// table of `id_limit` slots by id and trust every yielded stream to be consistent. After the
/// first error the iterator ends.
pub struct TraceReader<R> {
    inner: R,
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
    /// Length of the header (where the events start).
    header_len: usize,
    /// Version 3 only: the context rules, the decoder's memory and the sites read so far.
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

    /// As [`TraceReader::new`], naming the source in errors.
    pub fn named(mut inner: R, name: &str) -> Result<Self, TraceError> {
        let (header, header_len, meta) = read_header(&mut inner, name)?;
        Ok(TraceReader {
            inner,
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
    /// definitions). A version 2 file gives calls on thread 0 without time or site.
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

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
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
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(TraceError::io(&self.name, e)),
            }
        }
        Ok(())
    }

    fn corrupt(&self, offset: u64, what: String) -> TraceError {
        TraceError::Corrupt {
            file: self.name.clone(),
            offset,
            what,
        }
    }

    /// After the last event: the length matches the header and nothing follows.
    fn check_end(&mut self) -> Result<(), TraceError> {
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
        }
        if self.pos < self.end {
            return Err(self.corrupt(self.offset(), "data after the last event".into()));
        }
        Ok(())
    }

    fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        if self.header.version == VERSION_CONTEXT {
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
                return Err(TraceError::Truncated {
                    file: self.name.clone(),
                    offset: start,
                    what: format!(
                        "event {} of {} is missing or cut short",
                        self.events_read, self.header.events
                    ),
                })
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

    /// Version 3: the next record, checked, or `None` at the end of the event section.
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
                    return Err(TraceError::Truncated {
                        file: self.name.clone(),
                        offset: start,
                        what: format!("record after call {} is cut short", self.events_read),
                    })
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
            Record::ThreadExit { .. } => {}
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
            || self.header.version != VERSION
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
        if r.header.version != VERSION_CONTEXT {
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

/// Reads and checks the header; returns it and its length. An empty input, one cut inside the
/// header, one with another magic and a damaged header are four different errors.
fn read_header(
    inner: &mut impl Read,
    name: &str,
) -> Result<(TraceHeader, usize, Option<TraceMeta>), TraceError> {
    let file = || name.to_string();
    let mut raw = [0u8; 16];
    let got = read_full(inner, &mut raw).map_err(|e| TraceError::io(name, e))?;
    if got == 0 {
        return Err(TraceError::Input {
            file: file(),
            what: "empty file (not a fragsim trace)".into(),
        });
    }
    let magic_part = got.min(MAGIC.len());
    if raw[..magic_part] != MAGIC[..magic_part] {
        return Err(TraceError::BadMagic {
            file: file(),
            found: raw[..magic_part].to_vec(),
        });
    }
    let truncated = |got: usize, len: usize| TraceError::Truncated {
        file: file(),
        offset: got as u64,
        what: format!("the file ends inside its {len}-byte header"),
    };
    if got < raw.len() {
        return Err(truncated(got, super::format::HEADER_LEN));
    }
    let len = TraceHeader::decode_len(&raw).map_err(|e| match e {
        HeaderError::Version(version) => TraceError::UnsupportedVersion {
            file: file(),
            version,
            supported: VERSION_CONTEXT,
        },
        HeaderError::Corrupt(what) => TraceError::Corrupt {
            file: file(),
            offset: 8,
            what,
        },
    })?;
    let mut bytes = vec![0u8; len];
    bytes[..16].copy_from_slice(&raw);
    let got = 16 + read_full(inner, &mut bytes[16..]).map_err(|e| TraceError::io(name, e))?;
    if got < len {
        return Err(truncated(got, len));
    }
    let header = TraceHeader::decode(&bytes).map_err(|e| TraceError::Corrupt {
        file: file(),
        offset: 88,
        what: match e {
            HeaderError::Corrupt(what) => what,
            HeaderError::Version(v) => format!("version {v}"),
        },
    })?;
    if header.events == UNFINISHED {
        return Err(TraceError::Unfinished { file: file() });
    }
    let fixed = header.encoded_len();
    let meta = (len > fixed).then(|| TraceMeta::decode(&bytes[fixed..]));
    let damaged = TraceError::Corrupt {
        file: file(),
        offset: fixed as u64,
        what: "the header is corrupt (its recording block does not decode)".into(),
    };
    Ok((header, len, meta.map(|m| m.ok_or(damaged)).transpose()?))
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
