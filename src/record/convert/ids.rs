//! The object ids on a thread of their own: the merge hands its calls in order, addresses
//! still in them, to this stage, which keeps the address table (or, with shard threads beside
//! it, only the ids: `shards.rs`), hands out the ids and builds the records. The merge and the
//! address table were the two parts of a conversion that must run in order; as a pipeline
//! each needs only its own share of an event's time.

use super::calls::Emit;
use super::shards::Shards;
use super::{exhausted, ConvertSummary, Sink, SINK_BATCH};
use crate::record::raw::RawOp;
use crate::record::thread_cpu_ns;
use crate::trace::{AddressImporter, IssueCounts, ObjectId, Record, SiteId, ThreadId, TraceError};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Staged items sent at a time: 256 KiB of them, still in cache when the id thread reads them
/// (`convert_raw --threads 4`, 7 runs each in turn: the id thread 26.5 -> 23.8 ns an event on
/// the C++ program's raw file, 26.0 -> 23.7 on CPython's, against 16,384 at a time; 1,024 and
/// 2,048 were between the two).
pub(super) const STAGED_BATCH: usize = 4096;

/// Batches on their way to the id thread (a bound, so a slow id thread holds the merge back
/// instead of letting its batches pile up in memory).
pub(super) const STAGED_IN_FLIGHT: usize = 4;

/// Who made a call and when: what the merge knows of it and the records need.
#[derive(Clone, Copy, Debug)]
pub(super) struct CallPoint {
    pub thread: ThreadId,
    pub at: u64,
    pub site: Option<SiteId>,
    pub reentrant: bool,
    pub mallocx_flags: u32,
}

/// One item in the merge's order.
#[derive(Clone)]
pub(super) enum Staged {
    /// An alloc, free or either point of a realloc, by address.
    Call(RawOp, CallPoint),
    /// A record with no address in it (a site, mapping, control or thread exit).
    Record(Record),
    /// An exec released every live object.
    ReleaseAll { thread: ThreadId, at: u64 },
}

/// The calls `op` (an alloc, a free or a realloc's point, by address) makes, pushed onto
/// `out`; `pending`: the object a realloc of the same thread moves between its two points.
/// The one translation from addresses to ids, whichever thread runs it.
#[inline(always)]
pub(super) fn translate(
    importer: &mut AddressImporter,
    op: RawOp,
    pending: &mut Option<Option<ObjectId>>,
    out: &mut Emit,
    file: &str,
) -> Result<(), TraceError> {
    match op {
        RawOp::Alloc { size, align, addr } => {
            importer
                .alloc(addr, size, align, out)
                .map_err(|_| exhausted(file))?;
        }
        RawOp::Free { addr } => {
            importer.free(addr, out);
        }
        RawOp::ReallocBegin { old } => *pending = Some(importer.detach(old)),
        RawOp::ReallocEnd { new, size, .. } => {
            let id = pending.take().flatten();
            importer
                .attach(id, new, size, out)
                .map_err(|_| exhausted(file))?;
        }
        RawOp::Exit
        | RawOp::Map { .. }
        | RawOp::Unmap { .. }
        | RawOp::Flags { .. }
        | RawOp::Control { .. } => unreachable!("the merge writes these itself"),
    }
    Ok(())
}

/// Where the id thread finds an address's object: the address table itself, or the shard
/// threads' answers ([`super::shards`]).
pub(super) trait AddressStage: Send + 'static {
    /// A batch is next: false if the shards have stopped.
    fn batch(&mut self) -> bool;
    /// [`translate`]'s work.
    fn call(
        &mut self,
        op: RawOp,
        pending: &mut Option<Option<ObjectId>>,
        out: &mut Emit,
        file: &str,
    ) -> Result<(), TraceError>;
    /// An exec released every live object.
    fn release_all(&mut self, out: &mut Emit);
    fn issues(&self) -> IssueCounts;
}

impl AddressStage for AddressImporter {
    fn batch(&mut self) -> bool {
        true
    }

    #[inline(always)]
    fn call(
        &mut self,
        op: RawOp,
        pending: &mut Option<Option<ObjectId>>,
        out: &mut Emit,
        file: &str,
    ) -> Result<(), TraceError> {
        translate(self, op, pending, out, file)
    }

    fn release_all(&mut self, out: &mut Emit) {
        AddressImporter::release_all(self, out)
    }

    fn issues(&self) -> IssueCounts {
        self.issues
    }
}

/// What the id thread counted, for the conversion's summary.
pub(super) struct IdsEnd {
    pub issues: IssueCounts,
    /// The calls' counts (`events`, `allocs`, `frees`, `reallocs`, `events_per_thread`,
    /// `released_by_exec`); the rest is the merge's.
    pub counts: ConvertSummary,
    pub cpu_ns: u64,
    /// The busiest shard thread's CPU time (0: no shards).
    pub shards_cpu_ns: u64,
}

/// The merge's end of the id thread.
pub(super) struct IdThread {
    file: String,
    batch: Vec<Staged>,
    to_ids: Option<SyncSender<Arc<Vec<Staged>>>>,
    shards: Option<Shards>,
    spare_staged: Receiver<Vec<Staged>>,
    done: Receiver<Vec<Record>>,
    spare_records: Sender<Vec<Record>>,
    handle: Option<JoinHandle<Result<IdsEnd, TraceError>>>,
}

impl IdThread {
    /// Starts the id thread with `importer`, the address table (moved to it), or with `shards`
    /// threads that keep the table split (the importer, empty, then gives only its size);
    /// `None` if a thread could not be started (the table is then lost: the caller starts a
    /// new one).
    pub(super) fn start(file: &str, importer: AddressImporter, shards: usize) -> Option<Self> {
        let (to_ids, inbox) = sync_channel::<Arc<Vec<Staged>>>(STAGED_IN_FLIGHT);
        let (give_back_staged, spare_staged) = channel();
        let (to_merge, done) = channel();
        let (spare_records, record_vecs) = channel::<Vec<Record>>();
        let name = file.to_string();
        let ends = Ends {
            inbox,
            give_back_staged,
            to_merge,
            record_vecs,
        };
        let (shards, handle) = if shards == 0 {
            let spawned = std::thread::Builder::new()
                .name("fragsim-ids".into())
                .spawn(move || run(&name, importer, ends));
            (None, spawned.ok()?)
        } else {
            let (shards, sharded) = Shards::start(shards, importer.capacity())?;
            let spawned = std::thread::Builder::new()
                .name("fragsim-ids".into())
                .spawn(move || run(&name, sharded, ends));
            (Some(shards), spawned.ok()?)
        };
        Some(IdThread {
            file: file.to_string(),
            batch: Vec::with_capacity(STAGED_BATCH),
            to_ids: Some(to_ids),
            shards,
            spare_staged,
            done,
            spare_records,
            handle: Some(handle),
        })
    }

    /// Stages one item; a full batch goes to the id thread, and the records it has built so
    /// far to `sink`.
    #[inline(always)]
    pub(super) fn stage(&mut self, item: Staged, sink: &mut Sink) -> Result<(), TraceError> {
        self.batch.push(item);
        if self.batch.len() >= STAGED_BATCH {
            self.send(sink)?;
        }
        Ok(())
    }

    /// Sends what is staged and hands on the records built so far.
    #[cold]
    #[inline(never)]
    pub(super) fn send(&mut self, sink: &mut Sink) -> Result<(), TraceError> {
        if !self.batch.is_empty() {
            let next = self
                .spare_staged
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(STAGED_BATCH));
            let full = Arc::new(std::mem::replace(&mut self.batch, next));
            if self.shards.as_ref().is_some_and(|s| !s.send(&full)) {
                return Err(self.stopped());
            }
            let sent = self.to_ids.as_ref().map(|t| t.send(full));
            if !matches!(sent, Some(Ok(()))) {
                return Err(self.stopped());
            }
        }
        while let Ok(records) = self.done.try_recv() {
            self.hand_on(records, sink)?;
        }
        Ok(())
    }

    fn hand_on(&mut self, mut records: Vec<Record>, sink: &mut Sink) -> Result<(), TraceError> {
        sink(&mut records)?;
        records.clear();
        // The id thread may have finished already: nothing to give it back to.
        let _ = self.spare_records.send(records);
        Ok(())
    }

    /// Sends the rest, hands on every record and ends the thread.
    pub(super) fn end(mut self, sink: &mut Sink) -> Result<IdsEnd, TraceError> {
        self.send(sink)?;
        self.to_ids = None;
        while let Ok(records) = self.done.recv() {
            self.hand_on(records, sink)?;
        }
        self.join()
    }

    /// The id thread's own error, after it stopped taking batches.
    #[cold]
    fn stopped(&mut self) -> TraceError {
        self.to_ids = None;
        match self.join() {
            Err(e) => e,
            Ok(_) => TraceError::Input {
                file: self.file.clone(),
                what: "the id thread stopped early".into(),
            },
        }
    }

    fn join(&mut self) -> Result<IdsEnd, TraceError> {
        let Some(handle) = self.handle.take() else {
            return Err(TraceError::Input {
                file: self.file.clone(),
                what: "the id thread stopped early".into(),
            });
        };
        let end = handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let shards_cpu_ns = self.shards.as_mut().map_or(0, Shards::end);
        end.map(|end| IdsEnd {
            shards_cpu_ns,
            ..end
        })
    }
}

impl Drop for IdThread {
    /// A conversion that failed elsewhere still ends its id thread.
    fn drop(&mut self) {
        self.to_ids = None;
        // The shards end first: the id thread may wait on their answers.
        self.shards = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// The id thread's channels: batches in (and back), records out (and back).
struct Ends {
    inbox: Receiver<Arc<Vec<Staged>>>,
    give_back_staged: Sender<Vec<Staged>>,
    to_merge: Sender<Vec<Record>>,
    record_vecs: Receiver<Vec<Record>>,
}

/// The id thread: every staged item in order, its records sent back a batch at a time.
fn run(file: &str, mut stage: impl AddressStage, ends: Ends) -> Result<IdsEnd, TraceError> {
    let Ends {
        inbox,
        give_back_staged,
        to_merge,
        record_vecs,
    } = ends;
    let started = thread_cpu_ns();
    let mut counts = ConvertSummary::default();
    let mut records = Vec::with_capacity(SINK_BATCH);
    // Per trace thread: the object its realloc moves between the realloc's two points.
    let mut pending: Vec<Option<Option<ObjectId>>> = Vec::new();
    let gone = || TraceError::Input {
        file: file.to_string(),
        what: "the conversion stopped".into(),
    };
    for batch in inbox {
        if !stage.batch() {
            return Err(gone());
        }
        // The shards have dropped theirs before answering: this is the last reference.
        let mut batch = Arc::try_unwrap(batch).unwrap_or_else(|shared| (*shared).clone());
        for item in batch.drain(..) {
            match item {
                Staged::Call(op, p) => {
                    let mut out = Emit::new(&mut records, &mut counts, p.thread, p.at, p.site);
                    out.reentrant = p.reentrant;
                    out.mallocx_flags = p.mallocx_flags;
                    // Only a realloc's two points keep an object between them.
                    let mut none = None;
                    let between = match op {
                        RawOp::ReallocBegin { .. } | RawOp::ReallocEnd { .. } => {
                            let t = p.thread as usize;
                            if pending.len() <= t {
                                pending.resize(t + 1, None);
                            }
                            &mut pending[t]
                        }
                        _ => &mut none,
                    };
                    stage.call(op, between, &mut out, file)?;
                }
                Staged::Record(r) => records.push(r),
                Staged::ReleaseAll { thread, at } => {
                    let before = counts.events;
                    let mut out = Emit::new(&mut records, &mut counts, thread, at, None);
                    stage.release_all(&mut out);
                    counts.released_by_exec += counts.events - before;
                }
            }
            if records.len() >= SINK_BATCH {
                let next = record_vecs
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(SINK_BATCH));
                to_merge
                    .send(std::mem::replace(&mut records, next))
                    .map_err(|_| gone())?;
            }
        }
        // The merge may have stopped already: nothing to give back to.
        let _ = give_back_staged.send(batch);
    }
    if !records.is_empty() {
        to_merge.send(records).map_err(|_| gone())?;
    }
    Ok(IdsEnd {
        issues: stage.issues(),
        counts,
        cpu_ns: thread_cpu_ns() - started,
        shards_cpu_ns: 0,
    })
}
