//! folly's F14VectorMap/Set storage, as of commit ff9d6fee (D8485933), from
//! `folly/container/detail/F14Table.h` and `F14Policy.h` (`VectorContainerPolicy::allocSize`).

use super::{round_up, Block, Layout, SplitOrUnified};

/// A chunk: a 16-byte header (tags, control, overflow counts) and 12 four-byte item indices.
pub const F14_CHUNK_BYTES: u64 = 64;
/// Items a chunk is sized to hold before the table grows.
pub const F14_DESIRED_PER_CHUNK: u64 = 10;
const CHUNK_HEADER_BYTES: u64 = 16;
const SLOT_BYTES: u64 = 4;
/// Alignment folly gives the chunk array (and the unified block when values need no more).
const CHUNK_ALIGN: u64 = 16;

/// An F14 vector-policy table of `capacity` values of `value_size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F14Vector {
    pub value_size: u64,
    pub value_align: u64,
    pub capacity: u64,
}

impl F14Vector {
    /// The alignment a plain struct of `value_size` bytes usually has: the largest power of
    /// two dividing its size, at most 8.
    pub fn natural_align(value_size: u64) -> u64 {
        (1u64 << value_size.trailing_zeros().min(3)).max(1)
    }

    /// The capacities a table passes through as it grows, up to `max_capacity`: 2 and 4 and
    /// 10 in one chunk, then 10 per chunk with the chunk count doubling.
    pub fn capacity_steps(max_capacity: u64) -> Vec<u64> {
        let mut steps: Vec<u64> = [2, 4, 10]
            .into_iter()
            .filter(|&c| c <= max_capacity)
            .collect();
        let mut chunks = 2u64;
        while let Some(cap) = chunks.checked_mul(F14_DESIRED_PER_CHUNK) {
            if cap > max_capacity {
                break;
            }
            steps.push(cap);
            chunks *= 2;
        }
        steps
    }

    pub(crate) fn chunk_count(&self) -> u64 {
        self.capacity.div_ceil(F14_DESIRED_PER_CHUNK).max(1)
    }

    /// Bytes of the chunk array: one chunk is trimmed to the slots it needs.
    pub(crate) fn chunk_prefix(&self) -> u64 {
        if self.chunk_count() == 1 {
            CHUNK_HEADER_BYTES + SLOT_BYTES * self.capacity
        } else {
            F14_CHUNK_BYTES * self.chunk_count()
        }
    }

    /// Bytes of the value array.
    pub(crate) fn values_bytes(&self) -> u64 {
        self.value_size * self.capacity
    }
}

impl SplitOrUnified for F14Vector {
    fn split(&self) -> Layout {
        Layout::new(vec![
            Block::new("chunks", round_up(self.chunk_prefix(), CHUNK_ALIGN)),
            Block::new("values", self.values_bytes()),
        ])
    }

    fn unified(&self) -> Layout {
        let bytes = if self.value_align <= 8 {
            round_up(self.chunk_prefix() + self.values_bytes(), CHUNK_ALIGN)
        } else {
            round_up(self.chunk_prefix(), self.value_align) + self.values_bytes()
        };
        Layout::new(vec![Block::new("chunks+values", bytes)])
    }
}
