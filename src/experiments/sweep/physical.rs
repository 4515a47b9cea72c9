//! The physically exact footprint of F14 vector tables, split vs unified.

use super::SizeRange;
use crate::error::InputError;
use crate::export::{Cell, Table};
use crate::layout::{Cost, F14Vector, SplitOrUnified};
use crate::sizeclass::SizeClasses;
use rayon::prelude::*;

/// The largest table capacity a sweep accepts (2^40 values): beyond it byte counts overflow.
pub(crate) const MAX_CAPACITY: u64 = 1 << 40;

/// The most rows a sweep produces (about 80 MB of CSV, a few hundred MB while collected):
/// more is a typo in the ranges, and would exhaust memory before printing anything.
pub(crate) const MAX_ROWS: u64 = 1_000_000;
/// Bytes of text per row, roughly, for the error message.
const ROW_TEXT_BYTES: u64 = 80;

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    pub sizes: SizeRange,
    pub max_capacity: u64,
    /// Alignment of the value type; `None` takes [`F14Vector::natural_align`].
    pub value_align: Option<u64>,
}

impl Default for SweepSpec {
    fn default() -> Self {
        SweepSpec {
            sizes: SizeRange::new(8, 256, 8).expect("valid default range"),
            max_capacity: 10 << 20,
            value_align: None,
        }
    }
}

/// One table size of one value size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhysicalRow {
    pub table: F14Vector,
    pub before: Cost,
    pub after: Cost,
}

impl PhysicalRow {
    /// after / before, in usable bytes.
    pub fn ratio(&self) -> f64 {
        self.after.usable as f64 / self.before.usable as f64
    }

    /// after / before, in bytes of active pages.
    pub(crate) fn active_ratio(&self) -> f64 {
        self.after.active as f64 / self.before.active as f64
    }
}

/// Prices every (value size, capacity step) pair; rows ordered by value size, then capacity.
pub fn physical_sweep(
    classes: &SizeClasses,
    spec: &SweepSpec,
) -> Result<Vec<PhysicalRow>, InputError> {
    if spec.max_capacity < 2 {
        return Err(InputError::CapacityTooSmall(spec.max_capacity));
    }
    if spec.max_capacity > MAX_CAPACITY {
        return Err(InputError::CapacityTooLarge {
            capacity: spec.max_capacity,
            max: MAX_CAPACITY,
        });
    }
    if let Some(align) = spec.value_align {
        if !align.is_power_of_two() || align > 4096 {
            return Err(InputError::BadAlignment(align));
        }
    }
    let steps = F14Vector::capacity_steps(spec.max_capacity);
    // Counted before anything is computed or collected.
    let rows = spec.sizes.count().saturating_mul(steps.len() as u64);
    if rows > MAX_ROWS {
        return Err(InputError::TooManyRows {
            rows,
            bytes: rows.saturating_mul(ROW_TEXT_BYTES),
            max: MAX_ROWS,
        });
    }
    let sizes: Vec<u64> = spec.sizes.values().collect();
    let rows: Vec<Vec<PhysicalRow>> = sizes
        .par_iter()
        .map(|&value_size| {
            let value_align = spec
                .value_align
                .unwrap_or_else(|| F14Vector::natural_align(value_size));
            steps
                .iter()
                .map(|&capacity| {
                    let table = F14Vector {
                        value_size,
                        value_align,
                        capacity,
                    };
                    let price = |layout: crate::layout::Layout| {
                        layout.cost(classes).ok_or(InputError::TableTooLarge {
                            capacity,
                            value_size,
                            bytes: layout.requested(),
                        })
                    };
                    Ok(PhysicalRow {
                        table,
                        before: price(table.split())?,
                        after: price(table.unified())?,
                    })
                })
                .collect()
        })
        .collect::<Result<_, InputError>>()?;
    Ok(rows.into_iter().flatten().collect())
}

/// The rows as a table (columns begin `value_size,capacity,before_bytes,after_bytes,ratio`).
pub fn physical_table(classes: &SizeClasses, rows: &[PhysicalRow]) -> Table {
    let mut table = Table::new(
        format!(
            "F14 vector tables, split (before) vs unified (after), {}",
            crate::sizeclass::build_title(classes.config())
        ),
        &[
            "value_size",
            "capacity",
            "before_bytes",
            "after_bytes",
            "ratio",
            "chunks",
            "before_requested",
            "after_requested",
            "before_active",
            "after_active",
            "active_ratio",
            "before_calls",
            "after_calls",
        ],
    );
    for r in rows {
        table.push(vec![
            r.table.value_size.into(),
            r.table.capacity.into(),
            r.before.usable.into(),
            r.after.usable.into(),
            Cell::Float(r.ratio(), 6),
            r.table.chunk_count().into(),
            r.before.requested.into(),
            r.after.requested.into(),
            r.before.active.into(),
            r.after.active.into(),
            Cell::Float(r.active_ratio(), 6),
            r.before.calls.into(),
            r.after.calls.into(),
        ]);
    }
    table
}
