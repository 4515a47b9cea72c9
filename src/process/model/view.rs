//! Read-only views of the process model for observers that attribute its memory
//! (`crate::blame`): every live object with the arena and extent that hold it, every object
//! held in a thread cache, every cache's own block.

use super::{Process, Tcache};
use crate::sim::ArenaModel;

/// A live object: its id, where it is (arena and slab or large extent there), its usable and
/// requested sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveObject {
    pub id: u32,
    pub arena: u32,
    pub extent: u32,
    pub usize: u64,
    pub request: u64,
}

/// A region or block the allocator holds for itself: an object in a thread cache, or a
/// cache's own block of pointer stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldBlock {
    pub arena: u32,
    pub extent: u32,
}

impl Process {
    /// Every live object, by id.
    pub fn live_objects(&self) -> impl Iterator<Item = LiveObject> + '_ {
        self.objects
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_live())
            .map(|(id, o)| LiveObject {
                id: id as u32,
                arena: o.arena,
                extent: o.extent,
                usize: o.usize,
                request: o.request,
            })
    }

    /// Every object held in a thread cache (freed by the program, not yet returned).
    pub(crate) fn cached_blocks(&self) -> Vec<HeldBlock> {
        self.live_tcaches()
            .flat_map(|tc| tc.bins.iter().flat_map(|b| b.stack.iter()))
            .map(|i| HeldBlock {
                arena: i.arena,
                extent: i.extent,
            })
            .collect()
    }

    /// The block of every live thread cache (in arena 0).
    pub(crate) fn cache_blocks(&self) -> Vec<HeldBlock> {
        self.live_tcaches()
            .map(|tc| HeldBlock {
                arena: tc.block.arena,
                extent: tc.block.extent,
            })
            .collect()
    }

    /// Arena `i` (automatic arenas first, then the huge arena), if it exists.
    pub fn arena_at(&self, i: u32) -> Option<&ArenaModel> {
        self.arenas.get(i as usize).and_then(Option::as_ref)
    }

    /// Arena slots (existing or not): valid indices for [`Process::arena_at`].
    pub fn arena_slots(&self) -> u32 {
        self.arenas.len() as u32
    }

    /// The thread cache of every live thread that has one.
    fn live_tcaches(&self) -> impl Iterator<Item = &Tcache> + '_ {
        self.threads
            .iter()
            .flatten()
            .filter_map(|t| t.tcache.as_ref())
    }
}
