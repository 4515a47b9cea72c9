//! A thread's first call: its cache block and its arenas (`tsd_tcache_data_init`,
//! `arena_choose_hard`, `arena_choose_maybe_huge`).

use super::super::tcache::{Item, Tcache};
use super::{Process, Thread};
use crate::process::ProcessError;

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
        let block = if self.options.tcache {
            let bytes = self.cache_block_bytes();
            let n = self.stats.events;
            let extent = self.arena_mut(0).place(n, bytes)?;
            self.tick(t, 0, 1);
            Some(Item { arena: 0, extent })
        } else {
            None
        };
        let iarena = self.choose_internal();
        self.ithreads[iarena as usize] += 1;
        let arena = self.choose_arena()?;
        self.nthreads[arena as usize] += 1;
        // te_init: the event counters start from the bytes counted so far.
        let deallocated = self.minimal_deallocated.get(t).copied().unwrap_or(0);
        self.threads[t] = Some(Thread {
            arena,
            iarena,
            tcache: block.map(|b| Tcache::new(&self.info, arena, b)),
            allocated: 0,
            deallocated,
            alloc_gc_last: 0,
            dalloc_gc_last: deallocated,
        });
        Ok(())
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

    /// `arena_choose_hard` (application arena): the first arena with the fewest threads;
    /// if it has threads and an index below `narenas` is still free, a new arena there.
    pub(super) fn choose_arena(&mut self) -> Result<u32, ProcessError> {
        let n = self.narenas as usize;
        let mut choose = 0;
        let mut first_null = n;
        for i in 1..n {
            if self.arenas[i].is_some() {
                if self.nthreads[i] < self.nthreads[choose] {
                    choose = i;
                }
            } else if first_null == n {
                first_null = i;
            }
        }
        if self.nthreads[choose] == 0 || first_null == n {
            return Ok(choose as u32);
        }
        self.arenas[first_null] = Some(self.new_arena(first_null as u32)?);
        Ok(first_null as u32)
    }

    /// `arena_choose_maybe_huge` for an allocation that bypasses the cache.
    pub(super) fn arena_for(&mut self, t: usize, usize: u64) -> Result<u32, ProcessError> {
        if usize >= self.oversize {
            let h = self.huge.expect("oversize implies a huge arena");
            if self.arenas[h as usize].is_none() {
                self.arenas[h as usize] = Some(self.new_arena(h)?);
            }
            return Ok(h);
        }
        Ok(self.thread(t).arena)
    }
}
