//! F14 layouts allocated for real in private arenas, measured through jemalloc's statistics.

use super::ValidateOptions;
use crate::experiments::sweep::physical_sweep;
use crate::layout::{Layout, SplitOrUnified};
use crate::live::{ArenaUsage, PrivateArena};
use crate::sizeclass::SizeClasses;
use anyhow::Result;

/// Real allocations of one F14 layout.
#[derive(Clone, Debug, PartialEq)]
pub struct F14Measurement {
    pub value_size: u64,
    pub capacity: u64,
    /// `before` (split) or `after` (unified).
    pub layout: &'static str,
    pub instances: u64,
    pub predicted_usable: u64,
    pub measured_usable: u64,
    pub predicted_active: u64,
    pub measured_active: u64,
    /// Allocator calls per table.
    pub predicted_calls: u64,
    /// jemalloc's `nmalloc` for all instances, divided by the instances.
    pub measured_calls: u64,
    /// jemalloc's `ndalloc` once every instance is freed, divided by the instances.
    pub measured_frees: u64,
    /// Whether `nmalloc` and `ndalloc` are both exactly `predicted_calls x instances`.
    pub calls_ok: bool,
}

impl F14Measurement {
    /// Comparisons one measurement makes: usable bytes, active bytes, calls.
    pub(crate) const COMPARISONS: u64 = 3;

    pub fn ok(&self) -> bool {
        self.predicted_usable == self.measured_usable
            && self.predicted_active == self.measured_active
            && self.calls_ok
    }
}

/// How many instances of a layout whose blocks take `usable` bytes to allocate.
fn instances(options: &ValidateOptions, usable: u64) -> u64 {
    (options.bytes_per_row / usable.max(1)).clamp(1, options.max_instances)
}

/// Active bytes `count` instances of `layout` need in an empty arena.
fn predicted_active(classes: &SizeClasses, layout: &Layout, count: u64) -> Option<u64> {
    let requests: Vec<(u64, u64)> = layout.blocks.iter().map(|b| (b.bytes, count)).collect();
    classes.active_bytes_of(&requests)
}

/// `count` instances of `layout` in a fresh arena: the arena's statistics with all of them
/// alive, and again once all are freed.
fn allocate(layout: &Layout, count: u64) -> Result<(ArenaUsage, ArenaUsage)> {
    let arena = PrivateArena::create()?;
    let mut live = Vec::with_capacity((count as usize) * layout.blocks.len());
    for _ in 0..count {
        for block in &layout.blocks {
            live.push((arena.alloc(block.bytes)?, block.bytes));
        }
    }
    let alive = arena.usage();
    for (ptr, size) in live {
        // SAFETY: each pointer came from this arena's alloc(size) and is freed once.
        unsafe { arena.free(ptr, size) };
    }
    Ok((alive?, arena.usage()?))
}

pub(super) fn measure_f14(
    classes: &SizeClasses,
    options: &ValidateOptions,
) -> Result<Vec<F14Measurement>> {
    let rows = physical_sweep(classes, &options.sweep)?;
    options.progress.start("rows", rows.len() as u64);
    let mut measured = Vec::with_capacity(2 * rows.len());
    for row in &rows {
        for (name, layout, cost) in [
            ("before", row.table.split(), row.before),
            ("after", row.table.unified(), row.after),
        ] {
            let count = instances(options, cost.usable);
            let (alive, freed) = allocate(&layout, count)?;
            let expected_calls = cost.calls * count;
            measured.push(F14Measurement {
                value_size: row.table.value_size,
                capacity: row.table.capacity,
                layout: name,
                instances: count,
                predicted_usable: cost.usable * count,
                measured_usable: alive.allocated,
                predicted_active: predicted_active(classes, &layout, count).unwrap_or(0),
                measured_active: alive.active,
                predicted_calls: cost.calls,
                measured_calls: alive.mallocs / count,
                measured_frees: freed.frees / count,
                calls_ok: alive.mallocs == expected_calls && freed.frees == expected_calls,
            });
        }
        options.progress.advance(1);
    }
    options.progress.finish();
    Ok(measured)
}
