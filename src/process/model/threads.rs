//! A thread's first call: its cache block and its arenas (`tsd_tcache_data_init`,
//! `arena_choose_hard`, `arena_choose_maybe_huge`).

use super::super::tcache::{Item, Tcache};
use super::{Object, Process, Thread, DEAD};
use crate::process::ProcessError;
use crate::sim::SimError;
use crate::sizeclass::JemallocVersion;
use crate::trace::{Event, ObjectId};

/// 5.3.1's `TSD_MIN_INIT_STATE_MAX_FETCHED` (`tsd_internals.h`): a thread's free-family calls
/// while it is minimal are counted from 1, and the one that brings the count to this turns it
/// nominal inside that call (`tsd.c:tsd_fetch_slow`): its cache is made, it is bound, and
/// that free goes into the new cache. 5.3.0 stays minimal until the first allocation.
const MIN_INIT_STATE_MAX_FETCHED: u32 = 128;

/// A thread that has only freed so far (`tsd_state_minimal_initialized`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct MinimalTsd {
    /// `thread.deallocated`: the cache GC's event counters start from it (`tsd_te_init`).
    deallocated: u64,
    /// `tsd_min_init_state_nfetched` (5.3.1).
    fetched: u32,
}

impl Process {
    /// A thread's first call: `tsd_tcache_data_init` allocates its cache block from arena 0
    /// (`ipallocztm(..., arena_get(0))`), then `arena_choose` binds it.
    pub(super) fn ensure_thread(&mut self, t: usize) -> Result<(), ProcessError> {
        if t >= self.threads.len() {
            self.threads.resize(t + 1, None);
            self.exited.resize(t + 1, false);
        }
        if self.threads[t].is_some() {
            return Ok(());
        }
        // te_init: the event counters start from the bytes counted so far.
        let deallocated = self.minimal.get(t).map_or(0, |m| m.deallocated);
        self.threads[t] = Some(Thread {
            bound: false,
            arena: 0,
            iarena: 0,
            tcache: None,
            allocated: 0,
            deallocated,
            alloc_gc_last: 0,
            dalloc_gc_last: deallocated,
        });
        if self.options.tcache {
            self.make_cache(t)?;
        }
        Ok(())
    }

    /// `tsd_tcache_data_init` on thread `t` (started): the cache block from arena 0, then the
    /// cache associated with the thread's arena (bound now if it was not).
    pub(super) fn make_cache(&mut self, t: usize) -> Result<(), ProcessError> {
        let bytes = self.cache_block_bytes();
        let n = self.stats.events;
        let extent = self.arena_mut(0).place(n, bytes)?;
        self.tick(t, 0, 1);
        let arena = self.bound_arena(t)?;
        let tcache = Tcache::new(&self.info, arena, Item { arena: 0, extent });
        self.threads[t].as_mut().expect("started").tcache = Some(tcache);
        Ok(())
    }

    /// `tcache_destroy` on thread `t`: every bin flushed, the block freed, then decay
    /// "manually triggered" in arena 0 and in the cache's arena, which is purged whole when no
    /// thread is bound to it (and no background thread would).
    pub(super) fn destroy_cache(&mut self, t: usize) {
        let Some(tc) = self.threads[t].as_ref().and_then(|th| th.tcache.as_ref()) else {
            return;
        };
        let (block, arena) = (tc.block, tc.arena);
        for bin in 0..self.info.nhbins() {
            self.flush(t, bin, 0);
        }
        self.arena_mut(block.arena).remove(block.extent);
        self.tick(t, block.arena, 1);
        self.decay_check(0);
        // An explicit cache's arena may be one only an internal binding made: idle, nothing
        // to purge (the model keeps no arena for it).
        let idle = self.arenas[arena as usize].is_none();
        if idle {
        } else if self.nthreads[arena as usize] == 0 && !self.background_on() {
            self.arena_mut(arena).purge_all();
        } else {
            self.decay_check(arena);
        }
        self.threads[t].as_mut().expect("started").tcache = None;
    }

    /// Thread `t`'s arena, binding it first if it is not yet (`arena_choose_hard`: the
    /// internal choice, then the application one).
    pub(super) fn bound_arena(&mut self, t: usize) -> Result<u32, ProcessError> {
        let th = self.thread(t);
        if th.bound {
            return Ok(th.arena);
        }
        let iarena = self.choose_internal();
        self.ithreads[iarena as usize] += 1;
        let arena = self.choose_arena()?;
        self.nthreads[arena as usize] += 1;
        let th = self.threads[t].as_mut().expect("started");
        (th.bound, th.arena, th.iarena) = (true, arena, iarena);
        Ok(arena)
    }

    /// `arena_choose_hard`'s internal choice, made on the arenas as they were before the
    /// application choice: like it, on the internal bindings' counts; a new arena it makes
    /// is the same the application choice makes, if that one makes one.
    pub(super) fn choose_internal(&mut self) -> u32 {
        let n = self.narenas as usize;
        let (mut choose, mut first_null) = (0, n);
        for i in 1..n {
            if self.arenas[i].is_some() || self.imade[i] {
                if self.ithreads[i] < self.ithreads[choose] {
                    choose = i;
                }
            } else if first_null == n {
                first_null = i;
            }
        }
        if self.ithreads[choose] == 0 || first_null == n {
            return choose as u32;
        }
        self.imade[first_null] = true;
        first_null as u32
    }

    /// `arena_choose_hard` (application arena): the first arena with the fewest threads,
    /// among those that exist (an internal binding's too: it has no application thread);
    /// if it has threads and an index below `narenas` is still free, a new arena there.
    /// (`thread.arena` can leave an internal binding's arena below arenas with threads.)
    pub(super) fn choose_arena(&mut self) -> Result<u32, ProcessError> {
        let n = self.narenas as usize;
        let mut choose = 0;
        let mut first_null = n;
        for i in 1..n {
            if self.arenas[i].is_some() || self.imade[i] {
                if self.nthreads[i] < self.nthreads[choose] {
                    choose = i;
                }
            } else if first_null == n {
                first_null = i;
            }
        }
        let pick = if self.nthreads[choose] == 0 || first_null == n {
            choose
        } else {
            first_null
        };
        if self.arenas[pick].is_none() {
            self.arenas[pick] = Some(self.new_arena(pick as u32)?);
        }
        Ok(pick as u32)
    }

    /// `arena_choose_maybe_huge` for an allocation that bypasses the cache, `size` being what
    /// its path compares with `oversize_threshold`. 5.3.1 binds an unbound thread first (it
    /// reads the threshold from the thread's arena), 5.3.0 only when the size is below it.
    pub(super) fn arena_for(&mut self, t: usize, size: u64) -> Result<u32, ProcessError> {
        if self.config.version == JemallocVersion::V5_3_1 {
            self.bound_arena(t)?;
        }
        if size >= self.oversize {
            let h = self.huge.expect("oversize implies a huge arena");
            if self.arenas[h as usize].is_none() {
                self.arenas[h as usize] = Some(self.new_arena(h)?);
            }
            return Ok(h);
        }
        self.bound_arena(t)
    }

    /// Counts a free of thread `t`, which has not started: whether it stays minimal (false:
    /// 5.3.1's 128th free, which starts the thread and is then freed through its cache).
    /// Without caches that start makes nothing and binds nothing (`tsd_data_init` binds only
    /// through `tsd_tcache_data_init`): the thread frees as before and binds at its first
    /// allocation, as a minimal one does.
    pub(super) fn stays_minimal(&mut self, t: usize) -> bool {
        if t >= self.minimal.len() {
            self.minimal.resize(t + 1, MinimalTsd::default());
        }
        let m = &mut self.minimal[t];
        m.fetched = m.fetched.saturating_add(1);
        !self.options.tcache
            || self.config.version != JemallocVersion::V5_3_1
            || m.fetched != MIN_INIT_STATE_MAX_FETCHED
    }

    /// Frees object `id` straight to its owning arena, no thread cache
    /// (`arena_dalloc_no_tcache`): a minimal thread's free, a reentrant one. The caller
    /// counts the thread's deallocated bytes where its thread keeps them.
    pub(super) fn free_to_arena(
        &mut self,
        n: u64,
        t: usize,
        id: ObjectId,
    ) -> Result<Object, ProcessError> {
        let obj = self
            .live(id)
            .ok_or(SimError::FreeOfDeadId { event: n, id })?;
        self.objects[id as usize] = DEAD;
        self.arena_mut(obj.arena).remove(obj.extent);
        self.tick(t, obj.arena, 1);
        self.stats.live_objects -= 1;
        self.stats.requested_bytes -= obj.request;
        Ok(obj)
    }

    /// A free on a minimal thread: straight to the owning arena (`arena_dalloc_no_tcache`).
    pub(super) fn minimal_free(
        &mut self,
        n: u64,
        t: usize,
        event: Event,
    ) -> Result<(), ProcessError> {
        let Event::Free { id } = event else {
            unreachable!("frees only")
        };
        let obj = self.free_to_arena(n, t, id)?;
        self.minimal[t].deallocated += obj.usize;
        self.refresh_totals();
        Ok(())
    }
}
