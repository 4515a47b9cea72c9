//! Threads' chunks decoded ahead of the merge, on other threads.
//!
//! Decoding is about a third of the converting thread's time and needs nothing from the
//! merge (a chunk's events, stamps and stacks are its own; only the key a leading keyless
//! event takes comes from the chunk before, filled in when the chunk is adopted), so it can
//! run beside it: each cursor asks for its thread's next chunks ahead of need
//! ([`CHUNKS_AHEAD`]) and adopts them whole, in its thread's order. What stays on the
//! converting thread is the part that must run in order: the merge and the object ids.

use super::cursor::{ChunkBytes, CursorError};
use super::{Chunk, Clock, FastMap, RawEvent, RawImage, RawThread, Stacks};
use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A thread's chunks decoded ahead of the one its cursor is on: with two, a decoder is at
/// work on the next while the merge walks the current one (a decoded chunk is some 2-3 MB).
pub const CHUNKS_AHEAD: usize = 2;

/// A stand-in key for a leading keyless event (replaced when its chunk is adopted).
pub(super) const KEY_UNKNOWN: u64 = u64::MAX;

/// One chunk decoded whole.
pub(super) struct DecodedChunk {
    pub(super) events: Vec<RawEvent>,
    /// Its `STACK` events' definitions.
    pub(super) stacks: Stacks,
    /// What stopped its decoding, after `events`.
    pub(super) error: Option<CursorError>,
    /// Its payload's size.
    pub(super) bytes: u64,
}

impl DecodedChunk {
    /// A chunk none of whose events could be decoded.
    fn failed(error: CursorError, bytes: u64) -> DecodedChunk {
        DecodedChunk {
            events: Vec::new(),
            stacks: Stacks::default(),
            error: Some(error),
            bytes,
        }
    }
}

/// (image, raw thread id, chunk index in the thread).
type Key = (usize, u32, usize);

struct Job {
    key: Key,
    file: Arc<File>,
    chunk: Chunk,
    slot: u32,
    clock: Clock,
}

#[derive(Default)]
struct Shared {
    /// Jobs waiting, and whether the pool is closing.
    queue: Mutex<(VecDeque<Job>, bool)>,
    work: Condvar,
    done: Mutex<FastMap<Key, DecodedChunk>>,
    ready: Condvar,
    /// The decoding threads' CPU time, summed.
    cpu_ns: AtomicU64,
    /// Event lists the cursors are done with, to decode into again (a fresh 2-3 MB list per
    /// chunk cost a page fault per 4 KiB in the decoder and an unmapping in the merge).
    spare: Mutex<Vec<Vec<RawEvent>>>,
}

/// Decoding threads, shared by the cursors of one conversion.
pub struct DecodePool {
    shared: Arc<Shared>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl DecodePool {
    /// A pool of `threads` decoding threads (at least one).
    pub fn new(threads: usize) -> Arc<DecodePool> {
        let shared = Arc::new(Shared::default());
        let workers = (0..threads.max(1))
            .map(|i| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("fragsim-decode-{i}"))
                    .spawn(move || work(&shared))
                    .expect("a decoding thread")
            })
            .collect();
        Arc::new(DecodePool { shared, workers })
    }

    /// The decoding threads' CPU time so far.
    pub(crate) fn cpu_ns(&self) -> u64 {
        self.shared.cpu_ns.load(Ordering::Relaxed)
    }

    fn submit(&self, job: Job) {
        self.shared.queue.lock().expect("queue").0.push_back(job);
        self.shared.work.notify_one();
    }

    /// Waits for the chunk of `key` (submitted before).
    fn take(&self, key: Key) -> DecodedChunk {
        let mut done = self.shared.done.lock().expect("decoded chunks");
        loop {
            if let Some(c) = done.remove(&key) {
                return c;
            }
            done = self.shared.ready.wait(done).expect("decoded chunks");
        }
    }
}

impl Drop for DecodePool {
    fn drop(&mut self) {
        self.shared.queue.lock().expect("queue").1 = true;
        self.shared.work.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// A decoding thread: jobs until the pool closes.
fn work(shared: &Shared) {
    // The chunk's bytes, read into the same buffer each time (a fresh one cost a page fault
    // per 4 KiB).
    let mut buf = Vec::new();
    loop {
        let job = {
            let mut q = shared.queue.lock().expect("queue");
            loop {
                if let Some(job) = q.0.pop_front() {
                    break job;
                }
                if q.1 {
                    return;
                }
                q = shared.work.wait(q).expect("queue");
            }
        };
        let started = crate::record::thread_cpu_ns();
        // A decoder that panicked must not leave the merge waiting for its chunk.
        let spare = shared.spare.lock().expect("spare lists").pop();
        let chunk = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            decode(&job, &mut buf, spare.unwrap_or_default())
        }))
        .unwrap_or_else(|_| {
            let failed = "the chunk's decoder failed".into();
            DecodedChunk::failed(CursorError::Corrupt(job.chunk.start, failed), 0)
        });
        shared
            .cpu_ns
            .fetch_add(crate::record::thread_cpu_ns() - started, Ordering::Relaxed);
        shared
            .done
            .lock()
            .expect("decoded chunks")
            .insert(job.key, chunk);
        shared.ready.notify_all();
    }
}

/// Decodes `job`'s chunk (read into `buf`) into `events` (emptied first).
fn decode(job: &Job, buf: &mut Vec<u8>, mut events: Vec<RawEvent>) -> DecodedChunk {
    events.clear();
    let c = job.chunk;
    buf.resize(c.end - c.start, 0);
    let bytes = buf.len() as u64;
    if let Err(e) = job.file.read_exact_at(buf, c.start as u64) {
        return DecodedChunk::failed(CursorError::Io(e), bytes);
    }
    let chunk = ChunkBytes {
        buf,
        base: c.start,
        slot: job.slot,
        maps: RawImage::maps_for(c.maps),
        clock: job.clock,
    };
    let mut stacks = Stacks::default();
    // About four raw words an event.
    events.reserve(buf.len() / 32);
    let (_, error) = chunk.decode_run(
        0,
        &mut None,
        KEY_UNKNOWN,
        &mut stacks,
        &mut events,
        usize::MAX,
    );
    DecodedChunk {
        events,
        stacks,
        error,
        bytes,
    }
}

/// A cursor's tie to the pool: whose chunks it asks for, and how many it has asked for.
pub(super) struct PoolLink {
    pool: Arc<DecodePool>,
    image: usize,
    tid: u32,
    submitted: usize,
}

impl PoolLink {
    pub(super) fn new(pool: Arc<DecodePool>, image: usize, tid: u32) -> PoolLink {
        PoolLink {
            pool,
            image,
            tid,
            submitted: 0,
        }
    }

    /// Asks for the thread's chunks from `next` to [`CHUNKS_AHEAD`] past it that are
    /// indexed and not asked for yet; whether chunk `next` has been asked for.
    pub(super) fn ask_ahead(
        &mut self,
        file: Option<&Arc<File>>,
        thread: &RawThread,
        next: usize,
        clock: Clock,
    ) -> bool {
        let Some(file) = file else { return false };
        let upto = (next + CHUNKS_AHEAD).min(thread.chunks.len());
        while self.submitted < upto {
            let i = self.submitted;
            self.pool.submit(Job {
                key: (self.image, self.tid, i),
                file: Arc::clone(file),
                chunk: thread.chunks[i],
                slot: thread.slot,
                clock,
            });
            self.submitted += 1;
        }
        next < self.submitted
    }

    pub(super) fn take(&self, chunk: usize) -> DecodedChunk {
        self.pool.take((self.image, self.tid, chunk))
    }

    /// Gives an event list the cursor is done with back, to decode into again.
    pub(super) fn give_back(&self, events: Vec<RawEvent>) {
        if events.capacity() > 0 {
            self.pool
                .shared
                .spare
                .lock()
                .expect("spare lists")
                .push(events);
        }
    }
}
