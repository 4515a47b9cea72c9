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
