//! Recording freed extents into a set with jemalloc's merges: eager for large dirty
//! extents (capped), delayed while decaying, full into the muzzy and retained sets.

use super::{Pac, State};
use crate::sim::ph::NIL;

impl Pac {
    /// `extent_record` into the dirty set: large extents merge eagerly with dirty neighbours
    /// (one merge per pass, forward first: delayed coalescing), small ones not at all.
    pub(super) fn record_dirty(&mut self, mut id: u32) {
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

    /// `extent_try_delayed_coalesce` for a dirty extent just taken off the set: one merge
    /// with a dirty neighbour (forward first), the result back into the set. False when no
    /// neighbour merges (the extent stays out of the set).
    pub(super) fn coalesce_once(&mut self, id: u32) -> bool {
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
    pub(super) fn absorb_next(&mut self, state: State, id: u32, room: u64) -> bool {
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
    pub(super) fn absorb_prev(&mut self, state: State, id: u32, room: u64) -> Option<u32> {
        let prev = self.ext.get(id).map_prev;
        if prev == NIL || self.ext.get(prev).state != state || self.ext.get(prev).size > room {
            return None;
        }
        self.eset_remove(state, prev);
        self.merge(prev, id);
        Some(prev)
    }

    pub(super) fn record_retained(&mut self, id: u32) {
        self.record_coalesced(State::Retained, id);
    }

    /// `extent_record` into the retained or muzzy set (both coalesce eagerly): merges with
    /// neighbours in the same set until none.
    pub(super) fn record_coalesced(&mut self, state: State, mut id: u32) {
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
