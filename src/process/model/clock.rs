//! Decay in the process model: the clock (the trace's `time_ns`), each thread's ticker, and
//! where jemalloc ticks (`arena_decay_ticks` call sites in 5.3.1's `arena.c` and `large.c`):
//!
//! | operation | ticks, on which arena |
//! |---|---|
//! | a cache fill (`arena_ptr_array_fill_small`) | 1, the thread's arena |
//! | a small allocation or free without the cache (`arena_malloc_small`, `arena_dalloc_small`) | 1, the object's arena |
//! | a large allocation or free without the cache (`large_palloc`, `large_dalloc`) | 1, the object's arena |
//! | a cache flush (`arena_ptr_array_flush_impl_{small,large}`) | 1 per object, per arena group |
//! | a realloc in place (`arena_ralloc_no_move`, `large_ralloc_no_move`) | 1, the object's arena |
//!
//! Cached allocations and frees tick nothing. A check that fires runs `arena_decay` (dirty,
//! then muzzy) on the arena that ticked. Thread exit (`tcache_destroy`) checks arena 0 and
//! the thread's arena (or purges it all when no thread is left). A small flush's ticks come
//! before its emptied slabs are freed in jemalloc and after them here (at most one check per
//! flush sees a few more dirty pages).

use super::Process;
use crate::process::ProcessError;
use crate::sim::decay::{mix_seed, Ticker};
use crate::sim::{ArenaModel, Eagerness, SimError};

/// The model's clock: the trace's times, moved so that the first call is at `start_ns` (the
/// time since arena 0 was created), optionally read through a coarse clock.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Clock {
    /// The first call's trace time.
    origin: Option<u64>,
    /// Model time of the first call (arena 0 is created at 0).
    pub start_ns: u64,
    /// `CLOCK_MONOTONIC_COARSE`'s resolution (0: exact).
    pub resolution_ns: u64,
    /// The coarse clock's phase against the trace's clock, drawn from the seed.
    phase_ns: u64,
    /// Model time now (exact).
    pub now_ns: u64,
}

impl Clock {
    /// What `nstime_update` reads now.
    pub fn read(&self) -> u64 {
        self.read_at(self.now_ns)
    }

    /// What `nstime_update` reads at model time `t` (a background thread's wake-up).
    pub(crate) fn read_at(&self, t: u64) -> u64 {
        match self.resolution_ns {
            0 => t,
            r => (t + self.phase_ns) / r * r,
        }
    }
}

/// How the model draws jemalloc's address-seeded random numbers and reads its clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecayClock {
    /// Seeds the tickers (jemalloc: each thread's data address), the deadline jitter (each
    /// decay structure's address) and the coarse clock's phase.
    pub seed: u64,
    /// The clock's resolution in ns (jemalloc reads `CLOCK_MONOTONIC_COARSE`: 4 ms on a
    /// 250 Hz kernel); 0 reads the trace's times exactly.
    pub resolution_ns: u64,
    /// Time between arena 0's creation and the trace's first call (a live replayer's
    /// start-up; 0 for a trace that starts with the process).
    pub start_ns: u64,
}

impl Process {
    /// Sets the seed, clock resolution and start of the decay clock. Call before the first
    /// record: arena 0's decay is re-initialised at time 0.
    pub fn set_decay_clock(&mut self, c: DecayClock) {
        self.seed = c.seed;
        self.clock.resolution_ns = c.resolution_ns;
        self.clock.start_ns = c.start_ns;
        self.clock.now_ns = 0;
        self.clock.phase_ns = match c.resolution_ns {
            0 => 0,
            r => mix_seed(c.seed, 7, 0) % r,
        };
        let (d, m) = (self.options.dirty_decay_ms, self.options.muzzy_decay_ms);
        let now = self.clock.read();
        let seed = self.seed;
        if let Some(a) = self.arenas[0].as_mut() {
            a.set_decay(d, m, now, mix_seed(seed, 0, 1));
        }
    }

    /// Moves the clock to a call's time. Decay above 0 needs one.
    pub(super) fn advance_clock(
        &mut self,
        n: u64,
        time_ns: Option<u64>,
    ) -> Result<(), ProcessError> {
        match time_ns {
            Some(t) => {
                let origin = *self.clock.origin.get_or_insert(t);
                let now = self.clock.start_ns + t.saturating_sub(origin);
                self.clock.now_ns = self.clock.now_ns.max(now);
                Ok(())
            }
            None if self.options.needs_clock() => Err(ProcessError::NoClock { event: n }),
            None if self.clock_gc && self.clock.origin.is_none() => {
                Err(ProcessError::ClockGc { event: n })
            }
            None => Ok(()),
        }
    }

    /// A fresh arena at index `i`, its decay starting now (the huge arena purges at once
    /// where the others decay gradually).
    pub(super) fn new_arena(&mut self, i: u32) -> Result<ArenaModel, SimError> {
        let mut a = ArenaModel::new(self.config)?;
        let (d, m) = if Some(i) == self.huge {
            self.options.huge_decay_ms()
        } else {
            (self.options.dirty_decay_ms, self.options.muzzy_decay_ms)
        };
        if d != -1 || m != -1 {
            a.set_decay(
                d,
                m,
                self.clock.read(),
                mix_seed(self.seed, u64::from(i), 1),
            );
        }
        Ok(a)
    }

    /// `arena_decay_ticks(arena, n)` on thread `t`'s ticker.
    pub(super) fn tick(&mut self, t: usize, arena: u32, n: u32) {
        if !self.decay_on || n == 0 {
            return;
        }
        if t >= self.tickers.len() {
            self.tickers.resize(t + 1, None);
        }
        let seed = self.seed;
        let ticker =
            self.tickers[t].get_or_insert_with(|| Ticker::new(mix_seed(seed, t as u64, 2)));
        if ticker.ticks(n) {
            self.decay_check(arena);
        }
    }

    /// `arena_decay(arena, all = false)` now.
    pub(super) fn decay_check(&mut self, arena: u32) {
        if !self.decay_on {
            return;
        }
        let now = self.clock.read();
        let Some(a) = self.arenas[arena as usize].as_mut() else {
            return;
        };
        if self.bg.is_none() {
            a.decay_check(now);
            return;
        }
        // Background threads on: the application thread advances epochs, purges nothing
        // but decay-0 sets, and may wake the arena's thread.
        let advanced = a.decay_with(now, Eagerness::Never);
        if advanced.iter().any(Option::is_some) {
            self.background_epoch_advanced(arena, advanced);
        }
    }
}
