//! Layouts: what a data structure asks the allocator for, as a plain list of blocks.
//!
//! A layout knows nothing about size classes; [`Layout::cost`] prices it under one build.

mod arrays;
mod f14;

pub use arrays::Array;
pub use arrays::ArraysLayout;
pub use f14::F14Vector;
pub(crate) use f14::F14_CHUNK_BYTES;
pub(crate) use f14::F14_DESIRED_PER_CHUNK;

use crate::sizeclass::SizeClasses;
use serde::Serialize;

/// One allocation request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Block {
    pub name: String,
    pub bytes: u64,
}

impl Block {
    pub fn new(name: impl Into<String>, bytes: u64) -> Self {
        Block {
            name: name.into(),
            bytes,
        }
    }
}

/// The allocations one instance of a data structure makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Layout {
    pub blocks: Vec<Block>,
}

/// What a layout costs under one allocator build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// Bytes the structure asked for.
    pub requested: u64,
    /// Bytes the allocator hands out (sum of the blocks' classes: `nallocx`).
    pub usable: u64,
    /// Bytes of pages kept active per instance (see [`SizeClasses::active_bytes`]).
    pub active: u64,
    /// malloc calls to build it (and free calls to drop it).
    pub calls: u64,
}

impl Layout {
    pub fn new(blocks: Vec<Block>) -> Self {
        Layout { blocks }
    }

    pub fn requested(&self) -> u64 {
        self.blocks.iter().map(|b| b.bytes).sum()
    }

    /// The cost under `classes`, or `None` if a block is larger than the largest class.
    pub fn cost(&self, classes: &SizeClasses) -> Option<Cost> {
        let mut cost = Cost {
            requested: 0,
            usable: 0,
            active: 0,
            calls: 0,
        };
        for block in &self.blocks {
            cost.requested += block.bytes;
            cost.usable += classes.usable_size(block.bytes)?;
            cost.active += classes.active_bytes(block.bytes)?;
            cost.calls += 1;
        }
        Some(cost)
    }
}

/// A structure that can be stored in several allocations or in one.
pub trait SplitOrUnified {
    /// One allocation per array (the "before" of the folly change).
    fn split(&self) -> Layout;
    /// All arrays in one allocation (the "after").
    fn unified(&self) -> Layout;
}

/// Rounds `n` up to a multiple of `align` (a power of two).
pub(crate) fn round_up(n: u64, align: u64) -> u64 {
    debug_assert!(align.is_power_of_two());
    (n + align - 1) & !(align - 1)
}
