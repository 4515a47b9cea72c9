//! Decoding one thread's events, a chunk at a time, as the converter merges the threads.
//!
//! A chunk is decoded a batch at a time when the thread reaches it ([`ThreadCursor::refill`]) into a list
//! the merge then walks ([`ThreadCursor::current`], [`ThreadCursor::advance`]): decoding one
//! event per call handed a 56-byte `Result<Option<RawEvent>>` back through memory for every
//! event, and reading it back right after it was stored was a fifth of the merge's time.

use super::{
    u64_at, Clock, RawEvent, RawImage, RawOp, RawProcess, RawThread, Stacks, E_ALIGNED, E_ALLOC,
    E_CTL, E_EXIT, E_FLAGS, E_FREE, E_MAP, E_REALLOC, E_STACK, E_UNMAP, HAS_SITE, REENTRANT,
    SAME_STAMP,
};
use std::os::unix::fs::FileExt;

/// Events decoded at a time: a whole chunk's (some 50,000, 2.8 MB of them) left each
/// thread's decoded events out of the cache by the time the merge reached them.
const DECODE_BATCH: usize = 512;

/// Words after the head and the stamp of an event of `kind` (before its site, if any);
/// `None` for an unknown kind.
fn body_words(kind: u64) -> Option<usize> {
    match kind {
        E_ALLOC => Some(2),
        E_ALIGNED => Some(3),
        E_FREE => Some(1),
        E_REALLOC => Some(4),
        E_EXIT => Some(0),
        E_MAP | E_UNMAP => Some(2),
        E_FLAGS => Some(1),
        E_CTL => Some(2),
        _ => None,
    }
}

impl RawProcess {
    /// A cursor over the events of `thread` (a thread of one of this file's images).
    pub fn cursor(&self, thread: &RawThread, clock: Clock) -> ThreadCursor {
        ThreadCursor {
            buf: Vec::new(),
            decoded: 0,
            stamp: None,
            events: Vec::new(),
            next: 0,
            error: None,
            next_chunk: 0,
            slot: thread.slot,
            clock,
            base: 0,
            maps: 0,
            bytes_read: 0,
            last_key: 0,
            pool: None,
        }
    }
}

/// Why a cursor stopped: the file offset and what is wrong there, or a read that failed.
#[derive(Debug)]
pub enum CursorError {
    Corrupt(usize, String),
    Io(std::io::Error),
}

/// Decodes one thread's events in order, reading its chunks one at a time (more may be
/// indexed between calls: a cursor that ran out goes on with them).
pub struct ThreadCursor {
    /// The current chunk's payload.
    buf: Vec<u8>,
    /// The bytes of it decoded so far, and the stamp of the last event among them.
    decoded: usize,
    stamp: Option<u64>,
    /// Its next events, decoded (a realloc as its two points), and the one due next.
    events: Vec<RawEvent>,
    next: usize,
    /// What stopped the decoding of the current chunk, due once the events before it are.
    error: Option<CursorError>,
    /// The thread's next chunk to read.
    next_chunk: usize,
    slot: u32,
    clock: Clock,
    /// The file offset of `buf`, for errors.
    base: usize,
    /// The maps of the current chunk ([`RawImage::maps_for`]).
    maps: usize,
    /// Bytes of chunks read so far.
    pub bytes_read: u64,
    /// The key of the last keyed event decoded: a `MAP`/`UNMAP` event, which has none,
    /// takes it (it comes right after that event in the merge).
    last_key: u64,
    /// Where its chunks are decoded, if not here.
    pool: Option<super::pool::PoolLink>,
}

impl ThreadCursor {
    /// The event due next, if the chunks decoded so far hold one.
    #[inline(always)]
    pub fn current(&self) -> Option<&RawEvent> {
        self.events.get(self.next)
    }

    /// Has the thread's chunks (of image `image`, raw thread id `tid`) decoded by `pool`
    /// ahead of need, instead of here as they are reached.
    pub(crate) fn use_pool(
        &mut self,
        pool: std::sync::Arc<super::DecodePool>,
        image: usize,
        tid: u32,
    ) {
        self.pool = Some(super::pool::PoolLink::new(pool, image, tid));
    }

    /// Past the current event.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.next += 1;
    }

    /// Once the current chunk's events are used up, reads and decodes the thread's next
    /// chunk; false when there is none (yet). A corrupt event is an error once the events
    /// before it have been used.
    pub fn refill(
        &mut self,
        process: &RawProcess,
        thread: &RawThread,
        stacks: &mut Stacks,
    ) -> Result<bool, CursorError> {
        loop {
            if self.next < self.events.len() {
                return Ok(true);
            }
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if let Some(link) = &mut self.pool {
                if !link.ask_ahead(process.file.as_ref(), thread, self.next_chunk, self.clock) {
                    return Ok(false);
                }
                let chunk = link.take(self.next_chunk);
                let done = self.adopt(chunk, stacks);
                // Its successors decode while the merge walks it.
                if let Some(link) = &mut self.pool {
                    link.give_back(done);
                    link.ask_ahead(process.file.as_ref(), thread, self.next_chunk, self.clock);
                }
                continue;
            }
            if self.decoded == self.buf.len() && !self.read_next_chunk(process, thread)? {
                return Ok(false);
            }
            self.decode_some(stacks);
        }
    }

    /// Reads the next chunk of `thread` into `buf`; false when there is none (yet).
    fn read_next_chunk(
        &mut self,
        process: &RawProcess,
        thread: &RawThread,
    ) -> Result<bool, CursorError> {
        let (Some(first), Some(file)) = (thread.chunks.get(self.next_chunk), &process.file) else {
            return Ok(false);
        };
        self.next_chunk += 1;
        self.maps = RawImage::maps_for(first.maps);
        self.buf.resize(first.end - first.start, 0);
        file.read_exact_at(&mut self.buf, first.start as u64)
            .map_err(CursorError::Io)?;
        self.base = first.start;
        self.decoded = 0;
        self.stamp = None;
        self.bytes_read += self.buf.len() as u64;
        Ok(true)
    }

    /// Decodes the next [`DECODE_BATCH`] events of `buf` into `events` (a `STACK` event into
    /// `stacks`), or up to a corrupt event.
    fn decode_some(&mut self, stacks: &mut Stacks) {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        self.next = 0;
        let bytes = ChunkBytes {
            buf: &self.buf,
            base: self.base,
            slot: self.slot,
            maps: self.maps,
            clock: self.clock,
        };
        // A local copy: through `self` it went to memory at every event.
        let mut stamp = self.stamp;
        let (at, error) = bytes.decode_run(
            self.decoded,
            &mut stamp,
            self.last_key,
            stacks,
            &mut events,
            DECODE_BATCH,
        );
        self.stamp = stamp;
        self.error = error;
        self.decoded = at;
        if let Some(e) = events.last() {
            self.last_key = e.seq;
        }
        self.events = events;
    }

    /// Takes a chunk a decoder decoded whole as the thread's next one (its `STACK` events
    /// into `stacks`); returns the event list it is done with.
    fn adopt(&mut self, chunk: super::pool::DecodedChunk, stacks: &mut Stacks) -> Vec<RawEvent> {
        let super::pool::DecodedChunk {
            mut events,
            stacks: defined,
            error,
            bytes,
        } = chunk;
        // A mapping or a call's flags first in its chunk has the thread's last key.
        for e in events.iter_mut().take_while(|e| e.op.is_keyless()) {
            e.seq = self.last_key;
        }
        stacks.extend(defined);
        if let Some(e) = events.last() {
            self.last_key = e.seq;
        }
        self.next = 0;
        self.error = error;
        self.buf.clear();
        self.decoded = 0;
        self.bytes_read += bytes;
        self.next_chunk += 1;
        std::mem::replace(&mut self.events, events)
    }
}

/// One chunk's bytes and what decoding its events needs.
pub(super) struct ChunkBytes<'b> {
    pub(super) buf: &'b [u8],
    /// Its file offset, for errors.
    pub(super) base: usize,
    pub(super) slot: u32,
    /// The chunk's maps ([`RawImage::maps_for`]).
    pub(super) maps: usize,
    pub(super) clock: Clock,
}

impl ChunkBytes<'_> {
    /// Decodes events from byte `at` onto `out` (a `STACK` event into `stacks`) until `limit`
    /// of them, the end, or a corrupt event; returns where it stopped and the error, if one
    /// stopped it. `stamp`: the chunk's last stamp so far; `last_key`: the key of the
    /// thread's last event before `at` (a keyless event takes it).
    #[inline]
    pub(super) fn decode_run(
        &self,
        mut at: usize,
        stamp: &mut Option<u64>,
        last_key: u64,
        stacks: &mut Stacks,
        out: &mut Vec<RawEvent>,
        limit: usize,
    ) -> (usize, Option<CursorError>) {
        let first = out.len();
        let end = first.saturating_add(limit);
        while at < self.buf.len() && out.len() < end {
            match self.decode_event(at, stamp, (first, last_key), stacks, out) {
                Ok(bytes) => at += bytes,
                Err(e) => return (self.buf.len(), Some(e)),
            }
        }
        (at, None)
    }

    /// Decodes the `STACK` event at byte `at` of `buf` into `stacks`; returns its length.
    fn decode_stack(&self, at: usize, stacks: &mut Stacks) -> Result<usize, CursorError> {
        let word = |i: usize| u64_at(self.buf, at + 8 * i);
        let (head, left) = (word(0), (self.buf.len() - at) / 8);
        let n = (head >> 8) as usize;
        if 2usize.saturating_add(n) > left {
            return Err(CursorError::Corrupt(
                self.base + at,
                format!(
                    "event cut short ({left} of {} words)",
                    2usize.saturating_add(n)
                ),
            ));
        }
        let ips = (0..n).map(|i| word(2 + i)).collect();
        stacks.insert((self.slot, word(1) as u32), (self.maps, ips));
        Ok(8 * (2 + n))
    }

    /// Decodes the event at byte `at` of `buf` onto `out`; returns its length. `stamp`: the
    /// chunk's last stamp (an event with `SAME_STAMP` has none of its own); a keyless event
    /// takes the key of the last event of `out` past `first`, else `last_key`.
    #[inline(always)]
    fn decode_event(
        &self,
        at: usize,
        stamp: &mut Option<u64>,
        (first, last_key): (usize, u64),
        stacks: &mut Stacks,
        out: &mut Vec<RawEvent>,
    ) -> Result<usize, CursorError> {
        let buf = self.buf;
        // Read only for a keyless event: the last decoded in this run, else `last_key`.
        let key_before = |out: &Vec<RawEvent>| match out.len() > first {
            true => out[out.len() - 1].seq,
            false => last_key,
        };
        let word = |i: usize| u64_at(buf, at + 8 * i);
        let corrupt = |what: String| CursorError::Corrupt(self.base + at, what);
        let left = (buf.len() - at) / 8;
        let need = |n: usize| {
            if n > left {
                Err(corrupt(format!("event cut short ({left} of {n} words)")))
            } else {
                Ok(())
            }
        };
        let head = word(0);
        let kind = head & 0x1f;
        if kind == E_STACK {
            return self.decode_stack(at, stacks);
        }
        let Some(body) = body_words(kind) else {
            return Err(corrupt(format!("unknown event kind {kind}")));
        };
        let site = head & HAS_SITE != 0;
        let stamped = usize::from(head & SAME_STAMP == 0);
        let n = 1 + stamped + body + usize::from(site);
        need(n)?;
        if stamped == 1 {
            *stamp = Some(word(1));
        }
        let Some(stamp) = *stamp else {
            return Err(corrupt(
                "an event without a stamp first in its chunk".into(),
            ));
        };
        let b = |i: usize| word(1 + stamped + i);
        let event = |seq, op| RawEvent {
            seq,
            time_ns: self.clock.ns(stamp),
            op,
            stack: if site { b(body) as u32 } else { 0 },
            reentrant: head & REENTRANT != 0,
        };
        let seq = head >> 8;
        let e = match kind {
            E_ALLOC => event(
                seq,
                RawOp::Alloc {
                    size: b(0),
                    align: 0,
                    addr: b(1),
                },
            ),
            E_ALIGNED => event(
                seq,
                RawOp::Alloc {
                    size: b(0),
                    align: b(1),
                    addr: b(2),
                },
            ),
            E_FREE => event(seq, RawOp::Free { addr: b(0) }),
            E_REALLOC => {
                let old = b(0);
                out.push(event(seq, RawOp::ReallocBegin { old }));
                event(
                    b(3),
                    RawOp::ReallocEnd {
                        old,
                        new: b(1),
                        size: b(2),
                    },
                )
            }
            E_MAP => event(
                key_before(out),
                RawOp::Map {
                    addr: b(0),
                    len: b(1),
                },
            ),
            E_FLAGS => event(key_before(out), RawOp::Flags { flags: b(0) as u32 }),
            E_UNMAP => event(
                key_before(out),
                RawOp::Unmap {
                    addr: b(0),
                    len: b(1),
                },
            ),
            E_CTL => event(
                seq,
                RawOp::Control {
                    code: b(0),
                    arg: b(1),
                },
            ),
            _ => event(seq, RawOp::Exit),
        };
        out.push(e);
        Ok(8 * n)
    }
}
