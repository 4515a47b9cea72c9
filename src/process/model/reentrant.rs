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

use super::{Object, Process};
use crate::process::ProcessError;
use crate::sim::SimError;
use crate::trace::Event;

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
                let usize = self.arena(0).usable(n, size, align)?;
                let extent = self.arena_mut(0).place(n, usize)?;
                self.tick(t, 0, 1);
                self.set(id, Object::placed((0, extent), usize, size, align));
                self.stats.live_objects += 1;
                self.stats.requested_bytes += size;
                self.threads[t].as_mut().expect("started").allocated += usize;
            }
            Event::Free { id } => {
                let obj = self.free_to_arena(n, t, id)?;
                self.threads[t].as_mut().expect("started").deallocated += obj.usize;
            }
            Event::Realloc { .. } => return Ok(false),
        }
        self.refresh_totals();
        Ok(true)
    }
}
