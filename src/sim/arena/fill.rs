//! What jemalloc 5.3.1's clock-driven cache GC (`experimental_tcache_gc`, its default) asks of
//! an arena's bins: a batch fill of between `nfill_min` and `nfill_max` regions that takes
//! whole slabs when they fit (`arena_ptr_array_fill_small`), and the slab a GC keeps objects
//! near (`tcache_gc_small_heuristic_addr_get`).

use super::super::ph::NIL;
use super::super::SimError;
use super::ArenaModel;

/// Where a slab lies: its mapping (serial number), its offset in that mapping and its size.
/// Offsets compare as jemalloc's addresses do inside one mapping; how mappings lie against
/// each other is not modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlabPlace {
    pub slab: u32,
    pub sn: u32,
    pub offset: u64,
    pub size: u64,
}

impl ArenaModel {
    /// `arena_ptr_array_fill_small(.., nfill_min, nfill_max)`: regions of bin `b` for a
    /// cache fill, in the order taken (the first ends on the cache's top). While fewer than
    /// `min` are taken: the current slab's free regions all when they keep the total within
    /// `max`, else just enough to reach `min`; an exhausted current slab is replaced by the
    /// heap's first non-full slab, else by a fresh slab. With `min == max` this is `max`
    /// single allocations (5.3.0's and the deterministic GC's fill).
    pub(crate) fn fill_small(
        &mut self,
        event: u64,
        b: usize,
        min: u32,
        max: u32,
    ) -> Result<Vec<u32>, SimError> {
        debug_assert!(min > 0 && min <= max);
        let mut taken = Vec::with_capacity(max as usize);
        while (taken.len() as u32) < min {
            let filled = taken.len() as u32;
            let cur = self.bins[b].cur;
            let nfree = match self.pac.ext.v.get(cur as usize) {
                Some(e) if cur != NIL => e.nfree,
                _ => 0,
            };
            if nfree == 0 {
                // bin_refill_slabcur_no_fresh_slab, then arena_slab_alloc: `refill` does both.
                self.refill(b)
                    .map_err(|_| SimError::OutOfAddressSpace { event })?;
                continue;
            }
            let cnt = if nfree + filled > max {
                min - filled
            } else {
                nfree
            };
            // bin_slab_reg_alloc_batch: `cnt` regions of the current slab.
            for _ in 0..cnt {
                let slab = self
                    .malloc_small(b)
                    .map_err(|_| SimError::OutOfAddressSpace { event })?;
                taken.push(slab);
            }
        }
        Ok(taken)
    }

    /// `tcache_gc_small_heuristic_addr_get`: bin `b`'s current slab, else its heap's first
    /// non-full slab (`edata_heap_first`, which merges the heap's aux list), else none.
    pub(crate) fn gc_anchor(&mut self, b: usize) -> Option<SlabPlace> {
        let bin = &mut self.bins[b];
        let slab = if bin.cur != NIL {
            bin.cur
        } else {
            bin.nonfull.first(&mut self.pac.ext)
        };
        if slab == NIL {
            return None;
        }
        let e = self.pac.ext.get(slab);
        Some(SlabPlace {
            slab,
            sn: e.sn,
            offset: e.offset,
            size: self.bins[b].slab_size,
        })
    }

    /// The mapping and offset of an active extent (a slab's start).
    pub(crate) fn extent_place(&self, extent: u32) -> (u32, u64) {
        let e = self.pac.ext.get(extent);
        (e.sn, e.offset)
    }
}
