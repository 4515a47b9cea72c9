//! The child's side: one strategy, several runs in this process, each with its time, page
//! faults and jemalloc's per-arena statistics.

use super::{TimedStrategy, Workload};
use crate::live::ctl::{read_isize, read_string, read_u32, read_u64, read_usize, refresh_stats};
use anyhow::Result;
use bumpalo::collections::Vec as BumpVec;
use bumpalo::Bump;
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::time::Instant;

/// jemalloc's options as the child saw them, and where the huge arena is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JemallocInfo {
    pub version: String,
    pub dirty_decay_ms: i64,
    pub muzzy_decay_ms: i64,
    /// 0: no huge arena.
    pub oversize_threshold: u64,
    /// `opt.narenas`: the automatic arenas; the huge arena takes the next index.
    pub narenas_auto: u32,
    /// The huge arena's index (src/arena.c `arena_init_huge`: `narenas_total` at boot, which
    /// is `narenas_auto`), or `None` when it is disabled.
    pub huge_arena: Option<u32>,
    /// `arenas.page`: the unit of `pdirty` and `pmuzzy`.
    pub page: u64,
}

/// One arena's page statistics.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaPages {
    pub arena: u32,
    /// Bytes of live large allocations (`stats.arenas.<i>.large.allocated`).
    pub large_allocated: u64,
    pub pdirty: u64,
    pub pmuzzy: u64,
    pub mapped: u64,
    /// Pages purged so far (`stats.arenas.<i>.dirty_purged`), cumulative.
    pub dirty_purged: u64,
}

/// One build and reset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSample {
    /// 1 is the cold run (first in a fresh process).
    pub run: u32,
    pub build_ns: u64,
    pub reset_ns: u64,
    pub build_faults: u64,
    pub reset_faults: u64,
    /// bumpalo's `allocated_bytes` at the peak (arena strategies).
    pub bump_allocated: Option<u64>,
    /// Every initialised arena, read between build and reset (outside both timings).
    pub at_peak: Vec<ArenaPages>,
    /// The same, read after the reset.
    pub after_reset: Vec<ArenaPages>,
}

/// What a child prints: one JSON object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    pub strategy: TimedStrategy,
    pub vectors: u64,
    pub elements: u64,
    pub jemalloc: JemallocInfo,
    pub runs: Vec<RunSample>,
}

impl JemallocInfo {
    pub fn read() -> Result<Self> {
        let oversize_threshold = read_usize("opt.oversize_threshold")?;
        let narenas_auto = read_u32("opt.narenas")?;
        Ok(JemallocInfo {
            version: read_string("version")?,
            dirty_decay_ms: read_isize("opt.dirty_decay_ms")?,
            muzzy_decay_ms: read_isize("opt.muzzy_decay_ms")?,
            oversize_threshold,
            narenas_auto,
            huge_arena: (oversize_threshold > 0).then_some(narenas_auto),
            page: read_usize("arenas.page")?,
        })
    }
}

/// Statistics of every initialised arena (uninitialised ones refuse the read and are skipped).
fn arena_pages() -> Result<Vec<ArenaPages>> {
    refresh_stats()?;
    let narenas = read_u32("arenas.narenas")?;
    let mut out = Vec::new();
    for i in 0..narenas {
        let Ok(mapped) = read_usize(&format!("stats.arenas.{i}.mapped")) else {
            continue;
        };
        out.push(ArenaPages {
            arena: i,
            large_allocated: read_usize(&format!("stats.arenas.{i}.large.allocated"))?,
            pdirty: read_usize(&format!("stats.arenas.{i}.pdirty"))?,
            pmuzzy: read_usize(&format!("stats.arenas.{i}.pmuzzy"))?,
            mapped,
            dirty_purged: read_u64(&format!("stats.arenas.{i}.dirty_purged"))?,
        });
    }
    Ok(out)
}

/// Minor plus major page faults of this process so far.
fn page_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    // SAFETY: initialised by the successful call above (and zeroed before).
    let usage = unsafe { usage.assume_init() };
    (usage.ru_minflt + usage.ru_majflt) as u64
}

/// Elapsed time and page faults since `start`.
struct Lap {
    at: Instant,
    faults: u64,
}

impl Lap {
    fn start() -> Self {
        Lap {
            faults: page_faults(),
            at: Instant::now(),
        }
    }

    fn stop(self) -> (u64, u64) {
        let ns = self.at.elapsed().as_nanos() as u64;
        (ns, page_faults().saturating_sub(self.faults))
    }
}

// The same allocate-then-fill steps as `in_arena`, so both sides do the same work
// (`vec![0; k]` would take calloc's path instead).
#[allow(clippy::slow_vector_initialization)]
fn general(m: usize, k: usize) -> Vec<Vec<i32>> {
    let mut outer = Vec::with_capacity(m);
    for _ in 0..m {
        let mut inner = Vec::with_capacity(k);
        inner.resize(k, 0);
        outer.push(inner);
    }
    outer
}

fn in_arena(bump: &Bump, m: usize, k: usize) -> BumpVec<'_, BumpVec<'_, i32>> {
    let mut outer = BumpVec::with_capacity_in(m, bump);
    for _ in 0..m {
        let mut inner = BumpVec::with_capacity_in(k, bump);
        inner.resize(k, 0);
        outer.push(inner);
    }
    outer
}

/// Bytes the whole build needs in one chunk: the outer array plus every inner array.
fn presize_bytes(m: usize, k: usize) -> usize {
    m * (std::mem::size_of::<BumpVec<'static, i32>>() + k * std::mem::size_of::<i32>())
}

/// Runs `strategy` `runs` times in this process (`runs` >= 2: one cold, the rest warm).
pub fn run_strategy(strategy: TimedStrategy, workload: Workload) -> Result<ChildReport> {
    workload.validate()?;
    let (vectors, elements) = (workload.vectors, workload.elements);
    let jemalloc = JemallocInfo::read()?;
    let (m, k) = (vectors as usize, elements as usize);
    let mut reused = Bump::new();
    let mut samples = Vec::with_capacity(workload.runs);
    for run in 1..=workload.runs as u32 {
        let (build, reset, bump_allocated, at_peak);
        match strategy {
            TimedStrategy::General => {
                let lap = Lap::start();
                let outer = black_box(general(m, k));
                build = lap.stop();
                at_peak = arena_pages()?;
                bump_allocated = None;
                let lap = Lap::start();
                drop(outer);
                reset = lap.stop();
            }
            TimedStrategy::Arena | TimedStrategy::NoFree | TimedStrategy::Presized => {
                let lap = Lap::start();
                let bump = if strategy == TimedStrategy::Presized {
                    Bump::with_capacity(presize_bytes(m, k))
                } else {
                    Bump::new()
                };
                let outer = black_box(in_arena(&bump, m, k));
                build = lap.stop();
                at_peak = arena_pages()?;
                bump_allocated = Some(bump.allocated_bytes() as u64);
                let lap = Lap::start();
                if strategy == TimedStrategy::Arena {
                    drop(outer);
                } else {
                    // The chunks go back all at once; nothing to run per vector.
                    std::mem::forget(outer);
                }
                drop(bump);
                reset = lap.stop();
            }
            TimedStrategy::Reused => {
                let lap = Lap::start();
                let outer = black_box(in_arena(&reused, m, k));
                build = lap.stop();
                at_peak = arena_pages()?;
                bump_allocated = Some(reused.allocated_bytes() as u64);
                let lap = Lap::start();
                std::mem::forget(outer);
                reused.reset();
                reset = lap.stop();
            }
        }
        samples.push(RunSample {
            run,
            build_ns: build.0,
            reset_ns: reset.0,
            build_faults: build.1,
            reset_faults: reset.1,
            bump_allocated,
            at_peak,
            after_reset: arena_pages()?,
        });
    }
    Ok(ChildReport {
        strategy,
        vectors,
        elements,
        jemalloc,
        runs: samples,
    })
}
