//! Calls made inside another allocator call of the same thread (`Call::reentrant`: glibc's
//! `pthread_create` allocating while jemalloc starts its background thread inside
//! `mallctl`). jemalloc raises the thread's reentrancy level around such work
//! (`ih/tsd.h:tsd_pre_reentrancy_raw`), and then (design note jemalloc-internals-2, §3.2):
//! - `imalloc_body` (malloc, calloc, posix_memalign, aligned_alloc) serves the call from arena
//!   0 without the thread cache, whatever the size (the explicit arena wins over the huge one);
//! - free has no automatic cache (`tcache_get_from_ind`): straight to the owning arena;
//! - realloc has no such branch (`do_rallocx`): an ordinary call;
//! - thread events are not fired (`te_event_trigger`), the byte counters still advance: a GC
//!   due then is postponed to the thread's next ordinary call.

use super::{Process, GC_INCR_BYTES};
use crate::process::ProcessError;
use crate::sim::SimError;
use crate::trace::Event;

/// A trace's reentrant calls so far, and those at which a thread event (the cache's GC) fell
/// due and was held back to the thread's next call. A live replay can only say "reentrant"
/// with `mallocx` flags (arena 0, no cache), and the real allocator fires an event due at
/// such a call at once: from the first held event on, the live replay's caches may run
/// their GC one call early, and comparisons after it are not event-exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReentrantTally {
    pub calls: u64,
    pub held_events: u64,
    /// The record number of the first call that held an event back.
    pub first_held: Option<u64>,
}

impl Process {
    /// The trace's reentrant calls so far (see [`ReentrantTally`]).
    pub(crate) fn reentrant_tally(&self) -> ReentrantTally {
        self.reentrant
    }

    /// Counts reentrant call `n` of thread `t`, after its byte counters moved.
    fn tally_reentrant(&mut self, n: u64, t: usize) {
        let th = self.threads[t].as_ref().expect("started");
        let due = th.tcache.is_some()
            && (th.allocated - th.alloc_gc_last >= GC_INCR_BYTES
                || th.deallocated - th.dalloc_gc_last >= GC_INCR_BYTES);
        let tally = &mut self.reentrant;
        tally.calls += 1;
        if due {
            tally.held_events += 1;
            tally.first_held.get_or_insert(n);
        }
    }
}

impl Process {
    /// `event`, made reentrantly on thread `t` (started); false: a realloc, which jemalloc
    /// serves as an ordinary call.
    pub(super) fn reentrant_call(
        &mut self,
        n: u64,
        t: usize,
        event: Event,
    ) -> Result<bool, ProcessError> {
        match event {
            Event::Alloc { id, size, align } => {
                if self.live(id).is_some() {
                    return Err(SimError::AllocOfLiveId { event: n, id }.into());
                }
                let usize = self.place_in_arena0(n, t, id, size, align)?;
                self.threads[t].as_mut().expect("started").allocated += usize;
            }
            Event::Free { id } => {
                let obj = self.free_to_arena(n, t, id)?;
                self.threads[t].as_mut().expect("started").deallocated += obj.usize;
            }
            Event::Realloc { .. } => {
                self.reentrant.calls += 1;
                return Ok(false);
            }
        }
        self.tally_reentrant(n, t);
        self.refresh_totals();
        Ok(true)
    }

    /// `event` on thread `t`, which has not started and whose calls are all reentrant
    /// (jemalloc's background thread: `tsd_internal_fetch`, reentrant for good): arena 0 and
    /// no cache, as [`Process::reentrant_call`], without starting the thread (a realloc
    /// moves within arena 0).
    pub(super) fn internal_call(
        &mut self,
        n: u64,
        t: usize,
        event: Event,
    ) -> Result<(), ProcessError> {
        let (id, size, align) = match event {
            Event::Alloc { id, size, align } => {
                if self.live(id).is_some() {
                    return Err(SimError::AllocOfLiveId { event: n, id }.into());
                }
                (id, size, align)
            }
            Event::Free { id } => {
                self.free_to_arena(n, t, id)?;
                self.reentrant.calls += 1;
                self.refresh_totals();
                return Ok(());
            }
            Event::Realloc { id, size } => (id, size, self.free_to_arena(n, t, id)?.align),
        };
        self.place_in_arena0(n, t, id, size, align)?;
        self.reentrant.calls += 1;
        self.refresh_totals();
        Ok(())
    }
}
