//! jemalloc 5.3.1's default thread-cache GC (`experimental_tcache_gc:true`, `tcache.c`),
//! on the model's clock (the trace's times, read through the coarse clock of
//! [`super::DecayClock`]) where jemalloc reads `CLOCK_MONOTONIC_COARSE`:
//!
//! - `tcache_gc_event`: a GC event (every 64 KiB allocated, apart every 64 KiB freed, as in
//!   the deterministic GC) does anything only if 10 ms (`TCACHE_GC_INTERVAL_NS`) passed since
//!   the thread's last GC (`last_gc_time` starts at zero: the first passes); then it visits
//!   small bins round robin until 4 (`TCACHE_GC_SMALL_NBINS_MAX` = `SC_NBINS >> 3`) flushed
//!   something or all were seen, then large bins until 1 flushed.
//! - `tcache_gc_small`: the fill control (`base`, the old `lg_fill_div`) moves as before and
//!   its burst offset resets; 3/4 of low water is flushed, raised to the number of objects
//!   far from the bin's current slab (`tcache_gc_small_nremote_get`: outside a 2 MiB window
//!   around it when at least that many are, else outside the slab), which are moved to the
//!   bottom first (`tcache_gc_small_bin_shuffle`).
//! - `tcache_alloc_small_hard`: a fill of `nfill = ncached_max >> (base - offset)` takes
//!   between `nfill / 2 + 1` and `nfill` regions ([`crate::sim::ArenaModel`]'s `fill_small`), then
//!   the burst offset grows (`tcache_nfill_small_burst_prepare`); every small flush resets it.
//!
//! Approximate: addresses are known only inside one mapping (a slab's start stands for its
//! regions; another arena's or another mapping's object counts as far), and the coarse
//! clock's phase against the trace is drawn from the seed.

use super::super::tcache::Item;
use super::Process;
use crate::process::{ProcessError, ProcessOptions};
use crate::sim::SlabPlace;
use crate::sizeclass::JemallocVersion;

/// `TCACHE_GC_INTERVAL_NS`.
pub(crate) const GC_INTERVAL_NS: u64 = 10_000_000;
/// `TCACHE_GC_NEIGHBOR_LIMIT`: 2 MiB.
const NEIGHBOR_LIMIT: u64 = 1 << 21;
/// `TCACHE_GC_LARGE_NBINS_MAX`.
const LARGE_NBINS_MAX: usize = 1;

/// Whether a process of `version` with `options` runs the clock-driven GC (5.3.1's default).
pub(super) fn clock_gc_on(version: JemallocVersion, options: &ProcessOptions) -> bool {
    version == JemallocVersion::V5_3_1 && options.experimental_tcache_gc != Some(false)
}

/// `TCACHE_GC_SMALL_NBINS_MAX`: `SC_NBINS >> 3` (1 with 8 bins or fewer).
fn small_nbins_max(nbins_small: usize) -> usize {
    if nbins_small > 8 {
        nbins_small >> 3
    } else {
        1
    }
}

/// Which of `items` are far from `anchor` (a slab of `arena`) by the slab range and by the
/// 2 MiB window: `place(item)` gives an item's mapping and offset when it is in `arena`.
pub(crate) fn remote_flags(
    items: &[Item],
    arena: u32,
    anchor: SlabPlace,
    place: impl Fn(u32) -> (u32, u64),
) -> (Vec<bool>, Vec<bool>) {
    let (mut slab, mut neighbor) = (Vec::new(), Vec::new());
    for it in items {
        let here = it.arena == arena;
        slab.push(!(here && it.extent == anchor.slab));
        let far = !here || {
            let (sn, off) = place(it.extent);
            // addr < addr0 - 2 MiB || addr >= addr0 + 2 MiB (real addresses exceed 2 MiB, so
            // neighbor_min is never clamped).
            sn != anchor.sn
                || off + NEIGHBOR_LIMIT < anchor.offset
                || off >= anchor.offset + NEIGHBOR_LIMIT
        };
        neighbor.push(far);
    }
    (slab, neighbor)
}

/// `tcache_gc_small_bin_shuffle` on a bin in jemalloc's order (`head[0]` the top):
/// the `nremote` remote objects go to the bottom, the others keep their order on top.
pub(crate) fn shuffle(head: &mut [Item], remote: &mut [bool], nremote: usize) {
    let ncached = head.len();
    let ntop = ncached - nremote;
    debug_assert!(ntop > 0 && ntop < ncached);
    let mut swap: Option<usize> = None;
    let mut cnt = 0;
    for cur in 0..ntop {
        if !remote[cur] {
            cnt += 1;
            if let Some(s) = swap {
                head.swap(cur, s);
                remote.swap(cur, s);
                swap = Some(s + 1);
            }
        } else if swap.is_none() {
            swap = Some(cur);
        }
    }
    for cur in ntop..ncached {
        if cnt == ntop {
            break;
        }
        if !remote[cur] {
            head.swap(cur, cnt);
            remote.swap(cur, cnt);
            cnt += 1;
        }
    }
    debug_assert_eq!(cnt, ntop);
}

/// What `tcache_gc_small` decides from the bin's contents: how many to flush and the
/// bin's new order (bottom first, as the model's stacks), both from `tcache.c`.
pub(crate) fn small_plan(
    stack: &[Item],
    low_water: usize,
    arena: u32,
    anchor: Option<SlabPlace>,
    place: impl Fn(u32) -> (u32, u64),
) -> (usize, Option<Vec<Item>>) {
    let ncached = stack.len();
    let mut nflush = low_water - (low_water >> 2);
    if nflush == ncached {
        return (nflush, None);
    }
    let Some(anchor) = anchor else {
        return (nflush, None);
    };
    let mut head: Vec<Item> = stack.iter().rev().copied().collect();
    let (slab, neighbor) = remote_flags(&head, arena, anchor, place);
    let count = |v: &[bool]| v.iter().filter(|&&r| r).count();
    let (mut remote, nremote) = if count(&neighbor) >= nflush {
        let n = count(&neighbor);
        (neighbor, n)
    } else {
        let n = count(&slab);
        (slab, n)
    };
    nflush = nflush.max(nremote);
    if nremote == 0 || nremote == ncached {
        return (nflush, None);
    }
    shuffle(&mut head, &mut remote, nremote);
    head.reverse();
    (nflush, Some(head))
}

impl Process {
    /// `tcache_gc_event` with the experimental GC: the 10 ms gate on the model's clock, then
    /// up to 4 small bins and 1 large bin that flush.
    pub(super) fn gc_clock(&mut self, t: usize) {
        let now = self.clock.read();
        let info = &self.info;
        let (nhbins, nsmall) = (info.nhbins(), info.nbins_small);
        let Some(tc) = self.threads[t].as_mut().and_then(|th| th.tcache.as_mut()) else {
            return;
        };
        if let Some(last) = tc.last_gc_ns {
            if now.saturating_sub(last) < GC_INTERVAL_NS {
                return;
            }
        }
        tc.last_gc_ns = Some(now);
        let small_nbins = nhbins.min(nsmall);
        let (mut s, mut l) = (tc.next_gc_bin_small, tc.next_gc_bin_large);
        let mut done = 0;
        for _ in 0..small_nbins {
            if done >= small_nbins_max(nsmall) {
                break;
            }
            if self.try_gc_bin(t, s) {
                done += 1;
            }
            s = if s + 1 == small_nbins { 0 } else { s + 1 };
        }
        if nhbins > nsmall {
            done = 0;
            for _ in nsmall..nhbins {
                if done >= LARGE_NBINS_MAX {
                    break;
                }
                if self.try_gc_bin(t, l) {
                    done += 1;
                }
                l = if l + 1 == nhbins { nsmall } else { l + 1 };
            }
        }
        let tc = self.tcache_mut(t);
        tc.next_gc_bin_small = s;
        if nhbins > nsmall {
            tc.next_gc_bin_large = l;
        }
    }

    fn tcache_mut(&mut self, t: usize) -> &mut super::Tcache {
        self.threads[t]
            .as_mut()
            .and_then(|th| th.tcache.as_mut())
            .expect("cache")
    }

    /// `tcache_try_gc_bin`: true if the bin flushed; low water is reset either way.
    fn try_gc_bin(&mut self, t: usize, b: usize) -> bool {
        let max = self.info.ncached_max[b];
        if max == 0 {
            return false;
        }
        let flushed = if b < self.info.nbins_small {
            self.gc_small(t, b, max)
        } else {
            let bin = &self.tcache_mut(t).bins[b];
            let (lw, n) = (bin.low_water as usize, bin.stack.len());
            if lw > 0 {
                self.flush(t, b, n - lw + (lw >> 2));
            }
            lw > 0
        };
        let bin = &mut self.tcache_mut(t).bins[b];
        bin.low_water = bin.stack.len() as u32;
        flushed
    }

    /// `tcache_gc_small` with the experimental GC.
    fn gc_small(&mut self, t: usize, b: usize, max: u32) -> bool {
        let tc = self.tcache_mut(t);
        let arena = tc.arena;
        let bin = &mut tc.bins[b];
        // tcache_nfill_small_gc_update.
        if bin.low_water > 0 {
            if (max >> bin.lg_fill_div) > 1 {
                bin.lg_fill_div += 1;
            }
            bin.burst_offset = 0;
        } else if bin.refilled {
            if bin.lg_fill_div > 1 {
                bin.lg_fill_div -= 1;
            }
            bin.burst_offset = 0;
            bin.refilled = false;
        }
        let low_water = bin.low_water as usize;
        let stack = std::mem::take(&mut bin.stack);
        let anchor = if low_water - (low_water >> 2) == stack.len() {
            None
        } else {
            self.arena_mut(arena).gc_anchor(b)
        };
        let a = self.arena(arena);
        let (nflush, order) = small_plan(&stack, low_water, arena, anchor, |e| a.extent_place(e));
        let ncached = stack.len();
        self.tcache_mut(t).bins[b].stack = order.unwrap_or(stack);
        if nflush == 0 {
            return false;
        }
        self.flush(t, b, ncached - nflush);
        true
    }

    /// `tcache_alloc_small_hard`'s fill with the experimental GC: `nfill_min..=nfill` regions,
    /// then the burst offset grows.
    pub(super) fn fill_burst(
        &mut self,
        n: u64,
        t: usize,
        bin: usize,
        arena: u32,
    ) -> Result<(), ProcessError> {
        let max = self.info.ncached_max[bin];
        let size = self.info.size[bin];
        let b = &self.tcache_mut(t).bins[bin];
        let nfill = (max >> (b.lg_fill_div - b.burst_offset)).max(1);
        let taken = self
            .arena_mut(arena)
            .fill_small(n, bin, nfill / 2 + 1, nfill)?;
        let tc = self.tcache_mut(t);
        let cache_arena = tc.arena;
        let b = &mut tc.bins[bin];
        b.stack
            .extend(taken.iter().rev().map(|&extent| Item { arena, extent }));
        b.refilled = true;
        if b.burst_offset + 1 < b.lg_fill_div {
            b.burst_offset += 1;
        }
        self.tcache_bytes[cache_arena as usize] += size * taken.len() as u64;
        self.tick(t, arena, 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(arena: u32, extent: u32) -> Item {
        Item { arena, extent }
    }

    #[test]
    fn a_locality_gc_flushes_the_far_objects_from_the_bottom() {
        // Bottom first: A (slab 5), B (slab 7), C (slab 5), D (another arena's slab 9); the
        // anchor is slab 5 of arena 0, every slab of arena 0 in one mapping within 2 MiB.
        // By hand from tcache.c (5.3.1): nflush = 2 - 2/4 = 2 (line 394); far from the
        // 2 MiB window only D, 1 < 2, so the slab range counts: B and D, nremote = 2
        // (tcache_gc_small_nremote_get, 274-287); nflush = max(2, 2). The shuffle (290-360)
        // on head order [D, C, B, A]: D is remote (swap = 0), C local swaps up -> [C, D, B,
        // A]; then A (past ntop = 2) swaps with head[1] -> [C, A, B, D]. Bottom first: D, B,
        // A, C, and the flush takes the bottom two, D and B.
        let stack = [it(0, 5), it(0, 7), it(0, 5), it(1, 9)];
        let anchor = SlabPlace {
            slab: 5,
            sn: 0,
            offset: 8192,
            size: 4096,
        };
        let place = |e: u32| (0, u64::from(e) * 4096);
        let (nflush, order) = small_plan(&stack, 2, 0, Some(anchor), place);
        assert_eq!(nflush, 2);
        assert_eq!(order, Some(vec![it(1, 9), it(0, 7), it(0, 5), it(0, 5)]));
        // Slab 7 more than 2 MiB away: the window alone finds two far objects (B, D) and
        // takes them; low water 0 still flushes them (nflush = nremote).
        let far = |e: u32| (0, if e == 7 { 8 << 20 } else { 8192 });
        let (nflush, order) = small_plan(&stack, 0, 0, Some(anchor), far);
        assert_eq!(nflush, 2);
        assert_eq!(order.unwrap()[..2], [it(1, 9), it(0, 7)]);
        // All of the bin to flush (low water 3 of 3: nflush = 3): straight to the flush, no
        // locality check (line 416).
        assert_eq!(
            small_plan(&stack[..3], 3, 0, Some(anchor), place),
            (3, None)
        );
    }
}
