//! Reading the native recorder's raw files (the format is documented in
//! `preload/src/lib.rs`): chunks -> images -> per-thread chunk lists, decoded lazily, a
//! chunk at a time, by a [`ThreadCursor`] while the threads are merged (the events of a
//! recording are never all in memory at once).
//!
//! Chunks are indexed in `index.rs`, decoded in `cursor.rs`; `hash.rs` holds the converter's
//! fast hash map.

mod cursor;
mod hash;
mod index;
mod pool;

pub use cursor::{CursorError, ThreadCursor};
pub use hash::{FastMap, Stacks};
pub use pool::DecodePool;

use crate::trace::TraceError;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

// The preload library `include!`s the same file and uses the constants this side does not.
#[allow(dead_code)]
pub(crate) mod wire;
use wire::{
    CHUNK_HEADER, E_ALIGNED, E_ALLOC, E_CTL, E_EXIT, E_FLAGS, E_FREE, E_MAP, E_REALLOC, E_STACK,
    E_UNMAP, FLAGS_KNOWN, HAS_SITE, K_ALLOCATOR, K_END, K_EVENTS, K_EXEC, K_HEADER, K_MAPS,
    K_SIGNAL, MAGIC, RAW_VERSION, REENTRANT, SAME_STAMP,
};
pub use wire::{FLAG_AUTO_ORDER, FLAG_NO_UNWINDER, FLAG_STACKS, FLAG_TSC, FLAG_TSC_ORDER};

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
    /// The allocator mapped `[addr, addr + len)` inside a call of the thread (`MAP`).
    Map {
        addr: u64,
        len: u64,
    },
    /// It unmapped that range (`UNMAP`: trimming what it just mapped, or returning memory).
    Unmap {
        addr: u64,
        len: u64,
    },
    /// The thread's next call has these `MALLOCX_` flags (`FLAGS`).
    Flags {
        flags: u32,
    },
    /// A `mallctl` write (`CTL`): `crate::trace::Control::code`'s code and argument.
    Control {
        code: u64,
        arg: u64,
    },
}

impl RawOp {
    /// A `MAP`, `UNMAP` or `FLAGS` event: it has no order key of its own (it carries its
    /// thread's last one).
    pub(crate) fn is_keyless(&self) -> bool {
        matches!(
            self,
            RawOp::Map { .. } | RawOp::Unmap { .. } | RawOp::Flags { .. }
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub struct RawEvent {
    pub seq: u64,
    /// CLOCK_MONOTONIC ns (TSC stamps are scaled as they are decoded).
    pub time_ns: u64,
    pub op: RawOp,
    /// The stack id in the thread buffer's table (0: none).
    pub stack: u32,
    /// Made inside another allocator call of its thread.
    pub reentrant: bool,
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
    /// The program's jemalloc as it ran (`ALLOCATOR`: `key value` lines), if it had one.
    pub allocator: Option<String>,
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
    pub(crate) fn maps_for(before: usize) -> usize {
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
    file: Option<std::sync::Arc<File>>,
    pub images: Vec<RawImage>,
    /// The file offset up to which chunks are indexed.
    at: usize,
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
                Ok(f) => self.file = Some(std::sync::Arc::new(f)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(io(e)),
            }
        }
        let file = self.file.as_ref().expect("opened");
        let size = file.metadata().map_err(io)?.len() as usize;
        let before = self.at;
        self.at = index::index_chunks(file, size, self.at, &mut self.images, &name)?;
        Ok(self.at != before)
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
