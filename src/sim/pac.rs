//! The page allocator (jemalloc's PAC: `pac.c`, `extent.c`, `eset.c`): extents in mappings,
//! the dirty and retained extent sets with their first fit, growth, splitting and merging.
//!
//! Extents are kept in one slab of records; each mapping's extents form an address-ordered
//! list (they tile the mapping), so neighbours are found in O(1). Keys are
//! (serial number, offset): a serial number names one mapping (`extent_sn_next` grows only
//! when a mapping is made, splits keep it, merges never cross mappings), so offsets compare
//! exactly as jemalloc's addresses do.

use super::memo::IndexMemo;
use super::ph::{Heap, Link, Nodes, NIL};
use crate::sizeclass::PageSizeClasses;

/// jemalloc's `ESET_ENUMERATE_MAX_NUM`: nodes a 5.3.1 first fit looks at one class below.
const ENUMERATE_MAX: usize = 32;

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

/// One extent set (`eset_t`): a pairing heap per page-size class and a bitmap of the
/// non-empty ones.
struct Eset {
    heaps: Vec<Heap>,
    bitmap: Vec<u64>,
    lru_head: u32,
    lru_tail: u32,
    /// Bytes of the extents in the set (`ecache_npages_get` x page).
    bytes: u64,
}

impl Eset {
    fn new(nclasses: usize) -> Self {
        Eset {
            heaps: vec![Heap::default(); nclasses],
            bitmap: vec![0; nclasses.div_ceil(64)],
            lru_head: NIL,
            lru_tail: NIL,
            bytes: 0,
        }
    }

    /// `fb_ffs`: the first non-empty class at or above `from`, or `heaps.len()`.
    fn next_nonempty(&self, from: usize) -> usize {
        let mut word = from / 64;
        if word >= self.bitmap.len() {
            return self.heaps.len();
        }
        let mut bits = self.bitmap[word] & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                return (word * 64 + bits.trailing_zeros() as usize).min(self.heaps.len());
            }
            word += 1;
            if word >= self.bitmap.len() {
                return self.heaps.len();
            }
            bits = self.bitmap[word];
        }
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
            psz,
        }
    }

    /// `psz.extent_index(size)`, memoised.
    #[inline]
    fn extent_index(&mut self, size: u64) -> usize {
        self.memo.get(&self.psz, size, false)
    }

    /// `psz.request_index(size)`, memoised.
    #[inline]
    fn request_index(&mut self, size: u64) -> usize {
        self.memo.get(&self.psz, size, true)
    }

    fn eset(&mut self, state: State) -> &mut Eset {
        match state {
            State::Dirty => &mut self.dirty,
            State::Muzzy => &mut self.muzzy,
            _ => &mut self.retained,
        }
    }

    fn eset_ref(&self, state: State) -> &Eset {
        match state {
            State::Dirty => &self.dirty,
            State::Muzzy => &self.muzzy,
            _ => &self.retained,
        }
    }

    /// Bytes in the dirty, muzzy and retained sets.
    pub fn set_bytes(&self) -> (u64, u64, u64) {
        (self.dirty.bytes, self.muzzy.bytes, self.retained.bytes)
    }

    /// The set for `state` with the extents, borrowed apart (the set's heaps link extents).
    #[inline]
    fn eset_with_extents(&mut self, state: State) -> (&mut Eset, &mut Extents) {
        let eset = match state {
            State::Dirty => &mut self.dirty,
            State::Muzzy => &mut self.muzzy,
            _ => &mut self.retained,
        };
        (eset, &mut self.ext)
    }

    fn eset_insert(&mut self, state: State, id: u32) {
        self.ext.get_mut(id).state = state;
        let size = self.ext.get(id).size;
        let pind = self.extent_index(size);
        let (eset, ext) = self.eset_with_extents(state);
        eset.bytes += size;
        if eset.heaps[pind].is_empty() {
            eset.bitmap[pind / 64] |= 1 << (pind % 64);
        }
        eset.heaps[pind].insert(ext, id);
        // edata_list_inactive_append(&eset->lru, edata)
        let tail = eset.lru_tail;
        eset.lru_tail = id;
        if tail == NIL {
            eset.lru_head = id;
        } else {
            ext.get_mut(tail).lru_next = id;
        }
        let e = ext.get_mut(id);
        e.lru_prev = tail;
        e.lru_next = NIL;
    }

    fn eset_remove(&mut self, state: State, id: u32) {
        let size = self.ext.get(id).size;
        let pind = self.extent_index(size);
        let (eset, ext) = self.eset_with_extents(state);
        eset.bytes -= size;
        let was_min = eset.heaps[pind].root == id;
        eset.heaps[pind].remove(ext, id);
        let (prev, next) = (ext.get(id).lru_prev, ext.get(id).lru_next);
        if prev == NIL {
            eset.lru_head = next;
        } else {
            ext.get_mut(prev).lru_next = next;
        }
        if next == NIL {
            eset.lru_tail = prev;
        } else {
            ext.get_mut(next).lru_prev = prev;
        }
        if eset.heaps[pind].is_empty() {
            eset.bitmap[pind / 64] &= !(1 << (pind % 64));
        } else if was_min {
            // eset_remove refreshes its cached minimum with edata_heap_first.
            eset.heaps[pind].first(ext);
        }
        ext.get_mut(id).state = State::Active;
    }

    /// `eset_first_fit` (alignment of one page, not exact-only).
    fn first_fit(&mut self, state: State, size: u64, lg_max_fit: u32) -> u32 {
        let pind = self.request_index(size);
        let mut ret = NIL;
        let mut ret_key = (0, 0);
        if self.rules.enumerate_below {
            let pind_prev = self.extent_index(size);
            if pind != pind_prev {
                let ext = &self.ext;
                let eset = match state {
                    State::Dirty => &self.dirty,
                    State::Muzzy => &self.muzzy,
                    _ => &self.retained,
                };
                eset.heaps[pind_prev].enumerate(ext, ENUMERATE_MAX, |node| {
                    if ext.get(node).size >= size {
                        let key = ext.key(node);
                        if ret == NIL || key < ret_key {
                            ret = node;
                            ret_key = key;
                        }
                    }
                });
            }
        }
        let lg_max_fit = lg_max_fit.min(63);
        let npsizes = self.psz.npsizes();
        let mut i = self.eset(state).next_nonempty(pind);
        while i <= npsizes {
            if self.psz.pind2sz(i) >> lg_max_fit > size {
                break;
            }
            let root = self.eset(state).heaps[i].root;
            if ret == NIL || self.ext.key(root) < ret_key {
                let eset = match state {
                    State::Dirty => &mut self.dirty,
                    State::Muzzy => &mut self.muzzy,
                    _ => &mut self.retained,
                };
                ret = eset.heaps[i].first(&mut self.ext);
                ret_key = self.ext.key(ret);
            }
            if i == npsizes {
                break;
            }
            i = self.eset(state).next_nonempty(i + 1);
        }
        ret
    }

    /// Splits `id` at `size_a`; returns the tail (same serial number and state).
    fn split(&mut self, id: u32, size_a: u64) -> u32 {
        let e = *self.ext.get(id);
        let trail = self.ext.new_extent(Extent {
            sn: e.sn,
            offset: e.offset + size_a,
            size: e.size - size_a,
            state: e.state,
            link: Link::default(),
            map_prev: id,
            map_next: e.map_next,
            lru_prev: NIL,
            lru_next: NIL,
            nfree: 0,
            bin: 0,
            slab: false,
        });
        if e.map_next != NIL {
            self.ext.get_mut(e.map_next).map_prev = trail;
        }
        let head = self.ext.get_mut(id);
        head.size = size_a;
        head.map_next = trail;
        trail
    }

    /// Merges `b` (the next extent in the mapping) into `a`.
    fn merge(&mut self, a: u32, b: u32) {
        let eb = *self.ext.get(b);
        debug_assert_eq!(self.ext.get(a).map_next, b);
        let ea = self.ext.get_mut(a);
        ea.size += eb.size;
        ea.map_next = eb.map_next;
        if eb.map_next != NIL {
            self.ext.get_mut(eb.map_next).map_prev = a;
        }
        self.ext.release(b);
    }

    /// `extent_recycle` from the dirty or retained set, no expansion.
    fn recycle(&mut self, state: State, size: u64) -> Option<u32> {
        let lg_max_fit = if state == State::Dirty {
            self.lg_max_active_fit
        } else {
            64
        };
        let id = self.first_fit(state, size, lg_max_fit);
        if id == NIL {
            return None;
        }
        self.eset_remove(state, id);
        if self.ext.get(id).size > size {
            let trail = self.split(id, size);
            self.eset_insert(state, trail);
        }
        Some(id)
    }

    /// `extent_grow_retained`: maps the next size of the growth series that fits.
    fn grow(&mut self, size: u64) -> Result<u32, OutOfAddressSpace> {
        let mut skip = 0;
        let mut alloc_size = self.psz.pind2sz(self.exp_grow_next);
        while alloc_size < size {
            skip += 1;
            if self.exp_grow_next + skip >= self.exp_grow_limit {
                return Err(OutOfAddressSpace);
            }
            alloc_size = self.psz.pind2sz(self.exp_grow_next + skip);
        }
        // x86-64 user address space (128 TiB): a trace asking for more cannot run.
        let mapped: u64 = self.mapped_total;
        if mapped + alloc_size > 1 << 47 {
            return Err(OutOfAddressSpace);
        }
        self.mapped_total += alloc_size;
        let sn = self.mappings.len() as u32;
        self.mappings.push(alloc_size);
        let id = self.ext.new_extent(Extent {
            sn,
            offset: 0,
            size: alloc_size,
            state: State::Active,
            link: Link::default(),
            map_prev: NIL,
            map_next: NIL,
            lru_prev: NIL,
            lru_next: NIL,
            nfree: 0,
            bin: 0,
            slab: false,
        });
        if alloc_size > size {
            let trail = self.split(id, size);
            self.record_retained(trail);
        }
        self.exp_grow_next = (self.exp_grow_next + skip + 1).min(self.exp_grow_limit);
        Ok(id)
    }

    /// `extent_alloc_retained`: recycle a retained extent, else grow.
    fn alloc_retained(&mut self, size: u64) -> Result<u32, OutOfAddressSpace> {
        match self.recycle(State::Retained, size) {
            Some(id) => Ok(id),
            None => self.grow(size),
        }
    }

    /// `sz_s2u_compute_using_delta`.
    fn s2u_delta(&self, size: u64) -> u64 {
        let x = 63 - ((size << 1) - 1).leading_zeros();
        let lg_delta = if x < self.lg_ngroup + self.lg_quantum + 1 {
            self.lg_quantum
        } else {
            x - self.lg_ngroup - 1
        };
        let mask = (1u64 << lg_delta) - 1;
        (size + mask) & !mask
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
        if self.purge_immediately {
            // arena_decay_dirty(.., all = true): the dirty set only, fully to retained.
            let all = self.dirty.bytes;
            self.decay_to_limit(State::Dirty, 0, all, false);
        }
    }

    /// `pac_expand_impl`: grows `id` in place by taking the front of the next extent if it
    /// is dirty, muzzy or retained (`ecache_alloc` on each set in turn finds the neighbour
    /// only in the set it is in) and large enough.
    pub fn expand(&mut self, id: u32, new_size: u64) -> bool {
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
    pub fn shrink(&mut self, id: u32, new_size: u64) {
        let trail = self.split(id, new_size);
        self.ext.get_mut(trail).state = State::Active;
        self.record_dirty(trail);
        if self.purge_immediately {
            // arena_decay_dirty(.., all = true): the dirty set only, fully to retained.
            let all = self.dirty.bytes;
            self.decay_to_limit(State::Dirty, 0, all, false);
        }
    }

    /// `extent_record` into the dirty set: large extents merge eagerly with dirty neighbours
    /// (one merge per pass, forward first: delayed coalescing), small ones not at all.
    fn record_dirty(&mut self, mut id: u32) {
        let size = self.ext.get(id).size;
        if size >= self.large_minclass {
            let max_size = if !self.rules.cap_dirty_merge {
                self.large_maxclass
            } else if (self.large_maxclass >> self.lg_max_active_fit) > size {
                size << self.lg_max_active_fit
            } else {
                self.large_maxclass
            };
            loop {
                let room = max_size.saturating_sub(self.ext.get(id).size);
                if self.absorb_next(State::Dirty, id, room) {
                    continue;
                }
                if let Some(prev) = self.absorb_prev(State::Dirty, id, room) {
                    id = prev;
                    continue;
                }
                break;
            }
        }
        self.eset_insert(State::Dirty, id);
    }

    /// `pac_decay_all` with full decay (a thread left its arena with no threads:
    /// `tcache_destroy` / `arena_migrate` purge all even with decay off; also dirty decay 0
    /// after each dalloc): every dirty extent to retained, then every muzzy one.
    pub fn purge_all(&mut self) {
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
    pub fn decay_to_limit(&mut self, from: State, limit: u64, max: u64, to_muzzy: bool) {
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

    /// `extent_try_delayed_coalesce` for a dirty extent just taken off the set: one merge
    /// with a dirty neighbour (forward first), the result back into the set. False when no
    /// neighbour merges (the extent stays out of the set).
    fn coalesce_once(&mut self, id: u32) -> bool {
        let room = self.large_maxclass.saturating_sub(self.ext.get(id).size);
        let merged = if self.absorb_next(State::Dirty, id, room) {
            id
        } else if let Some(prev) = self.absorb_prev(State::Dirty, id, room) {
            prev
        } else {
            return false;
        };
        self.eset_insert(State::Dirty, merged);
        true
    }

    /// Merges `id` with the extent after it in address order when that one is in `state`'s
    /// set and no larger than `room` (taking it off the set). True when merged (`id` grew).
    fn absorb_next(&mut self, state: State, id: u32, room: u64) -> bool {
        let next = self.ext.get(id).map_next;
        if next == NIL || self.ext.get(next).state != state || self.ext.get(next).size > room {
            return false;
        }
        self.eset_remove(state, next);
        self.merge(id, next);
        true
    }

    /// [`Self::absorb_next`] for the extent before `id`: the merged extent keeps that
    /// one's id, which is returned.
    fn absorb_prev(&mut self, state: State, id: u32, room: u64) -> Option<u32> {
        let prev = self.ext.get(id).map_prev;
        if prev == NIL || self.ext.get(prev).state != state || self.ext.get(prev).size > room {
            return None;
        }
        self.eset_remove(state, prev);
        self.merge(prev, id);
        Some(prev)
    }

    fn record_retained(&mut self, id: u32) {
        self.record_coalesced(State::Retained, id);
    }

    /// `extent_record` into the retained or muzzy set (both coalesce eagerly): merges with
    /// neighbours in the same set until none.
    fn record_coalesced(&mut self, state: State, mut id: u32) {
        loop {
            let room = self.large_maxclass.saturating_sub(self.ext.get(id).size);
            let grew = self.absorb_next(state, id, room);
            let room = self.large_maxclass.saturating_sub(self.ext.get(id).size);
            let merged_prev = self.absorb_prev(state, id, room);
            if let Some(prev) = merged_prev {
                id = prev;
            }
            if !grew && merged_prev.is_none() {
                break;
            }
        }
        self.eset_insert(state, id);
    }
}
