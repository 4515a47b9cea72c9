//! Dirty and muzzy decay on a clock (jemalloc's `decay.c`, the decision half of `pac.c`'s
//! `pac_maybe_decay_purge`), and the per-thread ticker that decides when an operation checks
//! it (`ticker.h`'s `ticker_geom_t`, `arena_decay_ticks`).
//!
//! The clock is whatever the caller says it is (the process model passes the trace's
//! `time_ns`); the random numbers jemalloc draws from addresses (the deadline jitter is seeded
//! with the decay structure's address, the ticker with the thread data's) come from seeds the
//! caller gives, so a run is reproducible and several seeds show the spread.

use super::smoothstep::{BFP, H_STEPS, NSTEPS};

/// `prng_state_next_u64`: jemalloc's 64-bit LCG (`prng.h`).
#[inline]
fn lcg_next(state: u64) -> u64 {
    state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

/// `prng_lg_range_u64`: the top `lg_range` bits of the next state (1 <= lg_range <= 64).
#[inline]
pub(crate) fn prng_lg_range(state: &mut u64, lg_range: u32) -> u64 {
    *state = lcg_next(*state);
    *state >> (64 - lg_range)
}

/// `prng_range_u64`: uniform in `0..range` by repeated trial on `ceil(lg range)` bits.
pub(crate) fn prng_range(state: &mut u64, range: u64) -> u64 {
    if range <= 1 {
        return 0;
    }
    let lg = range.next_power_of_two().trailing_zeros();
    loop {
        let r = prng_lg_range(state, lg);
        if r < range {
            return r;
        }
    }
}

/// SplitMix64: derives independent seeds (per thread, per arena) from the user's seed.
pub(crate) fn mix_seed(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed
        .wrapping_add(a.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(b.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `ticker_geom_table` (`ticker.c`): ceil(log(u) / log(1 - 1/n)) x 61 / n for 64 values of u.
const GEOM_TABLE: [u8; 64] = [
    254, 211, 187, 169, 156, 144, 135, 127, 120, 113, 107, 102, 97, 93, 89, 85, 81, 77, 74, 71, 68,
    65, 62, 60, 57, 55, 53, 50, 48, 46, 44, 42, 40, 39, 37, 35, 33, 32, 30, 29, 27, 26, 24, 23, 21,
    20, 19, 18, 16, 15, 14, 13, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
];
/// `TICKER_GEOM_MUL`.
const GEOM_MUL: u64 = 61;
/// `ARENA_DECAY_NTICKS_PER_UPDATE`.
pub(crate) const NTICKS_PER_UPDATE: i32 = 1000;

/// One thread's decay ticker (`tsd`'s `arena_decay_ticker` and `prng_state`).
#[derive(Clone, Copy, Debug)]
pub struct Ticker {
    tick: i32,
    nticks: i32,
    prng: u64,
}

impl Ticker {
    /// `TICKER_GEOM_INIT(1000)`: the first check after 1,001 ticks, then random spacing.
    pub fn new(seed: u64) -> Ticker {
        Ticker {
            tick: NTICKS_PER_UPDATE,
            nticks: NTICKS_PER_UPDATE,
            prng: seed,
        }
    }

    /// `ticker_geom_ticks`: true when the countdown went below zero (then `arena_decay`
    /// runs on the arena that ticked); the next countdown is `nticks x table[r] / 61` for a
    /// random 6-bit r (mean about 1,000).
    #[inline]
    pub fn ticks(&mut self, n: u32) -> bool {
        self.tick -= n as i32;
        if self.tick >= 0 {
            return false;
        }
        let idx = prng_lg_range(&mut self.prng, 6) as usize;
        self.tick = (self.nticks as u64 * u64::from(GEOM_TABLE[idx]) / GEOM_MUL) as i32;
        true
    }
}

/// One decay state (`decay_t`): dirty or muzzy pages of one arena.
#[derive(Clone, Debug)]
pub struct Decay {
    ms: i64,
    interval_ns: u64,
    epoch_ns: u64,
    deadline_ns: u64,
    jitter: u64,
    npages_limit: u64,
    nunpurged: u64,
    backlog: Box<[u64; NSTEPS]>,
}

impl Decay {
    /// `decay_init` at `now_ns` with `decay_ms` (-1: never; 0: at once; else gradual).
    pub fn new(ms: i64, now_ns: u64, seed: u64) -> Decay {
        let interval_ns = if ms > 0 {
            ms as u64 * 1_000_000 / NSTEPS as u64
        } else {
            0
        };
        let mut d = Decay {
            ms,
            interval_ns,
            epoch_ns: now_ns,
            deadline_ns: 0,
            jitter: seed,
            npages_limit: 0,
            nunpurged: 0,
            backlog: Box::new([0; NSTEPS]),
        };
        d.deadline_init();
        d
    }

    pub fn ms(&self) -> i64 {
        self.ms
    }

    /// `decay_gradually`.
    pub fn gradual(&self) -> bool {
        self.ms > 0
    }

    /// The epoch length, `decay_ms / 200` (0 unless gradual).
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The current epoch's deadline.
    pub fn deadline_ns(&self) -> u64 {
        self.deadline_ns
    }

    /// `decay_deadline_init`: one interval past the epoch, plus a uniform jitter below one
    /// interval when gradual.
    fn deadline_init(&mut self) {
        self.deadline_ns = self.epoch_ns + self.interval_ns;
        if self.ms > 0 {
            self.deadline_ns += prng_range(&mut self.jitter, self.interval_ns);
        }
    }

    /// `decay_backlog_npages_limit`: the sum of `backlog[i] x h[i]`, shifted right by 24.
    pub(crate) fn backlog_limit(&self) -> u64 {
        let sum: u64 = self
            .backlog
            .iter()
            .zip(H_STEPS.iter())
            .map(|(b, h)| b * h)
            .sum();
        sum >> BFP
    }

    /// `decay_maybe_advance_epoch`: past the deadline, moves the epoch on by whole
    /// intervals, shifts the backlog and records the pages dirtied since the last epoch
    /// (`current - nunpurged`) as the newest entry. True when the epoch advanced (the caller
    /// then purges down to [`Decay::npages_limit`]).
    pub fn maybe_advance(&mut self, now_ns: u64, npages_current: u64) -> bool {
        if self.ms <= 0 || now_ns < self.deadline_ns {
            return false;
        }
        let nadvance = (now_ns - self.epoch_ns) / self.interval_ns;
        self.epoch_ns += nadvance * self.interval_ns;
        self.deadline_init();
        if nadvance as usize >= NSTEPS {
            self.backlog[..NSTEPS - 1].fill(0);
        } else {
            let n = nadvance as usize;
            self.backlog.copy_within(n.., 0);
            if n > 1 {
                self.backlog[NSTEPS - n..NSTEPS - 1].fill(0);
            }
        }
        self.backlog[NSTEPS - 1] = npages_current.saturating_sub(self.nunpurged);
        self.npages_limit = self.backlog_limit();
        self.nunpurged = self.npages_limit.max(npages_current);
        true
    }

    /// `decay_npages_limit_get`: the pages the set may keep after the last epoch advance.
    pub fn npages_limit(&self) -> u64 {
        self.npages_limit
    }

    /// The backlog, oldest epoch first (for tests and inspection).
    pub fn backlog(&self) -> &[u64; NSTEPS] {
        &self.backlog
    }

    /// The current epoch's start (`decay->epoch`).
    pub(crate) fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// `decay_epoch_npages_delta`: the pages the last epoch advance recorded (`backlog[199]`).
    pub fn npages_new(&self) -> u64 {
        self.backlog[NSTEPS - 1]
    }

    /// `decay_npurge_after_interval`: the pages the smoothstep lets go over the next `k`
    /// epochs if nothing new were dirtied.
    fn npurge_after(&self, k: usize) -> u64 {
        let mut sum = 0u64;
        for i in 0..NSTEPS {
            let h = if i < k {
                H_STEPS[i]
            } else {
                H_STEPS[i] - H_STEPS[i - k]
            };
            sum += self.backlog[i] * h;
        }
        sum >> BFP
    }

    /// `decay_ns_until_purge(decay, npages_current, threshold)`: how long a background
    /// thread may sleep before this set needs purging (`None`: indefinitely). At most
    /// `threshold` pages wait a whole decay period; otherwise a binary search for when more
    /// than `threshold` pages will be due.
    pub fn ns_until_purge(&self, npages_current: u64, threshold: u64) -> Option<u64> {
        if self.ms <= 0 {
            return None;
        }
        let iv = self.interval_ns;
        if npages_current == 0 && self.backlog.iter().all(|&b| b == 0) {
            return None;
        }
        if npages_current <= threshold {
            return Some(iv * NSTEPS as u64);
        }
        let (mut lb, mut ub) = (2usize, NSTEPS);
        let mut n_lb = self.npurge_after(lb);
        if n_lb > threshold {
            return Some(iv * lb as u64);
        }
        let mut n_ub = self.npurge_after(ub);
        if n_ub < threshold {
            return Some(iv * ub as u64);
        }
        while n_lb + threshold < n_ub && lb + 2 < ub {
            let target = (lb + ub) / 2;
            let n = self.npurge_after(target);
            if n > threshold {
                ub = target;
                n_ub = n;
            } else {
                lb = target;
                n_lb = n;
            }
        }
        Some(iv * (ub + lb) as u64 / 2)
    }

    /// `decay_npages_purge_in`: of `npages_new` pages just dirtied, those due within
    /// `time_ns`.
    pub fn npages_purge_in(&self, time_ns: u64, npages_new: u64) -> u64 {
        let n_epoch = (time_ns / self.interval_ns.max(1)) as usize;
        if n_epoch >= NSTEPS {
            return npages_new;
        }
        let hmax = H_STEPS[NSTEPS - 1];
        (npages_new * (hmax - H_STEPS[NSTEPS - 1 - n_epoch])) >> BFP
    }
}
