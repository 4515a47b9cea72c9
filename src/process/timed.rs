//! Seeded traces with times for the decay model and its live check: bursts of allocation
//! with quiet gaps, and a working set freed before a long idle period. Each lasts a few
//! seconds, so a live replay on the trace's clock takes a few seconds too.
//!
//! Decay only acts when an operation ticks (cache fills and flushes, uncached allocations
//! and frees): the gaps carry a trickle of uncached large calls (about two ticks each), so
//! jemalloc's checks come rarely there, as in a real quiet program.

use crate::trace::{Call, Event, Record};

/// Which shape of program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TimedShape {
    /// Every `period` a burst allocates a few thousand objects per thread and frees most
    /// of the previous burst's; a trickle of 40 KiB calls in between.
    Bursty,
    /// A 5 MiB working set built and freed in the first 0.4 s, then 2 s of near silence
    /// (one 64 KiB call pair every 20 ms), a short burst, and 0.5 s of silence.
    Idle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TimedSpec {
    pub seed: u64,
    pub shape: TimedShape,
    pub threads: u32,
}

use crate::random::SplitMix as Rng;

/// One abstract operation: an allocation of object `obj`, or its free.
#[derive(Clone, Copy)]
struct Op {
    time_ns: u64,
    thread: u32,
    obj: usize,
    size: u64,
    alloc: bool,
}

const MS: u64 = 1_000_000;

/// A size: mostly small, some up to 16 KiB, a few up to 256 KiB.
fn size(rng: &mut Rng) -> u64 {
    match rng.below(100) {
        0..=69 => 16 + rng.below(500),
        70..=94 => 1024 + rng.below(15 * 1024),
        _ => 32 * 1024 + rng.below(224 * 1024),
    }
}

/// Builds the trace: operations per thread with times, merged in time order, then object ids
/// given lowest-free-first in that order (the rule every trace keeps).
pub fn timed_trace(spec: &TimedSpec) -> Vec<Record> {
    let mut rng = Rng(spec.seed);
    let mut ops = Vec::new();
    let mut nobj = 0usize;
    let mut new_obj = || {
        nobj += 1;
        nobj - 1
    };
    let threads = spec.threads.max(1);
    // A pair: allocate at `t`, free at `t + life`.
    let pair = |ops: &mut Vec<Op>, obj: usize, thread: u32, t: u64, life: u64, size: u64| {
        ops.push(Op {
            time_ns: t,
            thread,
            obj,
            size,
            alloc: true,
        });
        ops.push(Op {
            time_ns: t + life,
            thread,
            obj,
            size,
            alloc: false,
        });
    };
    match spec.shape {
        TimedShape::Bursty => {
            let (period, burst, bursts, per_thread) = (250 * MS, 20 * MS, 12u64, 900u64);
            for b in 0..bursts {
                let start = 10 * MS + b * period;
                for th in 0..threads {
                    for k in 0..per_thread {
                        let t = start + k * burst / per_thread + rng.below(20_000);
                        // Most live until the next burst; a tenth for several.
                        let life = if rng.below(10) == 0 {
                            period * (2 + rng.below(3))
                        } else {
                            period + rng.below(burst)
                        };
                        let size = size(&mut rng);
                        pair(&mut ops, new_obj(), th, t, life, size);
                    }
                }
                // The trickle: a 40 KiB call pair every 2 ms on one thread.
                let mut t = start + burst;
                while t < start + period {
                    let th = rng.below(u64::from(threads)) as u32;
                    pair(&mut ops, new_obj(), th, t, 100_000, 40 * 1024);
                    t += 2 * MS;
                }
            }
        }
        TimedShape::Idle => {
            // Working set: 0-300 ms, freed at 300-400 ms (a tenth kept to the end).
            let n = 5 * 1024 * 1024 / 4096;
            for k in 0..n {
                let th = (k % u64::from(threads)) as u32;
                let t = 5 * MS + k * 295 * MS / n;
                let free_at = if rng.below(10) == 0 {
                    2_995 * MS
                } else {
                    300 * MS + rng.below(100 * MS)
                };
                let life = free_at - t;
                let size = size(&mut rng);
                pair(&mut ops, new_obj(), th, t, life, size);
            }
            // Near silence, 0.45-2.45 s.
            let mut t = 450 * MS;
            while t < 2_450 * MS {
                pair(&mut ops, new_obj(), 0, t, 50_000, 64 * 1024);
                t += 20 * MS;
            }
            // A short burst at 2.45 s, then silence to 3 s.
            for k in 0..2_000u64 {
                let th = (k % u64::from(threads)) as u32;
                let t = 2_450 * MS + k * 10 * MS / 2_000;
                let size = 16 + rng.below(2_000);
                pair(&mut ops, new_obj(), th, t, 5 * MS, size);
            }
            pair(&mut ops, new_obj(), 0, 2_990 * MS, 0, 64 * 1024);
        }
    }
    // Frees never before their allocation at the same time stamp: allocations sort first.
    ops.sort_by_key(|o| (o.time_ns, !o.alloc, o.obj));
    assign_ids(&ops, nobj)
}

/// Lowest-free-first ids in record order.
fn assign_ids(ops: &[Op], nobj: usize) -> Vec<Record> {
    let mut free: std::collections::BinaryHeap<std::cmp::Reverse<u32>> = Default::default();
    let mut next = 0u32;
    let mut id_of = vec![u32::MAX; nobj];
    let mut out = Vec::with_capacity(ops.len());
    for o in ops {
        let event = if o.alloc {
            let id = free.pop().map_or_else(
                || {
                    next += 1;
                    next - 1
                },
                |r| r.0,
            );
            id_of[o.obj] = id;
            Event::Alloc {
                id,
                size: o.size,
                align: 0,
            }
        } else {
            let id = id_of[o.obj];
            free.push(std::cmp::Reverse(id));
            Event::Free { id }
        };
        out.push(Record::Call(Call {
            event,
            thread: o.thread,
            time_ns: Some(o.time_ns),
            site: None,
        }));
    }
    out
}
