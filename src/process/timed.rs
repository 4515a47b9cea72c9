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
    let mut ops = Ops::default();
    let threads = spec.threads.max(1);
    match spec.shape {
        TimedShape::Bursty => bursty(&mut ops, &mut rng, threads),
        TimedShape::Idle => idle(&mut ops, &mut rng, threads),
    }
    // Frees never before their allocation at the same time stamp: allocations sort first.
    ops.ops.sort_by_key(|o| (o.time_ns, !o.alloc, o.obj));
    assign_ids(&ops.ops, ops.objects)
}

/// The operations of a trace being built, and how many objects they name.
#[derive(Default)]
struct Ops {
    ops: Vec<Op>,
    objects: usize,
}

impl Ops {
    /// A new object of `size` bytes on `thread`: allocated at `t`, freed at `t + life`.
    fn pair(&mut self, thread: u32, t: u64, life: u64, size: u64) {
        let obj = self.objects;
        self.objects += 1;
        for (time_ns, alloc) in [(t, true), (t + life, false)] {
            self.ops.push(Op {
                time_ns,
                thread,
                obj,
                size,
                alloc,
            });
        }
    }
}

/// [`TimedShape::Bursty`].
fn bursty(ops: &mut Ops, rng: &mut Rng, threads: u32) {
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
                let size = size(rng);
                ops.pair(th, t, life, size);
            }
        }
        // The trickle: a 40 KiB call pair every 2 ms on one thread.
        let mut t = start + burst;
        while t < start + period {
            let th = rng.below(u64::from(threads)) as u32;
            ops.pair(th, t, 100_000, 40 * 1024);
            t += 2 * MS;
        }
    }
}

/// [`TimedShape::Idle`].
fn idle(ops: &mut Ops, rng: &mut Rng, threads: u32) {
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
        let size = size(rng);
        ops.pair(th, t, life, size);
    }
    // Near silence, 0.45-2.45 s.
    let mut t = 450 * MS;
    while t < 2_450 * MS {
        ops.pair(0, t, 50_000, 64 * 1024);
        t += 20 * MS;
    }
    // A short burst at 2.45 s, then silence to 3 s.
    for k in 0..2_000u64 {
        let th = (k % u64::from(threads)) as u32;
        let t = 2_450 * MS + k * 10 * MS / 2_000;
        let size = 16 + rng.below(2_000);
        ops.pair(th, t, 5 * MS, size);
    }
    ops.pair(0, 2_990 * MS, 0, 64 * 1024);
}

/// Lowest-free-first ids in record order.
fn assign_ids(ops: &[Op], nobj: usize) -> Vec<Record> {
    let mut ids = crate::trace::IdPool::new();
    let mut id_of = vec![u32::MAX; nobj];
    let mut out = Vec::with_capacity(ops.len());
    for o in ops {
        let event = if o.alloc {
            let id = ids.take().expect("fewer than 2^32 live objects");
            id_of[o.obj] = id;
            Event::Alloc {
                id,
                size: o.size,
                align: 0,
            }
        } else {
            let id = id_of[o.obj];
            ids.give_back(id);
            Event::Free { id }
        };
        out.push(Record::Call(Call {
            event,
            thread: o.thread,
            time_ns: Some(o.time_ns),
            site: None,
            reentrant: false,
            mallocx_flags: 0,
        }));
    }
    out
}
