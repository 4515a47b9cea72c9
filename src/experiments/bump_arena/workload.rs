//! The three strategies run for real under jemalloc: memory through a private arena's
//! statistics, time as the median of several runs.

use super::{BumpArenaSpec, Strategy};
use crate::live::{in_private_arena, ArenaUsage};
use anyhow::Result;
use bumpalo::collections::Vec as BumpVec;
use bumpalo::Bump;
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

/// What one strategy measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    pub strategy: Strategy,
    pub build: Duration,
    pub reset: Duration,
    /// jemalloc's usable and active bytes while the vectors were alive.
    pub usage: ArenaUsage,
    pub bump_allocated: Option<u64>,
    /// Timed runs behind `build` and `reset`; 0: not timed (both zero, memory only).
    pub runs: usize,
}

fn general<T: Copy + Default>(m: usize, k: usize) -> Vec<Vec<T>> {
    let mut outer = Vec::with_capacity(m);
    for _ in 0..m {
        let mut inner = Vec::with_capacity(k);
        inner.resize(k, T::default());
        outer.push(inner);
    }
    outer
}

fn in_arena<T: Copy + Default>(bump: &Bump, m: usize, k: usize) -> BumpVec<'_, BumpVec<'_, T>> {
    let mut outer = BumpVec::with_capacity_in(m, bump);
    for _ in 0..m {
        let mut inner = BumpVec::with_capacity_in(k, bump);
        inner.resize(k, T::default());
        outer.push(inner);
    }
    outer
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// One timed build and reset.
fn timed_run<T: Copy + Default>(strategy: Strategy, m: usize, k: usize) -> (Duration, Duration) {
    let start = Instant::now();
    match strategy {
        Strategy::General => {
            let outer = std::hint::black_box(general::<T>(m, k));
            let built = start.elapsed();
            let start = Instant::now();
            drop(outer);
            (built, start.elapsed())
        }
        Strategy::Bump | Strategy::BumpNoFree => {
            let bump = Bump::new();
            let outer = std::hint::black_box(in_arena::<T>(&bump, m, k));
            let built = start.elapsed();
            let start = Instant::now();
            if strategy == Strategy::Bump {
                drop(outer);
            } else {
                // Never run the inner destructors: the chunks go back all at once.
                let _ = ManuallyDrop::new(outer);
            }
            drop(bump);
            (built, start.elapsed())
        }
    }
}

/// Memory of one build, counted in a private arena.
fn memory<T: Copy + Default>(
    strategy: Strategy,
    m: usize,
    k: usize,
) -> Result<(ArenaUsage, Option<u64>)> {
    // SAFETY (both calls): everything built is owned by the value returned, which
    // `in_private_arena` drops; nothing is stored elsewhere.
    match strategy {
        Strategy::General => unsafe { in_private_arena(|| general::<T>(m, k), |_| None) },
        Strategy::Bump | Strategy::BumpNoFree => unsafe {
            in_private_arena(
                || {
                    let bump = Bump::new();
                    // The vectors live in the arena's chunks, which the Bump owns: skipping
                    // their destructors frees nothing that the Bump's drop does not.
                    std::mem::forget(in_arena::<T>(&bump, m, k));
                    bump
                },
                |bump| Some(bump.allocated_bytes() as u64),
            )
        },
    }
}

fn measure_typed<T: Copy + Default>(spec: &BumpArenaSpec, runs: usize) -> Result<Vec<Measurement>> {
    let (m, k) = (spec.vectors as usize, spec.elements as usize);
    let mut out = Vec::new();
    for strategy in Strategy::ALL {
        let (usage, bump_allocated) = memory::<T>(strategy, m, k)?;
        let (build, reset) = match runs {
            // Memory only: no build is timed (the report times them in child processes).
            0 => (Duration::ZERO, Duration::ZERO),
            _ => {
                // One untimed run warms the allocator's caches for this size.
                timed_run::<T>(strategy, m, k);
                let (builds, resets): (Vec<_>, Vec<_>) =
                    (0..runs).map(|_| timed_run::<T>(strategy, m, k)).unzip();
                (median(builds), median(resets))
            }
        };
        out.push(Measurement {
            strategy,
            build,
            reset,
            usage,
            bump_allocated,
            runs,
        });
    }
    Ok(out)
}

/// Runs every strategy: memory once, time as the median of `runs` runs; `runs` 0 measures
/// the memory only (each `Measurement` then has `runs` 0 and no times).
pub fn measure(spec: &BumpArenaSpec, runs: usize) -> Result<Vec<Measurement>> {
    spec.validate()?;
    anyhow::ensure!(
        crate::global::jemalloc_is_global(),
        "the vectors would not be allocated by jemalloc: install it with fragsim::use_jemalloc!()"
    );
    match spec.elem_bytes {
        1 => measure_typed::<u8>(spec, runs),
        2 => measure_typed::<u16>(spec, runs),
        4 => measure_typed::<i32>(spec, runs),
        8 => measure_typed::<u64>(spec, runs),
        _ => measure_typed::<u128>(spec, runs),
    }
}

/// One timed build and reset of `strategy` (what the benchmark and `measure` time).
pub fn build_and_reset(strategy: Strategy, spec: &BumpArenaSpec) -> Result<(Duration, Duration)> {
    spec.validate()?;
    let (m, k) = (spec.vectors as usize, spec.elements as usize);
    Ok(match spec.elem_bytes {
        1 => timed_run::<u8>(strategy, m, k),
        2 => timed_run::<u16>(strategy, m, k),
        4 => timed_run::<i32>(strategy, m, k),
        8 => timed_run::<u64>(strategy, m, k),
        _ => timed_run::<u128>(strategy, m, k),
    })
}

/// Bytes of one element of the outer array, per strategy (`Vec<T>` and bumpalo's `Vec<T>`).
pub fn header_bytes() -> (u64, u64) {
    (
        std::mem::size_of::<Vec<i32>>() as u64,
        std::mem::size_of::<BumpVec<'static, i32>>() as u64,
    )
}
