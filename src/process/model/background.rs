//! jemalloc's background purging threads (`background_thread:true`) on the trace's clock
//! (`src/background_thread.c`, `src/arena.c`'s deferred-work half, `src/decay.c`'s
//! `decay_ns_until_purge`; rules in `jemalloc-internals-2.md` section 4).
//!
//! - `max_background_threads` threads (4 by default); arena `i` is served by thread
//!   `i % max`. A thread is started when the first arena of its group is made (thread 0 at
//!   start-up), and a started thread whose arenas hold nothing to purge sleeps indefinitely,
//!   which is what a thread not started yet amounts to: the model keeps every thread as
//!   started, asleep indefinitely until its arenas give it work.
//! - A pass (`background_work_sleep_once`): unless the thread slept indefinitely, it runs
//!   `arena_decay` on each of its arenas with purge eagerness ALWAYS (down to the last
//!   epoch's limit, after advancing the epoch if due); then it sleeps for the soonest
//!   `pac_time_until_deferred_work` of its arenas (threshold 1,024 pages), at least 100 ms, or
//!   indefinitely when none has anything due.
//! - Wake-ups before time: a page-level free (`arena_handle_deferred_work`) wakes a thread
//!   that sleeps indefinitely; an application thread's decay check whose epoch advanced
//!   (`arena_maybe_do_deferred_work`) wakes it too, or, when it sleeps for a time, adds the
//!   pages due before its wake-up to `npages_to_purge_new` and wakes it once those exceed
//!   1,024 pages, unless it wakes within 100 ms anyway.
//!
//! Approximate by nature: the real threads sleep on the wall clock (`pthread_cond_timedwait`)
//! and wake some time after the deadline (timer slack, scheduling), the model exactly at it,
//! and a signalled thread wakes in the model when the call that signalled it ends.

use super::Process;
use crate::sim::decay::Decay;
use crate::sim::Eagerness;

/// `BACKGROUND_THREAD_MIN_INTERVAL_NS`: the shortest timed sleep.
pub(crate) const MIN_INTERVAL_NS: u64 = 100_000_000;
/// `ARENA_DEFERRED_PURGE_NPAGES_THRESHOLD`.
const NPAGES_THRESHOLD: u64 = 1024;

/// One background thread's state (`background_thread_info_t`).
#[derive(Clone, Copy, Debug, Default)]
struct BgThread {
    /// When the model wakes it (exact time); `None`: not before a signal.
    wake_at: Option<u64>,
    /// `next_wakeup` as jemalloc keeps it (the malloc clock at sleep + the sleep); `None`:
    /// `BACKGROUND_THREAD_INDEFINITE_SLEEP`.
    wakeup_time: Option<u64>,
    npages_to_purge_new: u64,
}

/// Every background thread, and the page-level frees each arena had when last looked at.
#[derive(Clone, Debug)]
pub(super) struct Background {
    max: usize,
    threads: Vec<BgThread>,
    seen: Vec<u64>,
    /// Passes run (`stats.background_thread.num_runs`).
    runs: u64,
}

impl Background {
    pub(super) fn new(max: u32, arenas: usize) -> Background {
        let max = max.max(1) as usize;
        Background {
            max,
            threads: vec![BgThread::default(); max],
            seen: vec![0; arenas],
            runs: 0,
        }
    }

    /// Threads started at run time (`background_threads_enable`) at `now_ns`: each with an
    /// arena of its group (`has_arena`) runs a first pass at once.
    fn started(
        max: u32,
        seen: Vec<u64>,
        now_ns: u64,
        has_arena: impl Fn(usize, usize) -> bool,
    ) -> Background {
        let mut bg = Background::new(max, seen.len());
        bg.seen = seen;
        for k in 0..bg.max {
            if has_arena(k, bg.max) {
                bg.threads[k] = BgThread {
                    wake_at: Some(now_ns),
                    wakeup_time: Some(0),
                    npages_to_purge_new: 0,
                };
            }
        }
        bg
    }

    /// Wakes thread `k` now (`pthread_cond_signal`): it runs a pass when the current call
    /// ends.
    fn signal(&mut self, k: usize, now_ns: u64) {
        let th = &mut self.threads[k];
        th.wake_at = Some(th.wake_at.map_or(now_ns, |w| w.min(now_ns)));
    }
}

/// `arena_should_decay_early`'s test for a thread that sleeps until `wakeup` (malloc clock):
/// the pages due before then, added up; `Some(remaining)` when the thread should be woken.
fn decay_early(th: &mut BgThread, wakeup: u64, decay: &Decay, npages_new: u64) -> Option<u64> {
    if !decay.gradual() || wakeup <= decay.epoch_ns() {
        return None;
    }
    let remaining = wakeup - decay.epoch_ns();
    if npages_new > 0 {
        th.npages_to_purge_new += decay.npages_purge_in(remaining, npages_new);
    }
    (th.npages_to_purge_new > NPAGES_THRESHOLD).then_some(remaining)
}

impl Process {
    /// Whether background threads are modelled.
    pub(super) fn background_on(&self) -> bool {
        self.bg.is_some()
    }

    /// `background_thread` written at run time: the threads start (thread 0 always; each
    /// with an arena of its group passes at once) or stop. Writing the current value changes
    /// nothing.
    pub(super) fn set_background(&mut self, on: bool) {
        if on == self.bg.is_some() {
            return;
        }
        if !on {
            self.bg = None;
            return;
        }
        let seen = self
            .arenas
            .iter()
            .map(|a| a.as_ref().map_or(0, |a| a.deferred_work()))
            .collect();
        let arenas = &self.arenas;
        let has_arena = |k: usize, max: usize| {
            k == 0 || (k..arenas.len()).step_by(max).any(|i| arenas[i].is_some())
        };
        let max = self.options.max_background_threads;
        self.bg = Some(Background::started(max, seen, self.clock.now_ns, has_arena));
    }

    /// Background passes run so far (`stats.background_thread.num_runs`; 0 when off).
    pub fn background_runs(&self) -> u64 {
        self.bg.as_ref().map_or(0, |b| b.runs)
    }

    /// Runs every background pass due up to the clock's time, in time order per thread (the
    /// threads serve disjoint arenas, so their order does not matter).
    pub(super) fn background_until(&mut self) {
        let Some(mut bg) = self.bg.take() else {
            return;
        };
        let now = self.clock.now_ns;
        let mut ran = false;
        for k in 0..bg.max {
            while let Some(w) = bg.threads[k].wake_at.filter(|&w| w <= now) {
                self.background_pass(&mut bg, k, w);
                ran = true;
            }
        }
        self.bg = Some(bg);
        if ran {
            self.refresh_totals();
        }
    }

    /// `background_work_sleep_once` of thread `k` at time `at_ns`.
    fn background_pass(&mut self, bg: &mut Background, k: usize, at_ns: u64) {
        let th = bg.threads[k];
        let slept_indefinitely = th.wakeup_time.is_none();
        let read = self.clock.read_at(at_ns);
        let mut ns: Option<u64> = None;
        for i in (k..self.arenas.len()).step_by(bg.max) {
            let Some(a) = self.arenas[i].as_mut() else {
                continue;
            };
            if !slept_indefinitely {
                a.decay_with(read, Eagerness::Always);
            }
            if ns.is_some_and(|n| n <= MIN_INTERVAL_NS) {
                continue;
            }
            if let Some(t) = a.ns_until_purge(NPAGES_THRESHOLD) {
                ns = Some(ns.map_or(t, |n| n.min(t)));
            }
        }
        let sleep = ns.map(|n| n.max(MIN_INTERVAL_NS));
        bg.runs += 1;
        bg.threads[k] = BgThread {
            wake_at: sleep.map(|s| at_ns + s),
            wakeup_time: sleep.map(|s| read + s),
            npages_to_purge_new: 0,
        };
    }

    /// `arena_maybe_do_deferred_work` after an application thread's check of `arena`
    /// advanced an epoch: `new` holds, for the dirty and the muzzy set, the pages that epoch
    /// recorded (when it advanced).
    pub(super) fn background_epoch_advanced(&mut self, arena: u32, new: [Option<u64>; 2]) {
        let now = self.clock.now_ns;
        let Some(bg) = self.bg.as_mut() else {
            return;
        };
        let Some(a) = self.arenas[arena as usize].as_ref() else {
            return;
        };
        let Some((dirty, muzzy)) = a.decay() else {
            return;
        };
        let k = arena as usize % bg.max;
        for (decay, npages_new) in [(dirty, new[0]), (muzzy, new[1])] {
            let Some(npages_new) = npages_new else {
                continue;
            };
            let th = &mut bg.threads[k];
            match th.wakeup_time {
                None => bg.signal(k, now),
                Some(wakeup) => {
                    if let Some(remaining) = decay_early(th, wakeup, decay, npages_new) {
                        th.npages_to_purge_new = 0;
                        if remaining >= MIN_INTERVAL_NS {
                            bg.signal(k, now);
                        }
                    }
                }
            }
        }
    }

    /// `arena_background_thread_inactivity_check` for every page-level free since the last
    /// look: a thread sleeping indefinitely is woken.
    pub(super) fn background_after_call(&mut self) {
        let now = self.clock.now_ns;
        let Some(bg) = self.bg.as_mut() else {
            return;
        };
        if bg.seen.len() < self.arenas.len() {
            bg.seen.resize(self.arenas.len(), 0);
        }
        for (i, a) in self.arenas.iter().enumerate() {
            let Some(a) = a else { continue };
            let d = a.deferred_work();
            if d != bg.seen[i] {
                bg.seen[i] = d;
                let k = i % bg.max;
                if bg.threads[k].wakeup_time.is_none() {
                    bg.signal(k, now);
                }
            }
        }
    }
}
