//! The page allocator (jemalloc's PAC: `pac.c`, `extent.c`, `eset.c`): extents in mappings,
//! the dirty and retained extent sets with their first fit, growth, splitting and merging.
//!
//! Extents are kept in one slab of records; each mapping's extents form an address-ordered
//! list (they tile the mapping), so neighbours are found in O(1). Keys are
//! (serial number, offset): a serial number names one mapping (`extent_sn_next` grows only
//! when a mapping is made, splits keep it, merges never cross mappings), so offsets compare
//! exactly as jemalloc's addresses do.
//!
//! The extent sets are in `eset.rs`, splitting, merging and growth in `grow.rs`, recording
//! freed extents with their merges in `coalesce.rs`.

mod coalesce;
mod eset;
mod grow;

use super::memo::IndexMemo;
use super::ph::{Link, Nodes, NIL};
use crate::sizeclass::PageSizeClasses;
use eset::Eset;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Active,
    Dirty,
    /// Purged lazily (`MADV_FREE`): reusable, not counted in `stats.resident`.
    Muzzy,
    Retained,
    /// A free record slot.
    Unused,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Extent {
    pub sn: u32,
    pub offset: u64,
    pub size: u64,
    pub state: State,
    link: Link,
    map_prev: u32,
    map_next: u32,
    /// The set's least-recently-inserted list (`eset->lru`), for purging in jemalloc's order.
    lru_prev: u32,
    lru_next: u32,
    /// Slab data: free regions and bin index (slabs only).
    pub nfree: u32,
    pub bin: u32,
    /// Whether the (active) extent is a slab rather than a large allocation.
    pub slab: bool,
}

/// The extent records; a free list recycles slots so memory follows live extents.
#[derive(Default)]
pub(crate) struct Extents {
    pub v: Vec<Extent>,
    free: Vec<u32>,
}

impl Nodes for Extents {
    #[inline]
    fn link(&self, node: u32) -> Link {
        self.v[node as usize].link
    }
    #[inline]
    fn link_mut(&mut self, node: u32) -> &mut Link {
        &mut self.v[node as usize].link
    }
    #[inline]
    fn key(&self, node: u32) -> (u64, u64) {
        let e = &self.v[node as usize];
        (u64::from(e.sn), e.offset)
    }
}

impl Extents {
    fn new_extent(&mut self, e: Extent) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.v[i as usize] = e;
                i
            }
            None => {
                self.v.push(e);
                (self.v.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, id: u32) {
        self.v[id as usize].state = State::Unused;
        self.free.push(id);
    }

    #[inline]
    pub fn get(&self, id: u32) -> &Extent {
        &self.v[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Extent {
        &mut self.v[id as usize]
    }
}

/// Which release's page-allocator rules apply.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rules {
    /// 5.3.1 with `disable_large_size_classes`: a miss in the dirty set maps a batch
    /// (`pac_alloc_retained_batched_size`) and files the tail as dirty.
    pub batch_tail: bool,
    /// 5.3.1 with `disable_large_size_classes`: first fit also enumerates one class below.
    pub enumerate_below: bool,
    /// 5.3.1: eager merging of a freed large extent stops at `size << lg_max_active_fit`.
    pub cap_dirty_merge: bool,
    /// The first mapping's size (`exp_grow_init`).
    pub grow_start: u64,
}

pub(crate) struct Pac {
    pub ext: Extents,
    dirty: Eset,
    muzzy: Eset,
    retained: Eset,
    /// `pac_may_have_muzzy`: muzzy decay is not 0, so allocations look in the muzzy set.
    pub may_have_muzzy: bool,
    /// Dirty decay is 0: every dalloc is purged at once (`arena_handle_deferred_work`).
    pub purge_immediately: bool,
    /// Page-level frees so far (each reports deferred work: a background thread may wake).
    pub deferred: u64,
    psz: PageSizeClasses,
    rules: Rules,
    lg_max_active_fit: u32,
    large_minclass: u64,
    large_maxclass: u64,
    lg_quantum: u32,
    lg_ngroup: u32,
    hugepage: u64,
    exp_grow_next: usize,
    exp_grow_limit: usize,
    /// Sizes of the mappings made, by serial number.
    pub mappings: Vec<u64>,
    pub mapped_total: u64,
    /// The extent-set indices of sizes below `MEMO_PAGES` pages, filled as they are asked
    /// for (each costs a few dozen instructions of quantisation, once per size).
    memo: IndexMemo,
    /// Whether splits are logged in `split_log` (for the process model's radix tree).
    pub log_splits: bool,
    /// The boundaries splits made (the mapping's serial number, the offset in it), while
    /// `log_splits`; its reader empties it.
    pub split_log: Vec<(u32, u64)>,
}

/// Why the page allocator could not serve a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutOfAddressSpace;

impl Pac {
    pub fn new(
        psz: PageSizeClasses,
        rules: Rules,
        large_minclass: u64,
        large_maxclass: u64,
        lg_quantum: u32,
        lg_ngroup: u32,
    ) -> Self {
        let n = psz.npsizes() + 1;
        let exp_grow_next = psz.psz2ind(rules.grow_start);
        let exp_grow_limit = psz.psz2ind(large_maxclass);
        Pac {
            ext: Extents::default(),
            dirty: Eset::new(n),
            muzzy: Eset::new(n),
            retained: Eset::new(n),
            may_have_muzzy: false,
            purge_immediately: false,
            deferred: 0,
            rules,
            lg_max_active_fit: 6,
            large_minclass,
            large_maxclass,
            lg_quantum,
            lg_ngroup,
            hugepage: 2 << 20,
            exp_grow_next,
            exp_grow_limit,
            mappings: Vec::new(),
            mapped_total: 0,
            // The smallest page-size class is one page.
            memo: IndexMemo::new(psz.pind2sz(0).trailing_zeros()),
            log_splits: false,
            split_log: Vec::new(),
            psz,
        }
    }

    /// Bytes in the dirty, muzzy and retained sets.
    pub(crate) fn set_bytes(&self) -> (u64, u64, u64) {
        (self.dirty.bytes, self.muzzy.bytes, self.retained.bytes)
    }

    /// `pac_alloc_real`: an active extent of `size` bytes (dirty, then muzzy when muzzy
    /// decay is not 0, then retained or a new mapping).
    pub fn alloc(&mut self, size: u64) -> Result<u32, OutOfAddressSpace> {
        if let Some(id) = self.recycle(State::Dirty, size) {
            return Ok(id);
        }
        if self.may_have_muzzy {
            if let Some(id) = self.recycle(State::Muzzy, size) {
                return Ok(id);
            }
        }
        if self.rules.batch_tail {
            let batched = if size > self.large_maxclass {
                size
            } else {
                let huge_ceil = size.div_ceil(self.hugepage) * self.hugepage;
                self.s2u_delta(size).min(huge_ceil)
            };
            let id = self.alloc_retained(batched)?;
            if batched > size {
                let trail = self.split(id, size);
                self.record_dirty(trail);
            }
            return Ok(id);
        }
        self.alloc_retained(size)
    }

    /// `pac_dalloc_impl`: the extent goes to the dirty set; with dirty decay 0,
    /// `arena_handle_deferred_work` then purges the whole set to retained.
    pub fn dalloc(&mut self, id: u32) {
        self.record_dirty(id);
        self.deferred += 1;
        if self.purge_immediately {
            // arena_decay_dirty(.., all = true): the dirty set only, fully to retained.
            let all = self.dirty.bytes;
            self.decay_to_limit(State::Dirty, 0, all, false);
        }
    }

    /// `pac_expand_impl`: grows `id` in place by taking the front of the next extent if it
    /// is dirty, muzzy or retained (`ecache_alloc` on each set in turn finds the neighbour
    /// only in the set it is in) and large enough.
    pub(crate) fn expand(&mut self, id: u32, new_size: u64) -> bool {
        let amount = new_size - self.ext.get(id).size;
        let next = self.ext.get(id).map_next;
        if next == NIL {
            return false;
        }
        let state = self.ext.get(next).state;
        if !matches!(state, State::Dirty | State::Muzzy | State::Retained)
            || self.ext.get(next).size < amount
        {
            return false;
        }
        self.eset_remove(state, next);
        if self.ext.get(next).size > amount {
            let trail = self.split(next, amount);
            self.eset_insert(state, trail);
        }
        self.merge(id, next);
        true
    }

    /// `pac_shrink_impl`: splits off the tail and frees it as dirty.
    pub(crate) fn shrink(&mut self, id: u32, new_size: u64) {
        let trail = self.split(id, new_size);
        self.ext.get_mut(trail).state = State::Active;
        self.record_dirty(trail);
        self.deferred += 1;
        if self.purge_immediately {
            // arena_decay_dirty(.., all = true): the dirty set only, fully to retained.
            let all = self.dirty.bytes;
            self.decay_to_limit(State::Dirty, 0, all, false);
        }
    }

    /// `pac_decay_all` with full decay (a thread left its arena with no threads:
    /// `tcache_destroy` / `arena_migrate` purge all even with decay off; also dirty decay 0
    /// after each dalloc): every dirty extent to retained, then every muzzy one.
    pub(crate) fn purge_all(&mut self) {
        let all = self.dirty.bytes;
        self.decay_to_limit(State::Dirty, 0, all, false);
        let all = self.muzzy.bytes;
        self.decay_to_limit(State::Muzzy, 0, all, false);
    }

    /// `pac_decay_to_limit`: stashes extents of the `from` set (dirty or muzzy), least
    /// recently inserted first, while the set holds more than `limit` bytes and fewer than
    /// `max` bytes are stashed (`pac_stash_decayed` / `ecache_evict`: the dirty set coalesces
    /// lazily, one merge, forward first, the result going back to the set's tail and the scan
    /// starting over); then records them in stash order (`pac_decay_stashed`): into the muzzy
    /// set when `to_muzzy` (dirty decay with muzzy decay not 0), else as retained.
    pub(crate) fn decay_to_limit(&mut self, from: State, limit: u64, max: u64, to_muzzy: bool) {
        let mut stash = Vec::new();
        let mut stashed = 0;
        let delay_coalesce = from == State::Dirty;
        while stashed < max {
            let id = self.eset_ref(from).lru_head;
            if id == NIL || self.eset_ref(from).bytes <= limit {
                break;
            }
            self.eset_remove(from, id);
            if delay_coalesce && self.coalesce_once(id) {
                continue;
            }
            stashed += self.ext.get(id).size;
            stash.push(id);
        }
        for id in stash {
            if to_muzzy {
                self.record_coalesced(State::Muzzy, id);
            } else {
                self.record_coalesced(State::Retained, id);
            }
        }
    }
}
