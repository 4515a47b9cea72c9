//! Object-id bookkeeping shared by the writer, the reader and the importers.

use super::ObjectId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Hands out ids lowest-free-first: freed ids wait in a min-heap, fresh ids come after.
#[derive(Debug, Default)]
pub struct IdPool {
    freed: BinaryHeap<Reverse<ObjectId>>,
    next_fresh: u64,
}

impl IdPool {
    pub fn new() -> Self {
        Self::default()
    }

    /// The lowest id not in use; `None` once all 2^32 ids are live.
    pub fn take(&mut self) -> Option<ObjectId> {
        if let Some(Reverse(id)) = self.freed.pop() {
            return Some(id);
        }
        let id = ObjectId::try_from(self.next_fresh).ok()?;
        self.next_fresh += 1;
        Some(id)
    }

    /// Returns a live id to the pool.
    pub fn give_back(&mut self, id: ObjectId) {
        self.freed.push(Reverse(id));
    }
}

/// Which ids are live, as a bitset grown on demand.
#[derive(Debug, Default, Clone)]
pub struct LiveSet {
    words: Vec<u64>,
}

impl LiveSet {
    /// A set with room for ids below `ids` without growing.
    pub fn with_capacity(ids: usize) -> Self {
        LiveSet {
            words: vec![0; ids.div_ceil(64)],
        }
    }

    #[inline(always)]
    pub fn contains(&self, id: ObjectId) -> bool {
        self.words
            .get((id >> 6) as usize)
            .is_some_and(|w| w >> (id & 63) & 1 == 1)
    }

    /// Marks `id` live; false if it already was.
    #[inline(always)]
    pub fn insert(&mut self, id: ObjectId) -> bool {
        let word = (id >> 6) as usize;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let bit = 1u64 << (id & 63);
        let was = self.words[word] & bit != 0;
        self.words[word] |= bit;
        !was
    }

    /// Marks `id` dead; false if it was not live.
    #[inline(always)]
    pub fn remove(&mut self, id: ObjectId) -> bool {
        match self.words.get_mut((id >> 6) as usize) {
            Some(w) if *w >> (id & 63) & 1 == 1 => {
                *w &= !(1u64 << (id & 63));
                true
            }
            _ => false,
        }
    }
}

/// Hands out ids lowest-free-first as [`IdPool`] does, from a hierarchical bitmap of the
/// freed ids instead of a heap: the address importer takes and gives back an id per call,
/// and a heap of a million freed ids (a program tearing down its data) missed the cache on
/// each of its ~20 levels, where the bitmap touches one word per level (4 levels per 16 M
/// ids, the lower ones a few hundred KiB).
#[derive(Debug, Default)]
pub(crate) struct FreeIds {
    /// `levels[0]`: a bit per id, set while the id is freed (waiting to be handed out again);
    /// `levels[k + 1]`: a bit per word of `levels[k]` that is not zero. The last level has
    /// one word.
    levels: Vec<Vec<u64>>,
    next_fresh: u64,
}

impl FreeIds {
    /// The lowest id not in use; `None` once all 2^32 ids are live.
    pub fn take(&mut self) -> Option<ObjectId> {
        if self.levels.last().is_none_or(|top| top[0] == 0) {
            let id = ObjectId::try_from(self.next_fresh).ok()?;
            self.next_fresh += 1;
            return Some(id);
        }
        // Down the lowest set bits: the lowest freed id.
        let mut i = 0usize;
        for level in self.levels.iter().rev() {
            i = i * 64 + level[i].trailing_zeros() as usize;
        }
        let id = i;
        for level in &mut self.levels {
            let w = &mut level[i / 64];
            *w &= !(1u64 << (i % 64));
            if *w != 0 {
                break;
            }
            i /= 64;
        }
        Some(id as ObjectId)
    }

    /// Every id in use, lowest first.
    pub fn taken(&self) -> Vec<ObjectId> {
        let freed = self.levels.first().map_or(&[][..], |l| &l[..]);
        (0..self.next_fresh)
            .filter(|&i| {
                freed
                    .get(i as usize / 64)
                    .is_none_or(|w| w >> (i % 64) & 1 == 0)
            })
            .map(|i| i as ObjectId)
            .collect()
    }

    /// Returns a live id to the pool.
    #[inline]
    pub fn give_back(&mut self, id: ObjectId) {
        if self
            .levels
            .first()
            .is_none_or(|l| id as usize / 64 >= l.len())
        {
            self.make_room(id as usize);
        }
        let mut i = id as usize;
        for level in &mut self.levels {
            let w = &mut level[i / 64];
            let was = *w;
            *w |= 1u64 << (i % 64);
            if was != 0 {
                break;
            }
            i /= 64;
        }
    }

    /// Grows the levels to hold bit `id` (new words are zero; a new top level gets the bits
    /// of the words below it that are set). Out of line: it is rare, and inlined it made
    /// every give-back save and restore registers for it.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, id: usize) {
        if self.levels.first().is_some_and(|l| id / 64 < l.len()) {
            return;
        }
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        let mut words = id / 64 + 1;
        let mut k = 0;
        loop {
            if self.levels[k].len() < words {
                self.levels[k].resize(words, 0);
            }
            let len = self.levels[k].len();
            // Lengths only grow: a level of one word has none above it.
            if len == 1 {
                return;
            }
            words = len.div_ceil(64);
            if k + 1 == self.levels.len() {
                let mut top = vec![0u64; words];
                for (j, &w) in self.levels[k].iter().enumerate() {
                    if w != 0 {
                        top[j / 64] |= 1 << (j % 64);
                    }
                }
                self.levels.push(top);
            }
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same ids as [`IdPool`] (the heap it has always been) for a long mixed run of takes
    /// and give-backs, after the bitmap has grown past 64^3 ids.
    #[test]
    fn free_ids_hand_out_what_the_id_pool_does() {
        let (mut pool, mut free) = (IdPool::new(), FreeIds::default());
        let mut live: Vec<ObjectId> = Vec::new();
        // Past 64^3 ids first: the bitmap grows to four levels.
        for _ in 0..300_000 {
            let a = pool.take().unwrap();
            assert_eq!(free.take(), Some(a));
            live.push(a);
        }
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for step in 0..600_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Phases: mostly growing, then mostly shrinking.
            let grow = if (step / 150_000) % 2 == 0 { 8 } else { 3 };
            if live.is_empty() || x % 10 < grow {
                let a = pool.take().unwrap();
                assert_eq!(free.take(), Some(a), "step {step}");
                live.push(a);
            } else {
                let i = (x >> 20) as usize % live.len();
                let id = live.swap_remove(i);
                pool.give_back(id);
                free.give_back(id);
            }
        }
        // Emptied the same way, lowest first.
        for id in live.drain(..) {
            pool.give_back(id);
            free.give_back(id);
        }
        for _ in 0..1000 {
            assert_eq!(free.take(), pool.take());
        }
    }
}
