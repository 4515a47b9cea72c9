//! Several consumers, each on its own thread, taking the batches the reading thread decodes
//! at their own pace: no consumer waits for another after a batch (a barrier per batch would
//! make every batch cost its slowest consumer, and on fewer cores than consumers a whole
//! extra round). The reader runs at most [`AHEAD`] batches ahead of the slowest consumer, so
//! memory stays a few batches whatever the trace's length.
//!
//! Results and errors are those of feeding every batch to every consumer in turn: the first
//! error in trace order (by batch, then by consumer order) is the one reported, and a consumer
//! error in a batch comes before a read error after it.

use super::{feed_one, RunError, BATCH};
use crate::trace::Batch;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

/// Batches a consumer's queue holds beyond the one it works on.
const AHEAD: usize = 4;

/// One decoded batch, shared by every consumer's thread.
struct Slot {
    batch: Batch,
    /// Its place in the trace (0 for the first batch).
    seq: u64,
    /// The 1-based index of its first call.
    first: u64,
    /// Consumers that have not finished it yet: the last one reports its calls as done.
    remaining: AtomicUsize,
}

/// Feeds the batches `fill` gives to every consumer (at least two), each on a thread of its
/// own; returns the number of calls, as the barrier loop would.
pub(super) fn drive_threads<C: super::Consumer, T>(
    mut fill: impl FnMut(&mut Batch) -> Result<(), T>,
    consumers: &mut [C],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, RunError<C::Error, T>> {
    let n = consumers.len();
    // The earliest batch any consumer failed on (u64::MAX: none yet): no one needs later ones.
    let stop = AtomicU64::new(u64::MAX);
    let (read, calls, failures) = std::thread::scope(|scope| {
        let mut queues = Vec::with_capacity(n);
        let mut workers = Vec::with_capacity(n);
        for consumer in consumers.iter_mut() {
            let (tx, rx) = sync_channel::<Arc<Slot>>(AHEAD);
            queues.push(Some(tx));
            let stop = &stop;
            workers.push(scope.spawn(move || consume(consumer, rx, stop, progress)));
        }
        let mut spare: Vec<Arc<Slot>> = Vec::new();
        let mut calls = 0u64;
        let mut seq = 0u64;
        let read = loop {
            let mut slot = reusable(&mut spare).unwrap_or_else(|| Slot {
                batch: Batch::with_capacity(BATCH),
                seq: 0,
                first: 0,
                remaining: AtomicUsize::new(0),
            });
            let read = fill(&mut slot.batch);
            if slot.batch.is_empty() {
                break read;
            }
            slot.seq = seq;
            slot.first = calls + 1;
            *slot.remaining.get_mut() = n;
            calls += slot.batch.calls().len() as u64;
            seq += 1;
            let slot = Arc::new(slot);
            for queue in queues.iter_mut() {
                // A consumer that stopped (an error) has dropped its end: it takes no more.
                if queue.as_ref().is_some_and(|q| q.send(Arc::clone(&slot)).is_err()) {
                    *queue = None;
                }
            }
            spare.push(slot);
            if read.is_err() || stop.load(Ordering::Acquire) != u64::MAX {
                break read;
            }
        };
        // The consumers finish the batches they were given, then see their queue close.
        drop(queues);
        let failures: Vec<Option<(u64, C::Error)>> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect();
        (read, calls, failures)
    });
    // The first error in trace order, then in consumer order.
    let first = failures
        .into_iter()
        .enumerate()
        .filter_map(|(i, f)| f.map(|(seq, e)| (seq, i, e)))
        .min_by_key(|&(seq, i, _)| (seq, i));
    if let Some((_, _, e)) = first {
        return Err(RunError::Consumer(e));
    }
    read.map(|()| calls).map_err(RunError::Trace)
}

/// A slot every consumer has let go of, to fill again (none: allocate another; at most
/// [`AHEAD`] + 2 exist, as the queues are bounded).
fn reusable(spare: &mut Vec<Arc<Slot>>) -> Option<Slot> {
    let i = spare.iter().position(|s| Arc::strong_count(s) == 1)?;
    Arc::into_inner(spare.swap_remove(i))
}

/// One consumer's thread: every batch in order until the queue closes, an error, or a batch
/// past one another consumer failed on (the run stops there).
fn consume<C: super::Consumer>(
    consumer: &mut C,
    queue: Receiver<Arc<Slot>>,
    stop: &AtomicU64,
    progress: &(dyn Fn(u64) + Sync),
) -> Option<(u64, C::Error)> {
    for slot in queue {
        if slot.seq > stop.load(Ordering::Acquire) {
            return None;
        }
        if let Err(e) = feed_one(&slot.batch, slot.first, consumer) {
            stop.fetch_min(slot.seq, Ordering::AcqRel);
            return Some((slot.seq, e));
        }
        if slot.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            progress(slot.batch.calls().len() as u64);
        }
    }
    None
}
