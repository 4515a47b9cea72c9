//! `mallctl` writes a program made (`Record::Control`), served as jemalloc's `ctl.c` serves
//! them. Any `mallctl` call starts a thread that had not started (`tsd_fetch`: its cache and
//! arena, as an allocation would).
//! - `thread.tcache.flush` (`tcache_flush`): every bin of the thread's cache returns all it
//!   holds, small bins first, as at the thread's exit; the cache stays.
//! - `arena.<i>.purge` (`arena_i_decay(.., all)`): every dirty and muzzy page of arena `i`,
//!   or of every arena, is purged; an index no arena has yet is left alone.
//! - `arena.<i>.decay`: the decay due by now, as a decay tick would run it.
//! - `thread.arena` (`thread_arena_ctl`): an unbound thread binds first (`arena_choose`), then
//!   `arena_migrate` moves it (the old arena is purged when no thread is left in it: 5.3.0
//!   always, 5.3.1 not with background threads on) and `tcache_arena_reassociate` counts its
//!   cache in the new arena. Indices name arenas as `MALLOCX_ARENA` does ([`super::api`]).
//! - `thread.tcache.enabled` (`tcache_enabled_set`): on, a cache is made as at a thread's
//!   start (whatever `opt.tcache`); off, it is destroyed as at its exit (`tcache_destroy`),
//!   the thread staying bound to its arena.
//! - `tcache.create`, `tcache.flush`, `tcache.destroy`: explicit caches ([`super::explicit`]).
//! - `background_thread` (`background_threads_enable` / `_disable`): the background threads
//!   start, each with an arena of its group doing a first pass at once (its wake-up time
//!   starts at 0, not indefinite), or stop ([`super::background`]).

use super::api::ArenaChoice;
use super::Process;
use crate::process::ProcessError;
use crate::sizeclass::JemallocVersion;
use crate::trace::{Control, ThreadId, ALL_ARENAS};

impl Process {
    /// A [`crate::trace::Record::Control`]: one event, on the trace's clock, as a call is.
    pub(super) fn apply_control(
        &mut self,
        thread: ThreadId,
        time_ns: Option<u64>,
        control: Control,
    ) -> Result<(), ProcessError> {
        self.stats.events += 1;
        let n = self.stats.events;
        self.advance_clock(n, time_ns)?;
        self.background_until();
        let t = thread as usize;
        if self.exited.get(t).copied().unwrap_or(false) {
            return Err(ProcessError::AfterExit { event: n, thread });
        }
        self.control(t, control)?;
        self.background_after_call();
        Ok(())
    }

    /// `control` made by thread `t`.
    fn control(&mut self, t: usize, control: Control) -> Result<(), ProcessError> {
        self.ensure_thread(t)?;
        match control {
            Control::FlushCache => {
                if self.thread(t).tcache.is_some() {
                    for bin in 0..self.info.nhbins() {
                        self.flush(t, bin, 0);
                    }
                }
            }
            Control::Purge { arena } => {
                for a in self.controlled_arenas(arena) {
                    self.arena_mut(a).purge_all();
                }
            }
            Control::Decay { arena } => {
                for a in self.controlled_arenas(arena) {
                    self.decay_check(a);
                }
            }
            Control::BindArena { arena } => self.migrate(t, arena)?,
            Control::CacheEnabled { on } => {
                let has = self.thread(t).tcache.is_some();
                if on && !has {
                    self.make_cache(t)?;
                } else if !on && has {
                    self.destroy_cache(t);
                }
            }
            Control::CacheCreate { cache } => self.create_explicit(t, cache)?,
            Control::CacheFlush { cache } => self.end_explicit(t, cache, false),
            Control::CacheDestroy { cache } => self.end_explicit(t, cache, true),
            Control::BackgroundThreads { on } => self.set_background(on),
        }
        self.refresh_totals();
        Ok(())
    }

    /// The model's existing arenas that `arena.<recorded>` names (every one for
    /// [`ALL_ARENAS`]).
    fn controlled_arenas(&self, recorded: u32) -> Vec<u32> {
        if recorded == ALL_ARENAS {
            return (0..self.arenas.len() as u32)
                .filter(|&a| self.arenas[a as usize].is_some())
                .collect();
        }
        let a = match self.manual.find(recorded, self.narenas) {
            Some(ArenaChoice::Automatic(a)) => a,
            Some(ArenaChoice::Manual(k)) => self.manual_index(k),
            None => return Vec::new(),
        };
        match self.arenas.get(a as usize) {
            Some(Some(_)) => vec![a],
            _ => Vec::new(),
        }
    }

    /// `thread.arena` = `recorded` on thread `t` (started).
    fn migrate(&mut self, t: usize, recorded: u32) -> Result<(), ProcessError> {
        let old = self.bound_arena(t)?;
        let new = self.manual_arena(recorded)?;
        if new == old {
            return Ok(());
        }
        self.nthreads[old as usize] -= 1;
        self.nthreads[new as usize] += 1;
        let purge = self.config.version == JemallocVersion::V5_3_0 || !self.background_on();
        if self.nthreads[old as usize] == 0 && purge {
            self.arena_mut(old).purge_all();
        }
        let th = self.threads[t].as_mut().expect("started");
        th.arena = new;
        if let Some(tc) = th.tcache.as_mut() {
            let bytes = tc.bytes(&self.info);
            tc.arena = new;
            self.tcache_bytes[old as usize] -= bytes;
            self.tcache_bytes[new as usize] += bytes;
        }
        Ok(())
    }
}
