//! The thread cache's paths of the process model: pop, fill, free, flush, realloc, and the
//! GC driven by each thread's allocated and freed bytes.

use super::super::tcache::{flush_order, Item};
use super::{Ask, Object, Process, GC_INCR_BYTES};
use crate::process::ProcessError;

impl Process {
    pub(super) fn cache_pop(&mut self, t: usize, bin: usize) -> Option<Item> {
        let th = self.threads[t].as_mut().expect("thread");
        let tc = th.tcache.as_mut()?;
        let item = tc.bins[bin].pop()?;
        self.tcache_bytes[tc.arena as usize] -= self.info.size[bin];
        Some(item)
    }

    /// `tcache_alloc_small_hard`: `ncached_max >> lg_fill_div` regions, taken exactly as
    /// that many cache-off allocations from `arena` (the thread's, or the one a `mallocx`
    /// names); the first ends on top.
    pub(super) fn fill(
        &mut self,
        n: u64,
        t: usize,
        bin: usize,
        arena: u32,
    ) -> Result<(), ProcessError> {
        if self.clock_gc {
            return self.fill_burst(n, t, bin, arena);
        }
        let tc = self.threads[t]
            .as_ref()
            .and_then(|th| th.tcache.as_ref())
            .expect("cache");
        let div = tc.bins[bin].lg_fill_div;
        let nfill = (self.info.ncached_max[bin] >> div).max(1) as usize;
        let size = self.info.size[bin];
        let mut taken = Vec::with_capacity(nfill);
        for _ in 0..nfill {
            taken.push(self.arena_mut(arena).place(n, size)?);
        }
        let tc = self.threads[t]
            .as_mut()
            .and_then(|th| th.tcache.as_mut())
            .expect("cache");
        let b = &mut tc.bins[bin];
        b.stack
            .extend(taken.iter().rev().map(|&extent| Item { arena, extent }));
        b.refilled = true;
        self.tcache_bytes[tc.arena as usize] += size * nfill as u64;
        self.tick(t, arena, 1);
        Ok(())
    }

    /// A free on thread `t` (`ifree`): into its cache when the class is cached (a full
    /// bin first flushes its oldest half), else straight to the owning arena.
    pub(super) fn free(&mut self, t: usize, obj: Object) {
        let bin = self.bin_of(obj.usize);
        if !self.cached(t, bin) {
            self.arena_mut(obj.arena).remove(obj.extent);
            self.tick(t, obj.arena, 1);
            return;
        }
        let max = self.info.ncached_max[bin] as usize;
        let len = self.threads[t]
            .as_ref()
            .unwrap()
            .tcache
            .as_ref()
            .unwrap()
            .bins[bin]
            .stack
            .len();
        if len >= max {
            // opt_lg_tcache_flush_small_div = opt_lg_tcache_flush_large_div = 1.
            self.flush(t, bin, max >> 1);
        }
        let tc = self.threads[t]
            .as_mut()
            .and_then(|th| th.tcache.as_mut())
            .unwrap();
        tc.bins[bin].stack.push(Item {
            arena: obj.arena,
            extent: obj.extent,
        });
        self.tcache_bytes[tc.arena as usize] += self.info.size[bin];
    }

    /// `tcache_bin_flush_{small,large}(.., rem)`: the oldest objects down to `rem` go back
    /// to the arenas that own them, in jemalloc's order.
    pub(super) fn flush(&mut self, t: usize, bin: usize, rem: usize) {
        let tc = self.threads[t]
            .as_mut()
            .and_then(|th| th.tcache.as_mut())
            .unwrap();
        if self.clock_gc {
            // tcache_bin_flush_small: tcache_nfill_small_burst_reset.
            tc.bins[bin].burst_offset = 0;
        }
        let items = tc.bins[bin].take_bottom(rem);
        if items.is_empty() {
            return;
        }
        self.tcache_bytes[tc.arena as usize] -= self.info.size[bin] * items.len() as u64;
        let small = bin < self.info.nbins_small;
        let order = flush_order(items, self.config.version, small);
        for item in &order {
            self.arena_mut(item.arena).remove(item.extent);
        }
        // One tick per object, per run of objects of one arena (jemalloc's groups).
        let mut start = 0;
        while start < order.len() {
            let arena = order[start].arena;
            let len = order[start..]
                .iter()
                .take_while(|i| i.arena == arena)
                .count();
            self.tick(t, arena, len as u32);
            start += len;
        }
    }

    /// `arena_ralloc`: a small block staying in its class stays; large to large tries in
    /// place (`large_ralloc_no_move`), else moves with a direct large allocation
    /// (`large_ralloc_move_helper`, no cache); anything else allocates as a fresh request.
    /// The old block is then freed through the thread's cache.
    pub(super) fn realloc(
        &mut self,
        n: u64,
        t: usize,
        obj: Object,
        usize: u64,
    ) -> Result<(u32, u32), ProcessError> {
        self.realloc_in(n, t, obj, usize, None, true)
    }

    /// [`Process::realloc`] with `rallocx`'s flags: a move goes to arena `named` when one is
    /// named, and through the thread's cache only when `cache` (else the fresh allocation
    /// and the old block's free bypass it).
    pub(super) fn realloc_in(
        &mut self,
        n: u64,
        t: usize,
        obj: Object,
        usize: u64,
        named: Option<u32>,
        cache: bool,
    ) -> Result<(u32, u32), ProcessError> {
        let large_min = self.small_max + 1;
        let old_small = obj.usize <= self.small_max;
        if old_small && usize <= self.small_max && self.bin_of(usize) == self.bin_of(obj.usize) {
            self.tick(t, obj.arena, 1);
            return Ok((obj.arena, obj.extent));
        }
        let new = if !old_small && usize >= large_min {
            if self.arena_mut(obj.arena).resize_in_place(obj.extent, usize) {
                self.tick(t, obj.arena, 1);
                return Ok((obj.arena, obj.extent));
            }
            let arena = match named {
                Some(a) => a,
                None => self.arena_for(t, usize)?,
            };
            let extent = self.arena_mut(arena).place(n, usize)?;
            self.tick(t, arena, 1);
            (arena, extent)
        } else {
            // arena_ralloc_move_helper asks for the usable size.
            let align = obj.align;
            let ask = Ask {
                size: usize,
                usize,
                align,
            };
            self.alloc_in(n, t, ask, named, cache)?
        };
        if cache {
            self.free(t, obj);
        } else {
            self.arena_mut(obj.arena).remove(obj.extent);
            self.tick(t, obj.arena, 1);
        }
        Ok(new)
    }

    pub(super) fn alloc_event(&mut self, t: usize, usize: u64) {
        let th = self.threads[t].as_mut().unwrap();
        th.allocated += usize;
        if th.allocated - th.alloc_gc_last >= GC_INCR_BYTES {
            th.alloc_gc_last = th.allocated;
            self.gc(t);
        }
    }

    pub(super) fn dalloc_event(&mut self, t: usize, usize: u64) {
        let th = self.threads[t].as_mut().unwrap();
        th.deallocated += usize;
        if th.deallocated - th.dalloc_gc_last >= GC_INCR_BYTES {
            th.dalloc_gc_last = th.deallocated;
            self.gc(t);
        }
    }

    /// `tcache_event` (5.3.0) / `tcache_gc_event` without the experimental GC (5.3.1): one
    /// bin per event, round robin; flush 3/4 of what stayed below low water and halve the
    /// next fill, or double it after a refill.
    pub(super) fn gc(&mut self, t: usize) {
        if self.clock_gc {
            return self.gc_clock(t);
        }
        let info = &self.info;
        let Some(tc) = self.threads[t].as_mut().and_then(|th| th.tcache.as_mut()) else {
            return;
        };
        let b = tc.next_gc_bin;
        tc.next_gc_bin = (b + 1) % info.nhbins();
        let max = info.ncached_max[b];
        if max == 0 {
            return;
        }
        let small = b < info.nbins_small;
        let bin = &mut tc.bins[b];
        let low_water = bin.low_water as usize;
        let mut rem = None;
        if low_water > 0 {
            let ncached = bin.stack.len();
            if small {
                rem = Some(ncached - (low_water - (low_water >> 2)));
                if (max >> (bin.lg_fill_div + 1)) >= 1 {
                    bin.lg_fill_div += 1;
                }
            } else {
                rem = Some(ncached - low_water + (low_water >> 2));
            }
        } else if small && bin.refilled {
            if bin.lg_fill_div > 1 {
                bin.lg_fill_div -= 1;
            }
            bin.refilled = false;
        }
        if let Some(rem) = rem {
            self.flush(t, b, rem);
        }
        let tc = self.threads[t]
            .as_mut()
            .and_then(|th| th.tcache.as_mut())
            .unwrap();
        tc.bins[b].low_water = tc.bins[b].stack.len() as u32;
    }
}
