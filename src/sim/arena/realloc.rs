//! Reallocation (jemalloc's `arena_ralloc` and `large_ralloc_no_move`).

use super::super::SimError;
use super::ArenaModel;

impl ArenaModel {
    /// `arena_ralloc`: same small class in place; large to large in place when the page
    /// allocator can (`large_ralloc_no_move`); anything else allocates anew, then frees.
    pub(super) fn realloc(&mut self, event: u64, extent: u32, usize: u64) -> Result<u32, SimError> {
        let small_max = self.small_max;
        let e = *self.pac.ext.get(extent);
        if e.slab && usize <= small_max {
            if self.bin_index(usize) == e.bin as usize {
                return Ok(extent);
            }
        } else if !e.slab && usize > small_max && self.resize_in_place(extent, usize) {
            return Ok(extent);
        }
        let new = self.place(event, usize)?;
        self.remove(extent);
        Ok(new)
    }

    /// `large_ralloc_no_move` for a large extent and a large `usize`: grow in place when the
    /// page allocator can, keep the same size, or shrink in place; false when it must move.
    pub(crate) fn resize_in_place(&mut self, extent: u32, usize: u64) -> bool {
        let old = self.pac.ext.get(extent).size - self.large_pad;
        if usize > old && self.pac.expand(extent, usize + self.large_pad) {
            self.stats.active_bytes += usize - old;
            self.stats.allocated_bytes += usize - old;
            self.note_mappings();
            return true;
        }
        if usize == old {
            return true;
        }
        if usize < old {
            self.pac.shrink(extent, usize + self.large_pad);
            self.stats.active_bytes -= old - usize;
            self.stats.allocated_bytes -= old - usize;
            return true;
        }
        false
    }
}
