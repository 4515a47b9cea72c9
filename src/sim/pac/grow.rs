//! Splitting and merging extents, recycling them from a set, and growing the address space
//! (`extent.c`).

use super::{Extent, OutOfAddressSpace, Pac, State};
use crate::sim::ph::{Link, NIL};

impl Pac {
    /// Splits `id` at `size_a`; returns the tail (same serial number and state).
    pub(super) fn split(&mut self, id: u32, size_a: u64) -> u32 {
        let e = *self.ext.get(id);
        if self.log_splits {
            self.split_log.push((e.sn, e.offset + size_a));
        }
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
    pub(super) fn merge(&mut self, a: u32, b: u32) {
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
    pub(super) fn recycle(&mut self, state: State, size: u64) -> Option<u32> {
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
    pub(super) fn grow(&mut self, size: u64) -> Result<u32, OutOfAddressSpace> {
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
    pub(super) fn alloc_retained(&mut self, size: u64) -> Result<u32, OutOfAddressSpace> {
        match self.recycle(State::Retained, size) {
            Some(id) => Ok(id),
            None => self.grow(size),
        }
    }

    /// `sz_s2u_compute_using_delta`.
    pub(super) fn s2u_delta(&self, size: u64) -> u64 {
        let x = 63 - ((size << 1) - 1).leading_zeros();
        let lg_delta = if x < self.lg_ngroup + self.lg_quantum + 1 {
            self.lg_quantum
        } else {
            x - self.lg_ngroup - 1
        };
        let mask = (1u64 << lg_delta) - 1;
        (size + mask) & !mask
    }
}
