//! Reading the native recorder's raw files (the format is documented in
//! `preload/src/lib.rs`): chunks -> images -> per-thread chunk lists, decoded lazily, one
//! event at a time, by a [`ThreadCursor`] while the threads are merged (the events of a
//! recording are never all in memory at once).

use crate::trace::TraceError;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

const MAGIC: u32 = 0x4B43_5346;
const K_HEADER: u32 = 1;
const K_EVENTS: u32 = 2;
const K_MAPS: u32 = 3;
const K_EXEC: u32 = 4;
const K_END: u32 = 5;
const K_SIGNAL: u32 = 6;

const E_ALLOC: u64 = 1;
const E_FREE: u64 = 2;
const E_REALLOC: u64 = 3;
const E_EXIT: u64 = 4;
const E_STACK: u64 = 5;
const HAS_SITE: u64 = 0x80;

pub const FLAG_STACKS: u64 = 1;
pub const FLAG_NO_UNWINDER: u64 = 4;
/// Event stamps are TSC ticks (scaled with the chunk headers' clock pairs).
pub const FLAG_TSC: u64 = 8;
const CHUNK_HEADER: usize = 48;

/// What one call did, with a realloc split at its two sequence points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawOp {
    Alloc {
        size: u64,
        align: u64,
        addr: u64,
    },
    Free {
        addr: u64,
    },
    /// The realloc's first point: the old block may be released from here on.
    ReallocBegin {
        old: u64,
    },
    /// Its second point: the block is at `new`.
    ReallocEnd {
        old: u64,
        new: u64,
        size: u64,
    },
    Exit,
}

#[derive(Clone, Copy, Debug)]
pub struct RawEvent {
    pub seq: u64,
    /// CLOCK_MONOTONIC ns (TSC stamps are scaled as they are decoded).
    pub time_ns: u64,
    pub op: RawOp,
    /// The stack id in the thread buffer's table (0: none).
    pub stack: u32,
}

/// One `EVENTS` chunk's payload: `start..end` of the file's bytes.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    start: usize,
    end: usize,
    /// The image's `MAPS` chunks before this one (its stacks are symbolized with the last
    /// of them, see [`RawImage::maps_for`]).
    maps: usize,
}

/// One thread of an image: its buffer slot (stack ids are per slot) and its chunks in order.
#[derive(Debug, Default)]
pub struct RawThread {
    pub slot: u32,
    chunks: Vec<Chunk>,
}

/// How an image ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawEnd {
    pub dropped_threads: u64,
    pub late_calls: u64,
    pub lost_bytes: u64,
}

/// Event stamps -> CLOCK_MONOTONIC ns: TSC ticks scaled linearly between the image's
/// earliest and latest clock pairs (with a single pair, at the nominal 1 tick/ns: only an
/// image that wrote no events has one); the identity for `CLOCK_MONOTONIC` stamps.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    tsc: bool,
    first: (u64, u64),
    per_tick: f64,
}

impl Clock {
    #[inline]
    pub fn ns(&self, stamp: u64) -> u64 {
        if !self.tsc {
            return stamp;
        }
        let dt = stamp.wrapping_sub(self.first.0) as i64 as f64 * self.per_tick;
        (self.first.1 as f64 + dt).max(0.0) as u64
    }
}

/// One program image of a process (a new one after each exec).
#[derive(Debug, Default)]
pub struct RawImage {
    pub pid: u64,
    pub ppid: u64,
    pub start_ns: u64,
    pub flags: u64,
    pub fork_seq: u64,
    /// By raw thread id.
    pub threads: BTreeMap<u32, RawThread>,
    /// Every `/proc/self/maps` written, in order (the recorder writes them before a chunk
    /// whose stacks may be in objects loaded since, and at the end).
    pub maps: Vec<String>,
    /// The thread that exec'd into the next image.
    pub exec_tid: Option<u32>,
    pub end: Option<RawEnd>,
    pub signal: Option<u64>,
    /// The highest progress mark of its chunks: every event with a lower sequence number is
    /// in the file already (the preload library's `mark`).
    pub mark: u64,
    /// The earliest and latest (TSC, CLOCK_MONOTONIC ns) pairs, read together as chunks
    /// were written.
    clock_min: (u64, u64),
    clock_max: (u64, u64),
}

impl RawImage {
    pub fn clock(&self) -> Clock {
        let (first, last) = (self.clock_min, self.clock_max);
        let ticks = last.0.saturating_sub(first.0);
        let ns = last.1.saturating_sub(first.1);
        Clock {
            tsc: self.flags & FLAG_TSC != 0,
            first,
            per_tick: if ticks > 0 {
                ns as f64 / ticks as f64
            } else {
                1.0
            },
        }
    }

    /// Which of [`RawImage::maps`] symbolizes the stacks of a chunk after `before` of them:
    /// the last before it, or for a chunk before any (a recorder that wrote them only at the
    /// end) the first.
    pub fn maps_for(before: usize) -> usize {
        before.saturating_sub(1)
    }

    fn saw_clock(&mut self, pair: (u64, u64)) {
        self.clock_min = self.clock_min.min(pair);
        self.clock_max = self.clock_max.max(pair);
    }
}

/// A whole raw file: the process's images in order, over the open file (events are read
/// chunk by chunk as they are merged). While the program runs, [`RawProcess::poll`] indexes
/// the chunks written since the last call.
#[derive(Debug, Default)]
pub struct RawProcess {
    file: Option<File>,
    pub images: Vec<RawImage>,
    /// The file offset up to which chunks are indexed.
    at: usize,
}

fn corrupt(file: &str, offset: usize, what: impl Into<String>) -> TraceError {
    TraceError::Corrupt {
        file: file.to_string(),
        offset: offset as u64,
        what: what.into(),
    }
}

fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[inline(always)]
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The image an image-header chunk starts (its clock pair `pair`), or `None` when the
/// payload is not a version-1 header.
fn image_from_header(payload: &[u8], pair: (u64, u64)) -> Option<RawImage> {
    let w: Vec<u64> = words(payload).collect();
    if w.len() < 6 || w[0] != 1 {
        return None;
    }
    Some(RawImage {
        clock_min: pair,
        clock_max: pair,
        pid: w[1],
        ppid: w[2],
        start_ns: w[3],
        flags: w[4],
        fork_seq: w[5],
        ..RawImage::default()
    })
}

/// An `END` chunk's counts (missing words are 0).
fn end_of(payload: &[u8]) -> RawEnd {
    let w: Vec<u64> = words(payload).collect();
    RawEnd {
        dropped_threads: w.first().copied().unwrap_or(0),
        late_calls: w.get(1).copied().unwrap_or(0),
        lost_bytes: w.get(2).copied().unwrap_or(0),
    }
}

/// Words after the head and the time of an event of `kind` (before its site, if any);
/// `None` for an unknown kind.
fn body_words(kind: u64) -> Option<usize> {
    match kind {
        E_ALLOC => Some(3),
        E_FREE => Some(1),
        E_REALLOC => Some(4),
        E_EXIT => Some(0),
        _ => None,
    }
}

/// Opens and indexes the raw file `path` (a missing file is an empty process): chunk headers
/// only, events are decoded later. A chunk cut short at the end (the process was killed
/// while writing) ends the file; the image then has no `END`.
pub fn parse(path: &Path) -> Result<RawProcess, TraceError> {
    let mut process = RawProcess::default();
    process.poll(path)?;
    Ok(process)
}

impl RawProcess {
    /// Indexes the chunks of `path` written since the last call (the file of a program that
    /// may still run: an incomplete chunk at the end waits for the next call); true if
    /// there were any. A file that does not exist (yet) has none.
    pub fn poll(&mut self, path: &Path) -> Result<bool, TraceError> {
        let name = path.display().to_string();
        let io = |e| TraceError::Io {
            file: name.clone(),
            source: e,
        };
        if self.file.is_none() {
            match File::open(path) {
                Ok(f) => self.file = Some(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(io(e)),
            }
        }
        let file = self.file.as_ref().expect("opened");
        let size = file.metadata().map_err(io)?.len() as usize;
        let before = self.at;
        self.at = index_chunks(file, size, self.at, &mut self.images, &name)?;
        Ok(self.at != before)
    }
}

/// Indexes the complete chunks of `file` (`size` bytes) from offset `at` on into `images`;
/// returns the offset after the last complete one.
fn index_chunks(
    file: &File,
    size: usize,
    mut at: usize,
    images: &mut Vec<RawImage>,
    name: &str,
) -> Result<usize, TraceError> {
    let io = |e| TraceError::Io {
        file: name.to_string(),
        source: e,
    };
    let mut header = [0u8; CHUNK_HEADER];
    let mut payload = Vec::new();
    while at + CHUNK_HEADER <= size {
        file.read_exact_at(&mut header, at as u64).map_err(io)?;
        let h = &header;
        if u32_at(h, 0) != MAGIC {
            return Err(corrupt(name, at, "no chunk magic"));
        }
        let kind = u32_at(h, 4);
        let slot = u32_at(h, 8);
        let tid = u32_at(h, 12);
        let len = u64_at(h, 16);
        let pair = (u64_at(h, 24), u64_at(h, 32));
        let start = at + CHUNK_HEADER;
        let Some(end) = usize::try_from(len).ok().and_then(|l| start.checked_add(l)) else {
            return Err(corrupt(name, at, "chunk length out of range"));
        };
        if end > size {
            break;
        }
        if kind != K_EVENTS {
            payload.resize(end - start, 0);
            file.read_exact_at(&mut payload, start as u64).map_err(io)?;
        }
        if kind == K_HEADER {
            let Some(image) = image_from_header(&payload, pair) else {
                return Err(corrupt(name, at, "bad image header"));
            };
            images.push(image);
        } else {
            let Some(image) = images.last_mut() else {
                return Err(corrupt(name, at, "chunk before the first image header"));
            };
            image.saw_clock(pair);
            match kind {
                K_EVENTS => {
                    if !len.is_multiple_of(8) {
                        return Err(corrupt(name, start, "events not in whole words"));
                    }
                    image.mark = image.mark.max(u64_at(h, 40));
                    let thread = image.threads.entry(tid).or_insert_with(|| RawThread {
                        slot,
                        chunks: Vec::new(),
                    });
                    thread.chunks.push(Chunk {
                        start,
                        end,
                        maps: image.maps.len(),
                    });
                }
                K_MAPS => image
                    .maps
                    .push(String::from_utf8_lossy(&payload).into_owned()),
                K_EXEC => image.exec_tid = Some(tid),
                K_END => image.end = Some(end_of(&payload)),
                K_SIGNAL => image.signal = words(&payload).next(),
                other => return Err(corrupt(name, at, format!("unknown chunk kind {other}"))),
            }
        }
        at = end;
    }
    Ok(at)
}

impl RawProcess {
    /// A cursor over the events of `thread` (a thread of one of this file's images).
    pub fn cursor(&self, thread: &RawThread, clock: Clock) -> ThreadCursor {
        ThreadCursor {
            buf: Vec::new(),
            next_chunk: 0,
            slot: thread.slot,
            clock,
            base: 0,
            maps: 0,
            at: 0,
            end: 0,
            pending: None,
            bytes_read: 0,
        }
    }

    /// The bytes of all images' events (what [`ThreadCursor`]s read in all).
    pub fn event_bytes(&self) -> u64 {
        self.images
            .iter()
            .flat_map(|i| i.threads.values())
            .flat_map(|t| &t.chunks)
            .map(|c| (c.end - c.start) as u64)
            .sum()
    }
}

/// (slot, stack id) -> the maps to symbolize it with and its return addresses, innermost
/// first: filled as the cursors decode `STACK` events (a stack is always defined before the
/// first call that names it, in the same slot's stream).
pub type Stacks = FastMap<(u32, u32), (usize, Vec<u64>)>;

/// A hash map with a multiplicative hash (FxHash's): the converter looks a stack up per
/// event and a frame per return address, and SipHash was a tenth of a `--stacks`
/// conversion. The keys are the recorder's own ids and addresses, not adversarial input.
pub type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;

#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline(always)]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        for &b in words.remainder() {
            self.add(b as u64);
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, v: u8) {
        self.add(v as u64)
    }

    #[inline(always)]
    fn write_u32(&mut self, v: u32) {
        self.add(v as u64)
    }

    #[inline(always)]
    fn write_u64(&mut self, v: u64) {
        self.add(v)
    }

    #[inline(always)]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64)
    }

    fn finish(&self) -> u64 {
        self.0
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
    /// The thread's next chunk to read.
    next_chunk: usize,
    slot: u32,
    clock: Clock,
    /// The file offset of `buf`, for errors.
    base: usize,
    /// The maps of the current chunk ([`RawImage::maps_for`]).
    maps: usize,
    /// The position in `buf` and its length.
    at: usize,
    end: usize,
    /// A realloc's second point, due after its first.
    pending: Option<RawEvent>,
    /// Bytes of chunks read so far.
    pub bytes_read: u64,
}

impl ThreadCursor {
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        u64_at(&self.buf, self.at + 8 * i)
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
        (self.base, self.at, self.end) = (first.start, 0, self.buf.len());
        self.bytes_read += self.buf.len() as u64;
        Ok(true)
    }

    /// The next event of `thread` (this cursor's thread of `process`), or `None` if there is
    /// none in the chunks indexed so far.
    pub fn next_event(
        &mut self,
        process: &RawProcess,
        thread: &RawThread,
        stacks: &mut Stacks,
    ) -> Result<Option<RawEvent>, CursorError> {
        if let Some(e) = self.pending.take() {
            return Ok(Some(e));
        }
        loop {
            if self.at >= self.end {
                if !self.read_next_chunk(process, thread)? {
                    return Ok(None);
                }
                continue;
            }
            let left = (self.end - self.at) / 8;
            let need = |n: usize| {
                if n > left {
                    Err(CursorError::Corrupt(
                        self.base + self.at,
                        format!("event cut short ({left} of {n} words)"),
                    ))
                } else {
                    Ok(())
                }
            };
            let head = self.word(0);
            let kind = head & 0x7f;
            if kind == E_STACK {
                let n = (head >> 8) as usize;
                need(2usize.saturating_add(n))?;
                let id = self.word(1) as u32;
                let ips = (0..n).map(|i| self.word(2 + i)).collect();
                stacks.insert((self.slot, id), (self.maps, ips));
                self.at += 8 * (2 + n);
                continue;
            }
            let site = head & HAS_SITE != 0;
            let Some(body) = body_words(kind) else {
                return Err(CursorError::Corrupt(
                    self.base + self.at,
                    format!("unknown event kind {kind}"),
                ));
            };
            let n = 2 + body + usize::from(site);
            need(n)?;
            let time_ns = self.clock.ns(self.word(1));
            let stack = if site { self.word(2 + body) as u32 } else { 0 };
            let event = |seq, op| RawEvent {
                seq,
                time_ns,
                op,
                stack,
            };
            let seq = head >> 8;
            let e = match kind {
                E_ALLOC => event(
                    seq,
                    RawOp::Alloc {
                        size: self.word(2),
                        align: self.word(3),
                        addr: self.word(4),
                    },
                ),
                E_FREE => event(seq, RawOp::Free { addr: self.word(2) }),
                E_REALLOC => {
                    let old = self.word(2);
                    self.pending = Some(event(
                        self.word(5),
                        RawOp::ReallocEnd {
                            old,
                            new: self.word(3),
                            size: self.word(4),
                        },
                    ));
                    event(seq, RawOp::ReallocBegin { old })
                }
                _ => event(seq, RawOp::Exit),
            };
            self.at += 8 * n;
            return Ok(Some(e));
        }
    }
}
