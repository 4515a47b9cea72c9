//! The extent sets (`eset.c`): a pairing heap per page-size class, the non-empty classes'
//! bitmap, the least-recently-inserted list, and first fit.

use super::{Extents, Pac, State};
use crate::sim::ph::{Heap, Nodes, NIL};

/// jemalloc's `ESET_ENUMERATE_MAX_NUM`: nodes a 5.3.1 first fit looks at one class below.
const ENUMERATE_MAX: usize = 32;

/// One extent set (`eset_t`): a pairing heap per page-size class and a bitmap of the
/// non-empty ones.
pub(super) struct Eset {
    heaps: Vec<Heap>,
    bitmap: Vec<u64>,
    pub(super) lru_head: u32,
    lru_tail: u32,
    /// Bytes of the extents in the set (`ecache_npages_get` x page).
    pub(super) bytes: u64,
}

impl Eset {
    pub(super) fn new(nclasses: usize) -> Self {
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

impl Pac {
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

    pub(super) fn eset_ref(&self, state: State) -> &Eset {
        match state {
            State::Dirty => &self.dirty,
            State::Muzzy => &self.muzzy,
            _ => &self.retained,
        }
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

    pub(super) fn eset_insert(&mut self, state: State, id: u32) {
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

    pub(super) fn eset_remove(&mut self, state: State, id: u32) {
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
    pub(super) fn first_fit(&mut self, state: State, size: u64, lg_max_fit: u32) -> u32 {
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
        // The set, the records and the size classes borrowed apart once, not per class.
        let (psz, ext) = (&self.psz, &mut self.ext);
        let eset = match state {
            State::Dirty => &mut self.dirty,
            State::Muzzy => &mut self.muzzy,
            _ => &mut self.retained,
        };
        let mut i = eset.next_nonempty(pind);
        while i <= npsizes {
            if psz.pind2sz(i) >> lg_max_fit > size {
                break;
            }
            let root = eset.heaps[i].root;
            if ret == NIL || ext.key(root) < ret_key {
                ret = eset.heaps[i].first(ext);
                ret_key = ext.key(ret);
            }
            if i == npsizes {
                break;
            }
            i = eset.next_nonempty(i + 1);
        }
        ret
    }
}
