//! Decoding one thread's events, chunk by chunk, as the converter merges the threads.

use super::{
    u64_at, Clock, RawEvent, RawImage, RawOp, RawProcess, RawThread, Stacks, E_ALLOC, E_EXIT,
    E_FREE, E_REALLOC, E_STACK, HAS_SITE,
};
use std::os::unix::fs::FileExt;

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
