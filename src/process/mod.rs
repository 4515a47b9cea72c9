//! A whole jemalloc process, event by event: every thread's cache, the automatic arenas a
//! thread is bound to at its first call, the huge arena for requests of
//! `oversize_threshold` and more, frees from other threads, thread exits, and the caches'
//! own blocks in arena 0. Each arena is the exact one-arena model of [`crate::sim`].
//!
//! Exact where jemalloc is deterministic (`shared/design/jemalloc-process.md`): decay off,
//! jemalloc 5.3.0, or 5.3.1 with `experimental_tcache_gc:false`; the trace's calls in their
//! recorded global order; there time stamps are ignored. `crate::check::process` replays the
//! same records through the real allocator, one thread per trace thread, to prove it.
//! Decay above 0 ms and 5.3.1's default cache GC (`experimental_tcache_gc`, `model/gc.rs`)
//! run on the trace's times, approximately.

mod compare;
pub(crate) mod generate;
mod model;
mod options;
mod recorded;
mod scripted;
mod setup;
mod stats_json;
mod tcache;
pub(crate) mod timed;
pub(crate) mod trace_run;

pub use compare::compare_snapshots;
pub use generate::records_from_text;
pub use generate::threaded_trace;
pub use generate::to_text;
pub use generate::ThreadedSpec;
pub use generate::TraceKind;
pub(crate) use model::base_header_bytes;
pub(crate) use model::edata_bytes;
pub(crate) use model::ArenaChoice;
pub use model::DecayClock;
pub(crate) use model::DumpAt;
pub(crate) use model::HeldBlock;
pub(crate) use model::ManualArenas;
pub use model::Process;
pub(crate) use model::ReentrantTally;
pub(crate) use model::StartupResidue;
pub(crate) use model::StatsView;
pub(crate) use model::{machine_map_align, machine_vaddr_bits};
pub(crate) use model::{MapAlign, Metadata};
pub(crate) use options::check_cpus;
pub(crate) use options::machine_coarse_clock_ns;
pub use options::machine_cpus;
pub use options::OptionError;
pub use options::ProcessOptions;
pub(crate) use recorded::RecordedAllocator;
pub use setup::ModelSetup;
pub(crate) use stats_json::stats_json;
pub use timed::timed_trace;
pub use timed::TimedShape;
pub use timed::TimedSpec;
pub(crate) use trace_run::ProcessRows;
pub use trace_run::ProcessRun;
pub(crate) use trace_run::ProcessRunResult;

use crate::sim::{ArenaModel, BinStats, SimError};
use crate::trace::ThreadId;
use serde::Serialize;

/// Why the process model cannot run or apply a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Option(#[from] OptionError),
    #[error("event {event}: thread {thread} calls after its exit")]
    AfterExit { event: u64, thread: ThreadId },
    #[error("event {event}: the trace has no times, and decay above 0 ms runs on the trace's clock (record with times, or give dirty_decay_ms and muzzy_decay_ms of 0 or -1)")]
    NoClock { event: u64 },
    #[error("event {event}: the trace has no times, and jemalloc 5.3.1's default cache GC runs on a 10 ms clock (record with times, or give experimental_tcache_gc:false)")]
    ClockGc { event: u64 },
    #[error("event {event}: explicit thread cache {cache} is used before tcache.create made it, or after tcache.destroy")]
    UnknownExplicitCache { event: u64, cache: u32 },
}

/// Process-wide running totals, up to date after every record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProcessStats {
    /// Records applied (calls and thread exits).
    pub events: u64,
    pub live_objects: u64,
    pub requested_bytes: u64,
    /// `stats.allocated`: small + large allocated over every arena (cached objects and the
    /// caches' blocks included).
    pub allocated_bytes: u64,
    /// `stats.active`.
    pub active_bytes: u64,
    /// Bytes held in thread caches, over all arenas.
    pub tcache_bytes: u64,
    /// Threads that have called jemalloc and not exited.
    pub threads_live: u64,
    /// The model's clock at this record (ns since arena 0 was created; 0 without times).
    pub time_ns: u64,
    /// Dirty pages over all arenas (`stats.arenas.<i>.pdirty` x page).
    pub dirty_bytes: u64,
    /// Muzzy pages (`pmuzzy` x page): purged lazily, not in `stats.resident`.
    pub muzzy_bytes: u64,
    /// `stats.retained`: purged extents kept mapped for reuse.
    pub retained_bytes: u64,
    /// jemalloc's own metadata resident (the bases' pages), as modelled: see
    /// [`Process::set_metadata`].
    pub metadata_bytes: u64,
    /// `stats.metadata`: the bases' allocated bytes and the internal allocations (the
    /// threads' cache blocks), as modelled (0 without a metadata model).
    pub metadata_allocated_bytes: u64,
    /// `stats.resident`: active + dirty + metadata (muzzy pages are not counted, as in
    /// jemalloc's `pa_shard_stats_merge`).
    pub resident_bytes: u64,
    /// `stats.mapped`: active + dirty + muzzy (retained pages are not mapped in jemalloc's
    /// sense, `pac_mapped`) + the bases' blocks (without a metadata model: none).
    pub mapped_bytes: u64,
}

/// One arena at one event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ArenaSnapshot {
    pub index: u32,
    /// `stats.arenas.<i>.small.allocated + large.allocated`.
    pub allocated_bytes: u64,
    /// `stats.arenas.<i>.pactive` x page.
    pub active_bytes: u64,
    /// `stats.arenas.<i>.tcache_bytes`.
    pub tcache_bytes: u64,
    /// `stats.arenas.<i>.mapped`: the pages of the arena's active, dirty and muzzy extents
    /// (`pac_mapped`) plus its base blocks (as modelled; without a metadata model the first
    /// one, `BASE_BLOCK_BYTES`). Arena 0's base (`b0`) also holds the global radix tree's
    /// leaves, one per region of address space the heap's extents end in.
    pub mapped_bytes: u64,
    /// `stats.arenas.<i>.retained`: the pages of the arena's retained extents.
    pub retained_bytes: u64,
    pub bins: Vec<BinStats>,
}

/// An arena's first base block (`base_new` -> `base_block_alloc`: `HUGEPAGE_CEILING` of
/// the header and `base_t`, at least the first size of the page series): 2 MiB on x86-64.
/// It holds the arena's `arena_t`, bins and extent records (128 bytes each) until they
/// outgrow it; measured live as `stats.arenas.<i>.mapped` less `(pactive + pdirty +
/// pmuzzy) x page` for every arena but 0 (Debian's 5.3.0 and the linked 5.3.1).
pub(crate) const BASE_BLOCK_BYTES: u64 = 2 << 20;

/// What the live check compares at one event: the totals and every arena that exists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProcessSnapshot {
    pub event: u64,
    pub allocated_bytes: u64,
    pub active_bytes: u64,
    /// `stats.metadata`, `stats.resident` and `stats.mapped` (live: less the replayer's own
    /// arena's share).
    pub metadata_bytes: u64,
    pub resident_bytes: u64,
    pub mapped_bytes: u64,
    pub arenas: Vec<ArenaSnapshot>,
}

/// Multiplies every time stamp by `factor` (times relative to the first record's), to
/// stretch a short trace so that decay of a given period has room to act.
pub fn scale_times(records: &mut [crate::trace::Record], factor: f64) {
    use crate::trace::Record;
    let first = records.iter().find_map(Record::time_ns);
    let Some(t0) = first else { return };
    let scale = |t: &mut Option<u64>| {
        if let Some(v) = t {
            *v = t0 + ((v.saturating_sub(t0)) as f64 * factor).round() as u64;
        }
    };
    for r in records {
        if let Some(t) = r.time_ns_mut() {
            scale(t);
        }
    }
}

/// The records a process replay applies, streamed from a trace's: sites dropped, times
/// multiplied by `factor` from the first timed record on (what [`scale_times`] does to records
/// in memory), so a replay never holds the trace.
pub(crate) fn replay_records<E>(
    records: impl Iterator<Item = Result<crate::trace::Record, E>>,
    factor: f64,
) -> impl Iterator<Item = Result<crate::trace::Record, E>> {
    scaled_records(records, factor).filter(|r| !matches!(r, Ok(crate::trace::Record::Site { .. })))
}

/// A trace's records, streamed, with their times multiplied by `factor` from the first timed
/// record on (sites kept: [`replay_records`] drops them).
pub(crate) fn scaled_records<E>(
    records: impl Iterator<Item = Result<crate::trace::Record, E>>,
    factor: f64,
) -> impl Iterator<Item = Result<crate::trace::Record, E>> {
    let mut t0 = None;
    records.map(move |r| {
        let mut r = r?;
        if let Some(Some(v)) = r.time_ns_mut() {
            let first = *t0.get_or_insert(*v);
            if factor != 1.0 {
                *v = first + (v.saturating_sub(first) as f64 * factor).round() as u64;
            }
        }
        Ok(r)
    })
}

fn snapshot_of(
    stats: &ProcessStats,
    arenas: &[Option<ArenaModel>],
    tcache: &[u64],
    base_mapped: impl Fn(usize) -> u64,
) -> ProcessSnapshot {
    let mut s = ProcessSnapshot {
        event: stats.events,
        metadata_bytes: stats.metadata_allocated_bytes,
        resident_bytes: stats.resident_bytes,
        mapped_bytes: stats.mapped_bytes,
        ..ProcessSnapshot::default()
    };
    for (i, a) in arenas.iter().enumerate() {
        let Some(a) = a else {
            // An arena only an internal binding made holds nothing but the explicit caches
            // associated with it.
            if tcache.get(i).is_some_and(|&b| b > 0) {
                s.arenas.push(ArenaSnapshot {
                    index: i as u32,
                    tcache_bytes: tcache[i],
                    mapped_bytes: base_mapped(i),
                    ..ArenaSnapshot::default()
                });
            }
            continue;
        };
        s.allocated_bytes += a.stats().allocated_bytes;
        s.active_bytes += a.stats().active_bytes;
        let sets = a.page_sets();
        s.arenas.push(ArenaSnapshot {
            index: i as u32,
            allocated_bytes: a.stats().allocated_bytes,
            active_bytes: a.stats().active_bytes,
            tcache_bytes: tcache[i],
            mapped_bytes: a.stats().active_bytes
                + sets.dirty_bytes
                + sets.muzzy_bytes
                + base_mapped(i),
            retained_bytes: sets.retained_bytes,
            bins: a.bins().to_vec(),
        });
    }
    s
}

/// Peaks of a process replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ProcessSummary {
    pub peak_allocated_bytes: u64,
    pub peak_active_bytes: u64,
    pub peak_requested_bytes: u64,
    /// The totals at the first event where active bytes peaked.
    pub at_active_peak: ProcessStats,
    pub final_stats: ProcessStats,
    /// Sum over events of active bytes (for the mean).
    pub active_byte_events: u128,
    pub peak_resident_bytes: u64,
    /// The totals at the first event where resident bytes peaked.
    pub at_resident_peak: ProcessStats,
    /// Sum over events of resident bytes (the mean per event, for traces without times).
    pub resident_byte_events: u128,
    /// Integral of resident bytes over the clock (byte-ns), each value held until the next
    /// record, and the clock of the first record seen.
    pub resident_byte_ns: u128,
    pub first_time_ns: Option<u64>,
}

impl ProcessSummary {
    /// The answer first: the active peak, what the program's live objects asked for then, and
    /// the rest split as jemalloc's statistics split it (`peak active 1,376,256 bytes at event
    /// 42,126: requested 1,001,848 (72.8%); waste 374,408: size classes, cached objects and
    /// cache blocks 274,920 (allocated - requested), slab free space and padding pages
    /// 99,488 (active - allocated)`).
    pub fn headline(&self) -> String {
        use crate::export::human::thousands;
        let p = &self.at_active_peak;
        let share = |v: u64| match p.active_bytes {
            0 => 0.0,
            a => v as f64 * 100.0 / a as f64,
        };
        let in_classes = p.allocated_bytes.saturating_sub(p.requested_bytes);
        let in_pages = p.active_bytes.saturating_sub(p.allocated_bytes);
        format!(
            "peak active {} bytes at event {}: requested {} ({:.1}%); waste {} ({:.1}%): size classes, cached objects and cache blocks {} (allocated - requested), slab free space and padding pages {} (active - allocated)",
            thousands(p.active_bytes),
            thousands(p.events),
            thousands(p.requested_bytes),
            share(p.requested_bytes),
            thousands(in_classes + in_pages),
            share(in_classes + in_pages),
            thousands(in_classes),
            thousands(in_pages),
        )
    }

    pub(crate) fn observe(&mut self, s: &ProcessStats) {
        self.peak_allocated_bytes = self.peak_allocated_bytes.max(s.allocated_bytes);
        self.peak_requested_bytes = self.peak_requested_bytes.max(s.requested_bytes);
        if s.active_bytes > self.peak_active_bytes {
            self.peak_active_bytes = s.active_bytes;
            self.at_active_peak = *s;
        }
        self.active_byte_events += u128::from(s.active_bytes);
        if s.resident_bytes > self.peak_resident_bytes {
            self.peak_resident_bytes = s.resident_bytes;
            self.at_resident_peak = *s;
        }
        self.resident_byte_events += u128::from(s.resident_bytes);
        if self.first_time_ns.is_some() {
            let dt = s.time_ns.saturating_sub(self.final_stats.time_ns);
            self.resident_byte_ns += u128::from(self.final_stats.resident_bytes) * u128::from(dt);
        } else {
            self.first_time_ns = Some(s.time_ns);
        }
        self.final_stats = *s;
    }

    /// Mean resident bytes over the trace's time (each value weighted by how long it held);
    /// over events when the trace has no times (or lasts 0 ns).
    pub fn mean_resident_bytes(&self) -> f64 {
        let span = self.final_stats.time_ns - self.first_time_ns.unwrap_or(0);
        if span > 0 {
            self.resident_byte_ns as f64 / span as f64
        } else if self.final_stats.events == 0 {
            0.0
        } else {
            self.resident_byte_events as f64 / self.final_stats.events as f64
        }
    }

    /// Mean active bytes over all events.
    pub fn mean_active_bytes(&self) -> f64 {
        if self.final_stats.events == 0 {
            0.0
        } else {
            self.active_byte_events as f64 / self.final_stats.events as f64
        }
    }
}
