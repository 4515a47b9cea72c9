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

/// At most this many consumer threads: beyond it consumers share a thread, taking each batch
/// in turn (an advise grid of a hundred settings must not start a hundred threads). More
/// threads than cores is deliberate below it: the system shares the cores out among them.
const MAX_THREADS: usize = 16;

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
/// own (up to [`MAX_THREADS`], then a few to a thread); returns the number of calls, as the
/// barrier loop would.
pub(super) fn drive_threads<C: super::Consumer, T>(
    mut fill: impl FnMut(&mut Batch) -> Result<(), T>,
    consumers: &mut [C],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, RunError<C::Error, T>> {
    let per_thread = consumers.len().div_ceil(MAX_THREADS);
    let n = consumers.len().div_ceil(per_thread);
    // The earliest batch any consumer failed on (u64::MAX: none yet): no one needs later ones.
    let stop = AtomicU64::new(u64::MAX);
    let (read, calls, failures) = std::thread::scope(|scope| {
        let mut queues = Vec::with_capacity(n);
        let mut workers = Vec::with_capacity(n);
        for (k, group) in consumers.chunks_mut(per_thread).enumerate() {
            let (tx, rx) = sync_channel::<Arc<Slot>>(AHEAD);
            queues.push(Some(tx));
            let stop = &stop;
            let first = k * per_thread;
            workers.push(scope.spawn(move || consume(group, first, rx, stop, progress)));
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
                if queue
                    .as_ref()
                    .is_some_and(|q| q.send(Arc::clone(&slot)).is_err())
                {
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
        let failures: Vec<Option<(u64, usize, C::Error)>> = workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        (read, calls, failures)
    });
    // The first error in trace order, then in consumer order.
    let first = failures
        .into_iter()
        .flatten()
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

/// One thread's consumers (`group`, the first of them consumer number `first`): every batch
/// in order, to each of them in turn, until the queue closes, an error, or a batch past one
/// another consumer failed on (the run stops there). Its error: the batch, the consumer's
/// number, the error. After its first error nothing later in trace order can come first.
fn consume<C: super::Consumer>(
    group: &mut [C],
    first: usize,
    queue: Receiver<Arc<Slot>>,
    stop: &AtomicU64,
    progress: &(dyn Fn(u64) + Sync),
) -> Option<(u64, usize, C::Error)> {
    for slot in queue {
        if slot.seq > stop.load(Ordering::Acquire) {
            return None;
        }
        for (j, consumer) in group.iter_mut().enumerate() {
            if let Err(e) = feed_one(&slot.batch, slot.first, consumer) {
                stop.fetch_min(slot.seq, Ordering::AcqRel);
                return Some((slot.seq, first + j, e));
            }
        }
        if slot.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            progress(slot.batch.calls().len() as u64);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::{run, Consumer, RunError, BATCH};
    use crate::trace::{Call, Event, Record};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Logs what it sees; fails at call `fail_at` if given.
    struct Log {
        seen: Vec<(u64, u32)>,
        exits: Vec<(u32, u64)>,
        fail_at: Option<u64>,
        name: usize,
    }

    impl Consumer for Log {
        type Error = (usize, u64);
        fn call(&mut self, index: u64, call: &Call) -> Result<(), (usize, u64)> {
            if self.fail_at == Some(index) {
                return Err((self.name, index));
            }
            let Event::Free { id } = call.event else {
                unreachable!()
            };
            self.seen.push((index, id));
            Ok(())
        }
        fn thread_exit(&mut self, thread: u32, index: u64) -> Result<(), (usize, u64)> {
            self.exits.push((thread, index));
            Ok(())
        }
    }

    fn records(n: u32) -> Vec<Result<Record, String>> {
        let mut out = Vec::new();
        for id in 0..n {
            out.push(Ok(Record::Call(Call::plain(Event::Free { id }))));
            if id % 5000 == 7 {
                out.push(Ok(Record::ThreadExit {
                    thread: id,
                    time_ns: None,
                }));
            }
        }
        out
    }

    fn logs(fail: &[Option<u64>]) -> Vec<Log> {
        (0..fail.len())
            .map(|name| Log {
                seen: Vec::new(),
                exits: Vec::new(),
                fail_at: fail[name],
                name,
            })
            .collect()
    }

    /// Every consumer sees every call and exit with the indices one consumer alone sees, and
    /// progress hears every call once.
    #[test]
    fn every_consumer_sees_the_whole_trace_in_order() {
        let n = 3 * BATCH as u32 + 17;
        let mut alone = logs(&[None]);
        run(records(n), &mut alone, &|_| {}).unwrap();
        let mut many = logs(&[None; 5]);
        let heard = AtomicU64::new(0);
        let calls = run(records(n), &mut many, &|k| {
            heard.fetch_add(k, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!((calls, heard.into_inner()), (n as u64, n as u64));
        for log in &many {
            assert_eq!(log.seen, alone[0].seen);
            assert_eq!(log.exits, alone[0].exits);
        }
    }

    /// The first failure in trace order is reported whichever consumer has it, then the
    /// first in consumer order; a consumer's failure comes before a read error after it.
    #[test]
    fn the_first_error_in_trace_order_wins() {
        let late = 2 * BATCH as u64 + 5;
        let early = BATCH as u64 / 2;
        let mut c = logs(&[Some(late), None, Some(early), Some(early + 1)]);
        let err = run(records(3 * BATCH as u32), &mut c, &|_| {}).unwrap_err();
        assert!(matches!(err, RunError::Consumer((2, i)) if i == early));
        // Same batch: consumer order decides, not the index within the batch.
        let mut c = logs(&[None, Some(early + 1), Some(early)]);
        let err = run(records(3 * BATCH as u32), &mut c, &|_| {}).unwrap_err();
        assert!(matches!(err, RunError::Consumer((1, i)) if i == early + 1));
        // A read error in the second batch: a failure in the first batch wins, else it.
        let mut damaged = records(3 * BATCH as u32);
        damaged.insert(BATCH + 10, Err("bad".to_string()));
        let mut c = logs(&[None, Some(early)]);
        let err = run(damaged.clone(), &mut c, &|_| {}).unwrap_err();
        assert!(matches!(err, RunError::Consumer((1, i)) if i == early));
        let mut c = logs(&[None, Some(late)]);
        let err = run(damaged, &mut c, &|_| {}).unwrap_err();
        assert!(matches!(err, RunError::Trace(ref e) if e == "bad"));
    }

    /// More consumers than threads: they share threads, and still each sees the whole trace
    /// and the first failure in trace order, then consumer order, is reported.
    #[test]
    fn consumers_beyond_the_thread_cap_share_threads_alike() {
        let n = 2 * BATCH as u32 + 3;
        let mut alone = logs(&[None]);
        run(records(n), &mut alone, &|_| {}).unwrap();
        let count = 3 * super::MAX_THREADS + 1;
        let mut many = logs(&vec![None; count]);
        assert_eq!(run(records(n), &mut many, &|_| {}).unwrap(), n as u64);
        assert!(many.iter().all(|log| log.seen == alone[0].seen));
        // Two in the same group (4 a thread here) and one in another, same batch.
        let mut fail = vec![None; count];
        let early = BATCH as u64 / 3;
        fail[count - 1] = Some(early);
        fail[6] = Some(early + 2);
        fail[5] = Some(early + 1);
        let mut c = logs(&fail);
        let err = run(records(n), &mut c, &|_| {}).unwrap_err();
        assert!(matches!(err, RunError::Consumer((5, i)) if i == early + 1));
    }
}
