//! Decay in the arena: turning it on, the page sets' sizes, and `arena_decay`'s check.

use super::super::decay::{mix_seed, Decay};
use super::super::pac::State;
use super::{ArenaModel, PageSets};

impl ArenaModel {
    /// Turns decay on (`decay_init` of both states at `now_ns`): `dirty_ms` / `muzzy_ms` as
    /// jemalloc's `dirty_decay_ms` / `muzzy_decay_ms` (-1 never, 0 at once, else over that
    /// many milliseconds). `seed` stands for the decay structures' addresses (their jitter).
    pub fn set_decay(&mut self, dirty_ms: i64, muzzy_ms: i64, now_ns: u64, seed: u64) {
        self.pac.may_have_muzzy = muzzy_ms != 0;
        self.pac.purge_immediately = dirty_ms == 0;
        self.decay = Some(Box::new((
            Decay::new(dirty_ms, now_ns, mix_seed(seed, 1, 0)),
            Decay::new(muzzy_ms, now_ns, mix_seed(seed, 2, 0)),
        )));
    }

    /// The dirty and muzzy decay states, when decay is on.
    pub fn decay(&self) -> Option<(&Decay, &Decay)> {
        self.decay.as_deref().map(|(d, m)| (d, m))
    }

    /// The most extent records held at once (jemalloc keeps an `edata_t` per extent and
    /// recycles freed ones, so its arena's metadata grows with this high-water mark).
    pub(crate) fn extent_records(&self) -> u64 {
        self.pac.ext.v.len() as u64
    }

    /// The sizes of the mappings made, by serial number.
    pub(crate) fn mapping_sizes(&self) -> &[u64] {
        &self.pac.mappings
    }

    /// Moves the extent boundaries that splits made since the last call (the mapping's
    /// serial number, the offset in it) to `into`; the first call starts the log.
    pub(crate) fn take_splits(&mut self, into: &mut Vec<(u32, u64)>) {
        self.pac.log_splits = true;
        into.append(&mut self.pac.split_log);
    }

    /// Bytes in the dirty, muzzy and retained sets.
    pub fn page_sets(&self) -> PageSets {
        let (dirty_bytes, muzzy_bytes, retained_bytes) = self.pac.set_bytes();
        PageSets {
            dirty_bytes,
            muzzy_bytes,
            retained_bytes,
        }
    }

    /// `arena_decay(.., all = false)` at `now_ns`, without background threads: dirty pages,
    /// then muzzy ones (`pac_maybe_decay_purge`, eagerness "on epoch advance"): decay 0 purges
    /// the whole set; gradual decay purges the oldest extents down to the smoothstep limit
    /// when the epoch advanced. Dirty pages go to the muzzy set when muzzy decay is not 0.
    pub fn decay_check(&mut self, now_ns: u64) {
        self.decay_with(now_ns, Eagerness::OnEpochAdvance);
    }

    /// `arena_decay(.., all = false)` at `now_ns` with the purge eagerness `e`
    /// (`arena_decide_unforced_purge_eagerness`): a background thread purges to the last
    /// epoch's limit every time; an application thread with background threads on only
    /// advances epochs. Returns, for the dirty and the muzzy set, the pages the epoch advance
    /// recorded (`decay_epoch_npages_delta`) when it advanced.
    pub(crate) fn decay_with(&mut self, now_ns: u64, e: Eagerness) -> [Option<u64>; 2] {
        let page = self.page;
        let Some(d) = self.decay.as_deref_mut() else {
            return [None, None];
        };
        let to_muzzy = d.1.ms() != 0;
        let dirty = self.pac.set_bytes().0;
        let (adv_dirty, purge) = decide(&mut d.0, now_ns, dirty, page, e);
        if let Some((limit, max)) = purge {
            self.pac.decay_to_limit(State::Dirty, limit, max, to_muzzy);
        }
        let muzzy = self.pac.set_bytes().1;
        // pa_shard_dont_decay_muzzy
        if muzzy == 0 && d.1.ms() <= 0 {
            return [adv_dirty, None];
        }
        let (adv_muzzy, purge) = decide(&mut d.1, now_ns, muzzy, page, e);
        if let Some((limit, max)) = purge {
            self.pac.decay_to_limit(State::Muzzy, limit, max, false);
        }
        [adv_dirty, adv_muzzy]
    }

    /// `pac_time_until_deferred_work`: the sooner of the dirty and the muzzy set's
    /// `decay_ns_until_purge` with `threshold` pages (`None`: no purge ever due).
    pub fn ns_until_purge(&self, threshold: u64) -> Option<u64> {
        let d = self.decay.as_deref()?;
        let (dirty, muzzy, _) = self.pac.set_bytes();
        let a = d.0.ns_until_purge(dirty / self.page, threshold);
        let b = d.1.ns_until_purge(muzzy / self.page, threshold);
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    /// Page-level frees so far (`pac_dalloc_impl` and `pac_shrink_impl`, each of which
    /// reports deferred work to `arena_handle_deferred_work`).
    pub(crate) fn deferred_work(&self) -> u64 {
        self.pac.deferred
    }
}

/// `pac_purge_eagerness_t`: when an unforced decay check purges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eagerness {
    /// A background thread: to the last epoch's limit, every time.
    Always,
    /// An application thread while background threads are on: never.
    Never,
    /// Without background threads: when the epoch advanced.
    OnEpochAdvance,
}

/// `pac_maybe_decay_purge`'s decision for one set of `current` bytes: the pages the epoch
/// advance recorded (when it advanced), and `(limit, max)` bytes for `pac_decay_to_limit`.
fn decide(
    d: &mut Decay,
    now_ns: u64,
    current: u64,
    page: u64,
    e: Eagerness,
) -> (Option<u64>, Option<(u64, u64)>) {
    match d.ms() {
        ms if ms < 0 => (None, None),
        0 => (None, (current > 0).then_some((0, current))),
        _ => {
            let pages = current / page;
            let advanced = d.maybe_advance(now_ns, pages);
            let purge = e == Eagerness::Always || (advanced && e == Eagerness::OnEpochAdvance);
            let limit = d.npages_limit();
            let cut = (purge && pages > limit).then(|| (limit * page, (pages - limit) * page));
            (advanced.then(|| d.npages_new()), cut)
        }
    }
}
