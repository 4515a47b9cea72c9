//! Reading the native recorder's raw files (the format is documented in
//! `preload/src/lib.rs`): chunks -> images -> per-thread event lists.

use crate::trace::TraceError;
use std::collections::{BTreeMap, HashMap};

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
    /// CLOCK_MONOTONIC ns (TSC stamps are scaled when the image is parsed).
    pub time_ns: u64,
    pub op: RawOp,
    /// The stack id in the thread buffer's table (0: none).
    pub stack: u32,
}

/// One thread of an image: its buffer slot (stack ids are per slot) and its events in order.
#[derive(Debug, Default)]
pub struct RawThread {
    pub slot: u32,
    pub events: Vec<RawEvent>,
}

/// How an image ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawEnd {
    pub dropped_threads: u64,
    pub late_calls: u64,
    pub lost_bytes: u64,
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
    /// (slot, stack id) -> return addresses, innermost first.
    pub stacks: HashMap<(u32, u32), Vec<u64>>,
    /// The last `/proc/self/maps` written.
    pub maps: Option<String>,
    /// The thread that exec'd into the next image.
    pub exec_tid: Option<u32>,
    pub end: Option<RawEnd>,
    pub signal: Option<u64>,
    /// (TSC, CLOCK_MONOTONIC ns) read together as each chunk was written.
    pub clock: Vec<(u64, u64)>,
}

impl RawImage {
    /// Event stamps -> CLOCK_MONOTONIC ns: TSC ticks scaled linearly between the image's
    /// earliest and latest clock pairs (with a single pair, at the nominal 1 tick/ns: only
    /// an image that wrote no events has one).
    fn scale_times(&mut self) {
        if self.flags & FLAG_TSC == 0 {
            return;
        }
        let first = self
            .clock
            .iter()
            .min()
            .copied()
            .unwrap_or((0, self.start_ns));
        let last = self.clock.iter().max().copied().unwrap_or(first);
        let ticks = last.0.saturating_sub(first.0);
        let ns = last.1.saturating_sub(first.1);
        let per_tick = if ticks > 0 {
            ns as f64 / ticks as f64
        } else {
            1.0
        };
        for thread in self.threads.values_mut() {
            for e in &mut thread.events {
                let dt = (e.time_ns as i128 - first.0 as i128) as f64 * per_tick;
                e.time_ns = (first.1 as f64 + dt).max(0.0) as u64;
            }
        }
    }
}

/// A whole raw file: the process's images in order.
#[derive(Debug, Default)]
pub struct RawProcess {
    pub images: Vec<RawImage>,
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

/// Parses a raw file's bytes (`file` names it in errors). A chunk cut short at the end (the
/// process was killed while writing) ends the file; the image then has no `END`.
pub fn parse(bytes: &[u8], file: &str) -> Result<RawProcess, TraceError> {
    let mut process = RawProcess::default();
    let mut at = 0;
    while at + CHUNK_HEADER <= bytes.len() {
        if u32_at(bytes, at) != MAGIC {
            return Err(corrupt(file, at, "no chunk magic"));
        }
        let kind = u32_at(bytes, at + 4);
        let slot = u32_at(bytes, at + 8);
        let tid = u32_at(bytes, at + 12);
        let len = u64::from_le_bytes(bytes[at + 16..at + 24].try_into().expect("8 bytes"));
        let tsc = u64::from_le_bytes(bytes[at + 24..at + 32].try_into().expect("8 bytes"));
        let mono = u64::from_le_bytes(bytes[at + 32..at + 40].try_into().expect("8 bytes"));
        let start = at + CHUNK_HEADER;
        let Some(end) = usize::try_from(len).ok().and_then(|l| start.checked_add(l)) else {
            return Err(corrupt(file, at, "chunk length out of range"));
        };
        if end > bytes.len() {
            break;
        }
        let payload = &bytes[start..end];
        if kind == K_HEADER {
            let w: Vec<u64> = words(payload).collect();
            if w.len() < 6 || w[0] != 1 {
                return Err(corrupt(file, at, "bad image header"));
            }
            if let Some(done) = process.images.last_mut() {
                done.scale_times();
            }
            process.images.push(RawImage {
                clock: vec![(tsc, mono)],
                pid: w[1],
                ppid: w[2],
                start_ns: w[3],
                flags: w[4],
                fork_seq: w[5],
                ..RawImage::default()
            });
        } else {
            let Some(image) = process.images.last_mut() else {
                return Err(corrupt(file, at, "chunk before the first image header"));
            };
            image.clock.push((tsc, mono));
            match kind {
                K_EVENTS => parse_events(image, slot, tid, payload)
                    .map_err(|what| corrupt(file, start, what))?,
                K_MAPS => image.maps = Some(String::from_utf8_lossy(payload).into_owned()),
                K_EXEC => image.exec_tid = Some(tid),
                K_END => {
                    let w: Vec<u64> = words(payload).collect();
                    image.end = Some(RawEnd {
                        dropped_threads: w.first().copied().unwrap_or(0),
                        late_calls: w.get(1).copied().unwrap_or(0),
                        lost_bytes: w.get(2).copied().unwrap_or(0),
                    });
                }
                K_SIGNAL => image.signal = words(payload).next(),
                other => return Err(corrupt(file, at, format!("unknown chunk kind {other}"))),
            }
        }
        at = end;
    }
    if let Some(last) = process.images.last_mut() {
        last.scale_times();
    }
    Ok(process)
}

fn parse_events(image: &mut RawImage, slot: u32, tid: u32, payload: &[u8]) -> Result<(), String> {
    let w: Vec<u64> = words(payload).collect();
    let thread = image.threads.entry(tid).or_insert_with(|| RawThread {
        slot,
        events: Vec::new(),
    });
    let mut i = 0;
    let need = |i: usize, n: usize| {
        if i + n > w.len() {
            Err(format!("event cut short ({} of {n} words)", w.len() - i))
        } else {
            Ok(())
        }
    };
    while i < w.len() {
        let head = w[i];
        let kind = head & 0x7f;
        if kind == E_STACK {
            let n = (head >> 8) as usize;
            need(i, 2 + n)?;
            let id = w[i + 1] as u32;
            image
                .stacks
                .insert((slot, id), w[i + 2..i + 2 + n].to_vec());
            i += 2 + n;
            continue;
        }
        let seq = head >> 8;
        let site = head & HAS_SITE != 0;
        let body = match kind {
            E_ALLOC => 3,
            E_FREE => 1,
            E_REALLOC => 4,
            E_EXIT => 0,
            _ => return Err(format!("unknown event kind {kind}")),
        };
        let n = 2 + body + usize::from(site);
        need(i, n)?;
        let time_ns = w[i + 1];
        let b = &w[i + 2..i + n];
        let stack = if site { b[body] as u32 } else { 0 };
        let mut push = |seq, op| {
            thread.events.push(RawEvent {
                seq,
                time_ns,
                op,
                stack,
            })
        };
        match kind {
            E_ALLOC => push(
                seq,
                RawOp::Alloc {
                    size: b[0],
                    align: b[1],
                    addr: b[2],
                },
            ),
            E_FREE => push(seq, RawOp::Free { addr: b[0] }),
            E_REALLOC => {
                push(seq, RawOp::ReallocBegin { old: b[0] });
                push(
                    b[3],
                    RawOp::ReallocEnd {
                        old: b[0],
                        new: b[1],
                        size: b[2],
                    },
                );
            }
            _ => push(seq, RawOp::Exit),
        }
        i += n;
    }
    Ok(())
}
