//! Reading the binary form: an iterator of events in constant memory (a 256 KiB buffer plus a
//! bitset of live ids).

use super::format::{
    decode_event, DecodeError, TraceHeader, HEADER_LEN, MAGIC, MAX_EVENT_LEN, UNFINISHED, VERSION,
};
use super::ids::LiveSet;
use super::{Event, ObjectId, TraceError};
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

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
        let mut raw = [0u8; HEADER_LEN];
        let got = read_full(&mut inner, &mut raw).map_err(|e| TraceError::io(name, e))?;
        if got < MAGIC.len() || raw[..MAGIC.len()] != MAGIC {
            return Err(TraceError::BadMagic {
                file: name.to_string(),
                found: raw[..got.min(MAGIC.len())].to_vec(),
            });
        }
        if got < HEADER_LEN {
            return Err(TraceError::Truncated {
                file: name.to_string(),
                offset: got as u64,
                what: format!("the header is {HEADER_LEN} bytes"),
            });
        }
        let header =
            TraceHeader::decode(&raw).map_err(|version| TraceError::UnsupportedVersion {
                file: name.to_string(),
                version,
                supported: VERSION,
            })?;
        if header.events == UNFINISHED {
            return Err(TraceError::Unfinished {
                file: name.to_string(),
            });
        }
        Ok(TraceReader {
            inner,
            name: name.to_string(),
            header,
            buf: vec![0u8; BUF_LEN].into_boxed_slice(),
            pos: 0,
            end: 0,
            eof: false,
            base: HEADER_LEN as u64,
            events_read: 0,
            prev_id: 0,
            // Sized from the header up front (bounded, in case the header is corrupt: the set
            // grows on demand past that).
            live: LiveSet::with_capacity(header.id_limit.min(1 << 26) as usize),
            done: false,
        })
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
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        while !self.eof && self.end < MAX_EVENT_LEN {
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
        let payload = self.offset() - HEADER_LEN as u64;
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
        let id = event.id();
        self.prev_id = id;
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
        self.events_read += 1;
        Ok(Some(event))
    }
}

impl<R: Read> TraceReader<R> {
    /// The common case without refills or errors; `None` sends the caller to the slow path,
    /// which redoes the event with full error reporting (a failed check changes nothing).
    #[inline(always)]
    fn next_fast(&mut self) -> Option<Event> {
        if self.done
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
