//! Thread caches (jemalloc's `tcache.c`, `cache_bin.h`; 5.3.0, and 5.3.1 with
//! `experimental_tcache_gc:false`): the slots of each bin, the pointer stacks with their low
//! water, the fill divisor, and the order in which a flush hands objects back.

use super::options::ProcessOptions;
use crate::sizeclass::{JemallocVersion, SizeClasses};

/// One cached object: the arena that owns it and its slab or extent in that arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub arena: u32,
    pub extent: u32,
}

/// The cache bins every thread's cache has (`tcache_bin_info`, `nhbins`).
#[derive(Clone, Debug)]
pub(crate) struct CacheInfo {
    /// `ncached_max` per bin index (small bins first, then large classes up to
    /// `tcache_maxclass`); 0 = disabled.
    pub ncached_max: Vec<u32>,
    /// The class size of each bin (what `tcache_bytes` counts per cached object).
    pub size: Vec<u64>,
    pub nbins_small: usize,
    /// `tcache_maxclass`: the largest usable size cached.
    #[allow(dead_code)]
    pub maxclass: u64,
    /// Bytes of the pointer stacks: `cache_bin_info_compute_alloc` (2 spare slots plus
    /// `ncached_max` per bin), allocated with page alignment from arena 0.
    pub block_request: u64,
}

/// `tcache_ncached_max_compute` (identical in 5.3.0 and 5.3.1).
fn ncached_max_small(nregs: u32, o: &ProcessOptions) -> u32 {
    // CACHE_BIN_NCACHED_MAX with a 16-bit cache_bin_sz_t and 8-byte pointers.
    let ncached_limit = (1u32 << 16) / 8 - 1;
    let mut min = o.tcache_nslots_small_min;
    let mut max = o.tcache_nslots_small_max.min(ncached_limit);
    if !min.is_multiple_of(2) {
        min += 1;
    }
    if !max.is_multiple_of(2) {
        max -= 1;
    }
    min = min.max(2);
    max = max.max(2);
    min = min.min(max);
    let mul = o.lg_tcache_nslots_mul;
    let mut candidate = if mul < 0 {
        nregs >> (-mul) as u32
    } else {
        nregs.checked_shl(mul as u32).unwrap_or(u32::MAX)
    };
    if !candidate.is_multiple_of(2) {
        candidate += 1;
    }
    candidate.clamp(min, max)
}

impl CacheInfo {
    /// `tcache_boot`: `nhbins = size2index(s2u(tcache_max)) + 1`.
    pub fn new(classes: &SizeClasses, o: &ProcessOptions, version: JemallocVersion) -> Self {
        let lg_page = classes.config().lg_page;
        let max = o.tcache_max_for(version, lg_page);
        let all = classes.all();
        // sz_s2u(0) is the smallest class.
        let maxclass = classes
            .usable_size(max.max(1))
            .unwrap_or(all[all.len() - 1].size);
        let nhbins = all.partition_point(|c| c.size < maxclass) + 1;
        let nbins_small = classes.bins().len();
        let mut ncached_max = Vec::with_capacity(nhbins);
        let mut size = Vec::with_capacity(nhbins);
        for c in &all[..nhbins] {
            let n = if c.index < nbins_small {
                ncached_max_small(c.nregs as u32, o)
            } else {
                o.tcache_nslots_large
            };
            ncached_max.push(n);
            size.push(c.size);
        }
        let block_request = 16 + 8 * ncached_max.iter().map(|&n| u64::from(n)).sum::<u64>();
        CacheInfo {
            ncached_max,
            size,
            nbins_small,
            maxclass,
            block_request,
        }
    }

    pub(crate) fn nhbins(&self) -> usize {
        self.ncached_max.len()
    }
}

/// One cache bin (`cache_bin_t` plus its `tcache_slow_t` fields).
#[derive(Clone, Debug, Default)]
pub(crate) struct CacheBin {
    /// Bottom (oldest) first; the last item is the top, which the next allocation takes.
    pub stack: Vec<Item>,
    pub low_water: u32,
    /// `lg_fill_div` (5.3.0) / the fill control's base (5.3.1; its burst offset is unused
    /// without the experimental GC).
    pub lg_fill_div: u32,
    pub refilled: bool,
    /// The fill control's burst offset (5.3.1's clock-driven GC only: the fill divisor is
    /// `lg_fill_div - burst_offset`; see `model/gc.rs`).
    pub burst_offset: u32,
}

/// One thread's cache.
#[derive(Clone, Debug)]
pub(crate) struct Tcache {
    pub bins: Vec<CacheBin>,
    pub next_gc_bin: usize,
    /// The arena the cache is associated with (its `tcache_bytes` count there).
    pub arena: u32,
    /// The cache's own block in arena 0.
    pub block: Item,
    /// 5.3.1's clock-driven GC (`model/gc.rs`): `last_gc_time` (`None`: zero, so the first
    /// check passes) and the next small and large bins to visit.
    pub last_gc_ns: Option<u64>,
    pub next_gc_bin_small: usize,
    pub next_gc_bin_large: usize,
}

impl Tcache {
    pub fn new(info: &CacheInfo, arena: u32, block: Item) -> Self {
        Tcache {
            bins: (0..info.nhbins())
                .map(|_| CacheBin {
                    lg_fill_div: 1,
                    ..CacheBin::default()
                })
                .collect(),
            next_gc_bin: 0,
            arena,
            block,
            last_gc_ns: None,
            next_gc_bin_small: 0,
            next_gc_bin_large: info.nbins_small,
        }
    }
}

impl Tcache {
    /// The bytes the cache holds (what `stats.arenas.<i>.tcache_bytes` counts).
    pub fn bytes(&self, info: &CacheInfo) -> u64 {
        self.bins
            .iter()
            .zip(&info.size)
            .map(|(b, &size)| size * b.stack.len() as u64)
            .sum()
    }
}

impl CacheBin {
    /// `cache_bin_alloc`: pops the top; low water follows the fewest held.
    pub fn pop(&mut self) -> Option<Item> {
        let item = self.stack.pop()?;
        let n = self.stack.len() as u32;
        if n < self.low_water {
            self.low_water = n;
        }
        Some(item)
    }

    /// Takes the oldest `len - rem` objects off the bottom, in the order of jemalloc's
    /// flush array (`cache_bin_init_ptr_array_for_flush`: `S[nflush-1]` down to `S[0]`);
    /// `cache_bin_finish_flush` then lowers low water if needed.
    pub(crate) fn take_bottom(&mut self, rem: usize) -> Vec<Item> {
        let nflush = self.stack.len().saturating_sub(rem);
        let mut out: Vec<Item> = self.stack.drain(..nflush).collect();
        out.reverse();
        let n = self.stack.len() as u32;
        if n < self.low_water {
            self.low_water = n;
        }
        out
    }
}

/// `CACHE_BIN_NFLUSH_BATCH_MAX` of 5.3.1 (`VARIABLE_ARRAY_SIZE_MAX` 2048 / 8 - 1).
const NFLUSH_BATCH_MAX: usize = 255;

/// The order in which a flush returns `items` (in flush-array order) to their arenas.
///
/// 5.3.0 (`tcache_bin_flush_impl`) and 5.3.1's large flush: the first remaining object's
/// arena takes all of its objects in order, the others are deferred in order, repeat.
/// 5.3.1's small flush (`arena_ptr_array_flush_impl_small`), in batches of 255: the
/// first remaining object's arena, then every later object of that arena is swapped
/// forward into place, which moves the objects it passes over.
pub(crate) fn flush_order(
    mut items: Vec<Item>,
    version: JemallocVersion,
    small: bool,
) -> Vec<Item> {
    if items.iter().all(|i| i.arena == items[0].arena) {
        return items;
    }
    if version == JemallocVersion::V5_3_1 && small {
        for batch in items.chunks_mut(NFLUSH_BATCH_MAX) {
            let mut start = 0;
            while start < batch.len() {
                let cur = batch[start].arena;
                start += 1;
                // The loop's range is fixed at entry, as in jemalloc's `for (i = flush_start..`.
                #[allow(clippy::mut_range_bound)]
                for i in start..batch.len() {
                    if batch[i].arena == cur {
                        batch.swap(start, i);
                        start += 1;
                    }
                }
            }
        }
        return items;
    }
    let batch = if version == JemallocVersion::V5_3_1 {
        NFLUSH_BATCH_MAX
    } else {
        usize::MAX
    };
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(batch.min(items.len().max(1))) {
        let mut rest: Vec<Item> = chunk.to_vec();
        while !rest.is_empty() {
            let cur = rest[0].arena;
            out.extend(rest.iter().filter(|i| i.arena == cur));
            rest.retain(|i| i.arena != cur);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(arena: u32, extent: u32) -> Item {
        Item { arena, extent }
    }

    #[test]
    fn slots_follow_tcache_ncached_max_compute() {
        // Hand-derived from tcache_ncached_max_compute: 2 x nregs, even, in [20, 200].
        let o = ProcessOptions::default();
        assert_eq!(ncached_max_small(512, &o), 200); // 8-byte class
        assert_eq!(ncached_max_small(64, &o), 128); // 64-byte class
        assert_eq!(ncached_max_small(5, &o), 20); // 14336-byte class
        assert_eq!(ncached_max_small(7, &o), 20);
        let half = ProcessOptions {
            lg_tcache_nslots_mul: -1,
            tcache_nslots_small_min: 3,
            ..o
        };
        assert_eq!(ncached_max_small(64, &half), 32);
        assert_eq!(ncached_max_small(5, &half), 4); // 5 >> 1 = 2 -> min 3 rounded up to 4
    }

    #[test]
    fn flush_orders_match_jemalloc_loops() {
        let items = vec![it(1, 10), it(2, 20), it(1, 11), it(3, 30), it(2, 21)];
        // 5.3.0: arena 1's objects, then arena 2's, then 3's, each in order.
        let stable = flush_order(items.clone(), JemallocVersion::V5_3_0, true);
        assert_eq!(
            stable,
            vec![it(1, 10), it(1, 11), it(2, 20), it(2, 21), it(3, 30)]
        );
        // 5.3.1 small: swapping 11 forward moves 20 to 11's place:
        // [10,11 | 30? ...] worked by hand: start=1; i=2 (arena 1) swaps 1<->2 ->
        // [10,11,20,30,21]; then arena 2 from index 2: i=4 swaps 3<->4 -> [.., 20,21,30].
        let swapped = flush_order(items, JemallocVersion::V5_3_1, true);
        assert_eq!(
            swapped,
            vec![it(1, 10), it(1, 11), it(2, 20), it(2, 21), it(3, 30)]
        );
        let items = vec![it(1, 1), it(2, 2), it(3, 3), it(1, 4)];
        // By hand: start=1, i=3 swaps 1<->3 -> [1,4,3,2]; then arena 3, then 2.
        assert_eq!(
            flush_order(items.clone(), JemallocVersion::V5_3_1, true),
            vec![it(1, 1), it(1, 4), it(3, 3), it(2, 2)]
        );
        assert_eq!(
            flush_order(items, JemallocVersion::V5_3_0, true),
            vec![it(1, 1), it(1, 4), it(2, 2), it(3, 3)]
        );
    }
}
