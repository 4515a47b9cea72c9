//! Calls through jemalloc's own API with `MALLOCX_` flags (`Call::mallocx_flags`: a recorded
//! `mallocx`, `dallocx`, `sdallocx`; `rallocx`, `xallocx`), as `jemalloc.c` serves them:
//! - `MALLOCX_TCACHE_NONE` (`tcache_get_from_ind`: no cache): an allocation is placed straight
//!   in its arena (the one named, else the thread's, or the huge arena by size, as
//!   `arena_choose_maybe_huge`), a free goes straight to the owning arena
//!   (`arena_dalloc_no_tcache`);
//! - `MALLOCX_ARENA(a)` with the thread's cache: a cached class is taken from the cache as
//!   usual (whatever arena its regions came from), a miss fills from arena `a`
//!   (`tcache_alloc_small_hard(tsdn, arena, ...)`); an uncached size is placed in `a`;
//! - a manual arena (`arenas.create`, indices from `narenas + 1`: the huge arena's index is
//!   reserved at start-up) is made the first time a call names it: a named index at or above
//!   the model's `narenas` is taken for the recorded program's manual arenas, numbered by
//!   first use ([`ManualArenas`]; a program that names an automatic arena above the replay's
//!   `narenas` is misread so);
//! - `MALLOCX_TCACHE(c)`: explicit cache `c` (`tcache.create`) serves the call in place of the
//!   thread's own ([`super::explicit`]);
//! - a realloc (`rallocx`, `xallocx`) with flags moves as `arena_ralloc` does with them: a
//!   large block that cannot stay is placed in the named arena, a fresh allocation goes
//!   through the named cache (or none), and the old block is freed through it.
//!
//! `thread.arena` names arenas the same way (`model/control.rs`).

use super::{Ask, Object, Process};
use crate::process::ProcessError;
use crate::sim::SimError;
use crate::trace::{Call, Event};

/// What an index named by `MALLOCX_ARENA` is in a replay with `narenas` automatic arenas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArenaChoice {
    Automatic(u32),
    /// The `k`-th manual arena the trace uses (from 0).
    Manual(u32),
}

/// The trace's manual arenas: the recorded indices, in order of first use.
#[derive(Clone, Debug, Default)]
pub struct ManualArenas {
    recorded: Vec<u32>,
}

impl ManualArenas {
    /// The arena `recorded` means (a new manual one is numbered next).
    pub fn choose(&mut self, recorded: u32, narenas: u32) -> ArenaChoice {
        if recorded < narenas {
            return ArenaChoice::Automatic(recorded);
        }
        let k = match self.recorded.iter().position(|&r| r == recorded) {
            Some(k) => k,
            None => {
                self.recorded.push(recorded);
                self.recorded.len() - 1
            }
        };
        ArenaChoice::Manual(k as u32)
    }

    /// The arena `recorded` means, if it is automatic or a manual one already used.
    pub fn find(&self, recorded: u32, narenas: u32) -> Option<ArenaChoice> {
        if recorded < narenas {
            return Some(ArenaChoice::Automatic(recorded));
        }
        let k = self.recorded.iter().position(|&r| r == recorded)?;
        Some(ArenaChoice::Manual(k as u32))
    }
}

impl Process {
    /// `call` (flags set) on thread `t` (started); false: served as an ordinary call.
    pub(super) fn api_call(&mut self, n: u64, t: usize, call: &Call) -> Result<bool, ProcessError> {
        let named = match call.explicit_arena() {
            Some(a) => Some(self.manual_arena(a)?),
            None => None,
        };
        let explicit = call.explicit_cache();
        let cache = !call.tcache_off();
        match call.event {
            Event::Alloc { id, size, align } => {
                if self.live(id).is_some() {
                    return Err(SimError::AllocOfLiveId { event: n, id }.into());
                }
                let usize = self.arena(0).usable(n, size, align)?;
                let ask = Ask { size, usize, align };
                let placed = match explicit {
                    Some(c) => self.with_explicit(t, c, |p| p.alloc_in(n, t, ask, named, true))?,
                    None => self.alloc_in(n, t, ask, named, cache)?,
                };
                self.set(id, Object::placed(placed, usize, size, align));
                self.stats.live_objects += 1;
                self.stats.requested_bytes += size;
                self.alloc_event(t, usize);
            }
            Event::Free { id } if !cache => {
                let obj = self.free_to_arena(n, t, id)?;
                self.dalloc_event(t, obj.usize);
            }
            Event::Free { id } => {
                let Some(c) = explicit else {
                    return Ok(false);
                };
                let obj = self.take_object(n, id)?;
                self.with_explicit(t, c, |p| {
                    p.free(t, obj);
                    Ok(())
                })?;
                self.dalloc_event(t, obj.usize);
            }
            Event::Realloc { id, size } => {
                self.realloc_object(n, t, id, size, |p, obj, usize| match explicit {
                    Some(c) => {
                        p.with_explicit(t, c, |q| q.realloc_in(n, t, obj, usize, named, true))
                    }
                    None => p.realloc_in(n, t, obj, usize, named, cache),
                })?
            }
        }
        self.refresh_totals();
        Ok(true)
    }

    /// The model's index of the trace's `k`-th manual arena: after the automatic arenas and
    /// the huge one.
    pub(super) fn manual_index(&self, k: u32) -> u32 {
        self.narenas + u32::from(self.huge.is_some()) + k
    }

    /// The model's arena for a recorded `MALLOCX_ARENA(recorded)`: an automatic one (made
    /// now if no thread made it yet), or a manual one after the automatic and huge ones,
    /// made now if new (`arenas.create`).
    pub(super) fn manual_arena(&mut self, recorded: u32) -> Result<u32, ProcessError> {
        let (a, manual) = match self.manual.choose(recorded, self.narenas) {
            ArenaChoice::Automatic(a) => (a, false),
            ArenaChoice::Manual(k) => (self.manual_index(k), true),
        };
        let i = a as usize;
        if i >= self.arenas.len() {
            let slots = i + 1;
            self.arenas.resize_with(slots, || None);
            self.nthreads.resize(slots, 0);
            self.ithreads.resize(slots, 0);
            self.imade.resize(slots, false);
            self.tcache_bytes.resize(slots, 0);
        }
        if self.arenas[i].is_none() {
            self.arenas[i] = Some(self.new_arena(a)?);
            if manual {
                let bytes = match self.metadata.ctl_arena_bytes {
                    0 => super::metadata::ctl_arena_default(self.config.version),
                    b => b,
                };
                self.meta.ctl_arena(bytes);
            }
        }
        Ok(a)
    }
}
