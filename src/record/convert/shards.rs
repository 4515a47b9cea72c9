//! The address table on threads of its own, split by address ([`table_of`]): each shard
//! thread reads every batch the merge stages and keeps its share of the live addresses as
//! slots; the id thread takes the shards' answers in the merge's order and keeps only slots
//! -> ids. The table of live addresses, most of it out of cache on a large heap, was the id
//! thread's largest part; split, it runs beside the part that must run in order, and over as
//! many threads as are given to it. The ids are the same (`trace::slots`).

use super::calls::Emit;
use super::exhausted;
use super::ids::{AddressStage, Staged, STAGED_BATCH, STAGED_IN_FLIGHT};
use crate::record::raw::RawOp;
use crate::record::thread_cpu_ns;
use crate::trace::{table_of, IssueCounts, ObjectId, Slot, SlotIds, SlotTable, TraceError};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The merge's end of the shard threads.
pub(super) struct Shards {
    to_shards: Vec<SyncSender<Arc<Vec<Staged>>>>,
    handles: Vec<JoinHandle<u64>>,
}

impl Shards {
    /// Starts `n` shard threads with room for `live` live objects in all; the id thread's
    /// end of them comes with them. `None` if a thread could not be started.
    pub(super) fn start(n: usize, live: usize) -> Option<(Shards, Sharded)> {
        let mut shards = Shards {
            to_shards: Vec::with_capacity(n),
            handles: Vec::with_capacity(n),
        };
        let mut answers = Vec::with_capacity(n);
        let mut spare = Vec::with_capacity(n);
        for me in 0..n {
            let (to_shard, inbox) = sync_channel(STAGED_IN_FLIGHT);
            let (to_ids, from_shard) = sync_channel(STAGED_IN_FLIGHT);
            let (give_back, spare_answers) = channel();
            let handle = std::thread::Builder::new()
                .name(format!("fragsim-shard{me}"))
                .spawn(move || shard(me, n, live / n, inbox, to_ids, spare_answers))
                .ok()?;
            shards.to_shards.push(to_shard);
            shards.handles.push(handle);
            answers.push(from_shard);
            spare.push(give_back);
        }
        let sharded = Sharded {
            ids: SlotIds::new(n),
            answers,
            spare,
            got: vec![Vec::new(); n],
            at: vec![0; n],
        };
        Some((shards, sharded))
    }

    /// Hands `batch` to every shard; false if one has stopped.
    pub(super) fn send(&self, batch: &Arc<Vec<Staged>>) -> bool {
        self.to_shards.iter().all(|s| s.send(batch.clone()).is_ok())
    }

    /// Ends the shard threads: the busiest one's CPU time.
    pub(super) fn end(&mut self) -> u64 {
        self.to_shards.clear();
        let mut busiest = 0;
        for handle in self.handles.drain(..) {
            let cpu = handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            busiest = busiest.max(cpu);
        }
        busiest
    }
}

impl Drop for Shards {
    /// A conversion that failed still ends its shard threads.
    fn drop(&mut self) {
        self.to_shards.clear();
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

/// A shard thread: the calls at its addresses, batch by batch, answered in order.
fn shard(
    me: usize,
    n: usize,
    live: usize,
    inbox: Receiver<Arc<Vec<Staged>>>,
    to_ids: SyncSender<Vec<Slot>>,
    spare: Receiver<Vec<Slot>>,
) -> u64 {
    let started = thread_cpu_ns();
    let mut table = SlotTable::with_capacity(live);
    for batch in inbox {
        let mut got = spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(STAGED_BATCH));
        got.clear();
        for item in batch.iter() {
            match item {
                Staged::Call(op, _) => {
                    let (addr, bind) = match *op {
                        RawOp::Alloc { addr, .. } => (addr, true),
                        RawOp::Free { addr } => (addr, false),
                        RawOp::ReallocBegin { old } => (old, false),
                        RawOp::ReallocEnd { new, .. } => (new, true),
                        _ => continue,
                    };
                    if table_of(addr, n) == me {
                        got.push(if bind {
                            table.bind(addr)
                        } else {
                            table.unbind(addr)
                        });
                    }
                }
                Staged::ReleaseAll { .. } => table.clear(),
                Staged::Record(_) => {}
            }
        }
        // Before the answers: the id thread then holds the batch's last reference.
        drop(batch);
        if to_ids.send(got).is_err() {
            break;
        }
    }
    thread_cpu_ns() - started
}

/// The id thread's end of the shards: their answers for the batch at hand, and the ids.
pub(super) struct Sharded {
    ids: SlotIds,
    answers: Vec<Receiver<Vec<Slot>>>,
    spare: Vec<Sender<Vec<Slot>>>,
    got: Vec<Vec<Slot>>,
    at: Vec<usize>,
}

impl Sharded {
    /// The next answer for `addr`: its table and what the table found.
    #[inline(always)]
    fn next(&mut self, addr: u64) -> (usize, Slot) {
        let t = table_of(addr, self.got.len());
        let answer = self.got[t][self.at[t]];
        self.at[t] += 1;
        (t, answer)
    }
}

impl AddressStage for Sharded {
    fn batch(&mut self) -> bool {
        for (t, from_shard) in self.answers.iter().enumerate() {
            let Ok(got) = from_shard.recv() else {
                return false;
            };
            let used = std::mem::replace(&mut self.got[t], got);
            // The shard may have ended already: nothing to give back to.
            let _ = self.spare[t].send(used);
            self.at[t] = 0;
        }
        true
    }

    /// `translate`'s match, on the shards' answers. Not one generic match for both: through a
    /// trait the converting thread's own path (the 2-core one) took 1.3% more instructions
    /// (callgrind, `convert_raw --threads 1`, 2,082,602,077 -> 2,109,784,365).
    #[inline(always)]
    fn call(
        &mut self,
        op: RawOp,
        pending: &mut Option<Option<ObjectId>>,
        out: &mut Emit,
        file: &str,
    ) -> Result<(), TraceError> {
        match op {
            RawOp::Alloc { size, align, addr } => {
                let (t, at) = self.next(addr);
                self.ids
                    .alloc(t, at, size, align, out)
                    .map_err(|_| exhausted(file))?;
            }
            RawOp::Free { addr } => {
                let (t, at) = self.next(addr);
                self.ids.free(t, at, out);
            }
            RawOp::ReallocBegin { old } => {
                let (t, at) = self.next(old);
                *pending = Some(self.ids.detach(t, at));
            }
            RawOp::ReallocEnd { new, size, .. } => {
                let id = pending.take().flatten();
                let (t, at) = self.next(new);
                self.ids
                    .attach(id, t, at, size, out)
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

    fn release_all(&mut self, out: &mut Emit) {
        self.ids.release_all(out);
    }

    fn issues(&self) -> IssueCounts {
        self.ids.issues
    }
}
