//! Explicit thread caches (`src/tcache.c` `tcaches_*`): a program makes one with
//! `tcache.create`, names it in a call with `MALLOCX_TCACHE(c)`, and ends it with
//! `tcache.flush` or `tcache.destroy`.
//! - `tcache.create` (`tcaches_create`): the first one allocates the index array from base 0
//!   (`MALLOCX_TCACHE_MAX + 1` pointers, cache-line aligned); each cache is one block from
//!   arena 0 (`tcache_create_explicit`: the bin stacks, then `tcache_t` and `tcache_slow_t`,
//!   `ipallocztm` with the stacks' alignment), associated with the creating thread's internal
//!   arena (`arena_ichoose`), where its cached bytes count.
//! - A call through it takes and fills as the thread's own cache would (a miss fills from the
//!   calling thread's arena, or the one `MALLOCX_ARENA` names); the thread's events (the GC)
//!   still count on the thread and act on the thread's own cache only: an explicit cache is
//!   never collected.
//! - `tcache.flush` (`tcaches_flush`) destroys it (`tcache_destroy`: every bin flushed, the
//!   block freed, decay checked in arena 0 and its arena) and leaves the index to be made
//!   again at its next use (`TCACHES_ELM_NEED_REINIT`, `tcaches_get`), by the thread using it;
//!   `tcache.destroy` destroys it and frees the index.

use super::super::tcache::{Item, Tcache};
use super::Process;
use crate::process::ProcessError;
use crate::sizeclass::JemallocVersion;

/// `sizeof(tcache_t *) * (MALLOCX_TCACHE_MAX + 1)`: the index array, from base 0.
const INDEX_ARRAY_BYTES: u64 = 8 * 4094;
/// `CACHELINE`: the index array's alignment.
const CACHELINE: u64 = 64;

/// An explicit cache index (`tcaches[c]`).
#[derive(Clone, Debug, Default)]
pub(super) enum Slot {
    /// Never made, or destroyed (`tcaches_avail`).
    #[default]
    Free,
    /// Flushed: made again at its next use.
    NeedReinit,
    Made(Box<Tcache>),
}

/// The program's explicit caches, by the index jemalloc gave (`tcaches`).
#[derive(Clone, Debug, Default)]
pub(super) struct ExplicitCaches {
    slots: Vec<Slot>,
    /// The index array is allocated (at the first `tcache.create`).
    array: bool,
}

/// The bytes `tcache_t` and `tcache_slow_t` add to an explicit cache's block (with
/// `nbins_small` small bins and pages of `lg_page`), from the two structures' fields
/// (`tcache_structs.h`; checked with `sizeof` on both releases' default builds: 1,760 + 176
/// and 992 + 240 bytes).
pub(crate) fn explicit_struct_bytes(
    version: JemallocVersion,
    nbins_small: u64,
    lg_page: u32,
) -> u64 {
    let round8 = |b: u64| b.next_multiple_of(8);
    // SC_NGROUP = 4; a cache_bin_t is 24 bytes.
    let (nbins_max, slow) = match version {
        // TCACHE_LG_MAXCLASS_LIMIT 23; slow: link, bin array descriptor, arena, next_gc_bin,
        // three u8 arrays of SC_NBINS, then dyn_alloc and tcache.
        JemallocVersion::V5_3_0 => (
            nbins_small + 4 * (23 - u64::from(lg_page + 2)) + 1,
            round8(16 + 24 + 8 + 4 + 3 * nbins_small) + 16,
        ),
        // TCACHE_LG_MAXCLASS_LIMIT = LG_USIZE_GROW_SLOW_THRESHOLD = lg_page + 3; slow adds
        // tcache_nbins, last_gc_time, two GC bin cursors and 2-byte fill controls.
        JemallocVersion::V5_3_1 => (
            nbins_small + 4 + 1,
            round8(16 + 24 + 8 + 8 + 8 + 12 + 4 * nbins_small) + 16,
        ),
    };
    8 + 24 * nbins_max + slow
}

impl ExplicitCaches {
    /// Caches made and not destroyed or flushed.
    pub(super) fn made(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Made(_)))
            .count() as u64
    }
}

impl Process {
    /// The bytes of one explicit cache's block: the thread's block request plus the two
    /// structures, pointer-rounded, as `sz_sa2u` rounds it.
    pub(crate) fn explicit_block_bytes(&self) -> u64 {
        let lg_page = self.config.page().trailing_zeros();
        let nbins = self.info.nbins_small as u64;
        let extra = explicit_struct_bytes(self.config.version, nbins, lg_page);
        let request = (self.info.block_request + extra).next_multiple_of(8);
        self.arena(0)
            .usable(0, request, self.config.page())
            .unwrap_or(0)
    }

    /// `tcaches_create` on thread `t` (started): the index array at the first one, then
    /// cache `cache`.
    pub(super) fn create_explicit(&mut self, t: usize, cache: u32) -> Result<(), ProcessError> {
        if !self.explicit.array {
            self.explicit.array = true;
            self.meta.base0_alloc(INDEX_ARRAY_BYTES, CACHELINE);
        }
        let tc = self.new_explicit(t)?;
        let i = cache as usize;
        if i >= self.explicit.slots.len() {
            self.explicit.slots.resize(i + 1, Slot::Free);
        }
        self.explicit.slots[i] = Slot::Made(Box::new(tc));
        Ok(())
    }

    /// `tcache_create_explicit` on thread `t`: its block from arena 0, associated with the
    /// thread's internal arena (bound first if it is not).
    fn new_explicit(&mut self, t: usize) -> Result<Tcache, ProcessError> {
        let bytes = self.explicit_block_bytes();
        let n = self.stats.events;
        let extent = self.arena_mut(0).place(n, bytes)?;
        self.tick(t, 0, 1);
        self.bound_arena(t)?;
        let iarena = self.thread(t).iarena;
        Ok(Tcache::new(&self.info, iarena, Item { arena: 0, extent }))
    }

    /// `tcaches_flush` (`destroy` false) or `tcaches_destroy` of cache `cache` on thread `t`.
    pub(super) fn end_explicit(&mut self, t: usize, cache: u32, destroy: bool) {
        let Some(slot) = self.explicit.slots.get_mut(cache as usize) else {
            return;
        };
        let next = if destroy {
            Slot::Free
        } else {
            Slot::NeedReinit
        };
        if let Slot::Made(tc) = std::mem::replace(slot, next) {
            let own = self.swap_in(t, Some(*tc));
            self.destroy_cache(t);
            self.swap_in(t, own);
        }
    }

    /// Runs `f` with explicit cache `cache` in place of thread `t`'s own (`tcaches_get`:
    /// made again first if flushed).
    pub(super) fn with_explicit<R>(
        &mut self,
        t: usize,
        cache: u32,
        f: impl FnOnce(&mut Process) -> Result<R, ProcessError>,
    ) -> Result<R, ProcessError> {
        let i = cache as usize;
        let slot = self.explicit.slots.get_mut(i).map(std::mem::take);
        let tc = match slot {
            Some(Slot::Made(tc)) => *tc,
            Some(Slot::NeedReinit) => self.new_explicit(t)?,
            _ => {
                let event = self.stats.events;
                return Err(ProcessError::UnknownExplicitCache { event, cache });
            }
        };
        let own = self.swap_in(t, Some(tc));
        let result = f(self);
        let tc = self
            .swap_in(t, own)
            .expect("the explicit cache stays in place");
        self.explicit.slots[i] = Slot::Made(Box::new(tc));
        result
    }

    /// Puts `tc` in thread `t`'s cache place, returning what was there.
    fn swap_in(&mut self, t: usize, tc: Option<Tcache>) -> Option<Tcache> {
        let th = self.threads[t].as_mut().expect("started");
        std::mem::replace(&mut th.tcache, tc)
    }
}
