//! The object table (live id -> slab or extent, request) and the event counts: everything of
//! an event but its slab or extent. The fast paths are in `ArenaModel::apply`.

use super::super::ph::NIL;
use super::super::SimError;
use super::{ArenaModel, Object, DEAD};
use crate::trace::Event;

impl ArenaModel {
    /// Events applied so far. Kept as the three counts the events move rather than one
    /// counter: a common event then updates one count (an alloc's or a free's) instead of
    /// the event counter and the live-object count.
    #[inline]
    pub(super) fn events(&self) -> u64 {
        self.allocs + self.frees + self.others
    }

    /// Counts the current event as failed and names it in `error`'s error.
    #[cold]
    #[inline(never)]
    pub(super) fn failed(&mut self, error: impl FnOnce(u64) -> SimError) -> SimError {
        self.others += 1;
        error(self.events())
    }

    /// Large or aligned allocations and reallocs, counted.
    #[inline(never)]
    pub(super) fn apply_other(&mut self, event: Event) -> Result<(), SimError> {
        let result = self.apply_other_uncounted(event, self.events() + 1);
        match (event, &result) {
            (Event::Alloc { .. }, Ok(())) => self.allocs += 1,
            _ => self.others += 1,
        }
        result
    }

    fn apply_other_uncounted(&mut self, event: Event, n: u64) -> Result<(), SimError> {
        match event {
            Event::Alloc { id, size, align } => {
                if self.live(id).is_some() {
                    return Err(SimError::AllocOfLiveId { event: n, id });
                }
                let usize = self.usable(n, size, align)?;
                let extent = self.place(n, usize)?;
                if align > 1 {
                    self.aligns.insert(id, align);
                }
                self.set(id, extent, size);
                self.stats.requested_bytes += size;
            }
            Event::Free { .. } => unreachable!("frees take `apply` or `free_other`"),
            Event::Realloc { id, size } => {
                let obj = self
                    .live(id)
                    .ok_or(SimError::ReallocOfUnknownId { event: n, id })?;
                let align = self.aligns.get(&id).copied().unwrap_or(0);
                let usize = self.usable(n, size, align)?;
                let request = self.request_of(id, obj);
                let extent = self.realloc(n, obj.extent, usize)?;
                self.set(id, extent, size);
                self.stats.requested_bytes = self.stats.requested_bytes - request + size;
            }
        }
        Ok(())
    }

    /// A free that is not of a small object with its request in the table: of a large or
    /// an aligned object, of a request of 4 GiB or more, or of an id that is not live.
    #[inline(never)]
    pub(super) fn free_other(&mut self, id: u32) -> Result<(), SimError> {
        let Some(obj) = self.live(id) else {
            return Err(self.failed(|event| SimError::FreeOfDeadId { event, id }));
        };
        self.objects[id as usize] = DEAD;
        let request = if obj.request == u32::MAX {
            self.forget_side_tables(id, obj)
        } else {
            u64::from(obj.request)
        };
        self.remove(obj.extent);
        self.frees += 1;
        self.stats.requested_bytes -= request;
        Ok(())
    }

    /// A freed object's request (from the side table: it is 4 GiB or more, or the object is
    /// aligned); its alignment, if any, is forgotten.
    fn forget_side_tables(&mut self, id: u32, obj: Object) -> u64 {
        self.aligns.remove(&id);
        let request = self.request_of(id, obj);
        self.big_requests.remove(&id);
        request
    }

    /// Makes room for id `i` in the object table (doubling, so a trace of growing ids costs
    /// amortised O(1)).
    #[cold]
    #[inline(never)]
    pub(super) fn grow_objects(&mut self, i: usize) {
        let len = (i + 1).max(self.objects.len() * 2).max(1024);
        self.objects.resize(len, DEAD);
    }

    #[inline]
    fn live(&self, id: u32) -> Option<Object> {
        self.objects
            .get(id as usize)
            .copied()
            .filter(|o| o.extent != NIL)
    }

    /// A live object's request. Read only: a realloc that fails afterwards must leave the
    /// side table as it was ([`ArenaModel::set`] and a free update it).
    fn request_of(&self, id: u32, obj: Object) -> u64 {
        if obj.request == u32::MAX {
            self.big_requests
                .get(&id)
                .copied()
                .unwrap_or(u64::from(u32::MAX))
        } else {
            u64::from(obj.request)
        }
    }

    /// Records a live object. Its request goes to the side table when it does not fit the
    /// short field, and when the object is aligned: the sentinel then tells a free to forget
    /// the alignment too, so that a free checks one value.
    fn set(&mut self, id: u32, extent: u32, request: u64) {
        let i = id as usize;
        if i >= self.objects.len() {
            self.grow_objects(i);
        }
        let short = if request >= u64::from(u32::MAX)
            || (!self.aligns.is_empty() && self.aligns.contains_key(&id))
        {
            self.big_requests.insert(id, request);
            u32::MAX
        } else {
            if !self.big_requests.is_empty() {
                // A realloc from a side-table request to a short one.
                self.big_requests.remove(&id);
            }
            request as u32
        };
        // What the free's fast path relies on (see `Object`): an unaligned request is small
        // exactly when its usable size is, and a slab holds only small usable sizes.
        debug_assert!(
            short == u32::MAX
                || (u64::from(short) <= self.small_max) == self.pac.ext.get(extent).slab
        );
        self.objects[i] = Object {
            extent,
            request: short,
        };
    }
}
