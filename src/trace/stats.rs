//! Statistics of a trace, recomputed from its events (not copied from the header, so they
//! also check it).

use super::tally::Tally;
use super::{Call, Event, Record, TraceError};
use crate::export::{Cell, Table};

/// Buckets: size 0, then (2^(k-1), 2^k] for k = 0..=64.
const BUCKETS: usize = 66;

/// Counts by size, one bucket per power of two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeHistogram {
    /// Allocs by requested size.
    pub allocs: [u64; BUCKETS],
    /// Reallocs by new size.
    pub reallocs: [u64; BUCKETS],
    /// Bytes requested by the allocs of each bucket.
    pub alloc_bytes: [u128; BUCKETS],
}

impl Default for SizeHistogram {
    fn default() -> Self {
        SizeHistogram {
            allocs: [0; BUCKETS],
            reallocs: [0; BUCKETS],
            alloc_bytes: [0; BUCKETS],
        }
    }
}

/// The bucket of `size`: 0 for 0, else 1 + ceil(log2(size)).
pub fn size_bucket(size: u64) -> usize {
    if size == 0 {
        0
    } else {
        1 + (64 - (size - 1).leading_zeros()) as usize
    }
}

/// The sizes of bucket `b`, inclusive.
pub fn bucket_range(b: usize) -> (u64, u64) {
    match b {
        0 => (0, 0),
        1 => (1, 1),
        _ => {
            let hi = if b > 64 { u64::MAX } else { 1u64 << (b - 1) };
            ((1u64 << (b - 2)) + 1, hi)
        }
    }
}

/// What `fragsim trace stats` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStats {
    pub events: u64,
    pub allocs: u64,
    pub frees: u64,
    pub reallocs: u64,
    pub max_live_objects: u64,
    pub peak_requested_bytes: u128,
    pub final_requested_bytes: u128,
    pub histogram: SizeHistogram,
    /// Calls per thread, by thread id (one entry for a trace without threads).
    pub events_per_thread: Vec<u64>,
    /// Frees and reallocs on another thread than the one that allocated the object.
    pub cross_thread_frees: u64,
    pub thread_exits: u64,
    /// The last record's time, if the trace has times.
    pub duration_ns: Option<u64>,
    /// Call sites defined, and calls that name one.
    pub sites: u64,
    pub calls_with_site: u64,
}

/// Reads every event once; memory is one size per live id.
pub fn trace_stats<I>(events: I) -> Result<TraceStats, TraceError>
where
    I: IntoIterator<Item = Result<Event, TraceError>>,
{
    trace_stats_records(
        events
            .into_iter()
            .map(|e| e.map(|e| Record::Call(Call::plain(e)))),
    )
}

/// As [`trace_stats`], with the context of format v2: threads, cross-thread frees, duration,
/// sites. Memory: one size and one thread per live id.
pub fn trace_stats_records<I>(records: I) -> Result<TraceStats, TraceError>
where
    I: IntoIterator<Item = Result<Record, TraceError>>,
{
    let mut tally = Tally::new();
    let mut histogram = SizeHistogram::default();
    let mut owner: Vec<u32> = Vec::new();
    let mut per_thread = vec![0u64];
    let (mut cross, mut exits, mut sites, mut with_site) = (0, 0, 0, 0);
    let mut duration = None;
    for record in records {
        let call = match record? {
            Record::Call(call) => call,
            Record::ThreadExit { time_ns, .. } => {
                exits += 1;
                duration = time_ns.or(duration);
                continue;
            }
            Record::Site { .. } => {
                sites += 1;
                continue;
            }
            Record::Mapping { .. } | Record::Control { .. } => continue,
        };
        let event = call.event;
        let t = call.thread as usize;
        if per_thread.len() <= t {
            per_thread.resize(t + 1, 0);
        }
        per_thread[t] += 1;
        duration = call.time_ns.or(duration);
        with_site += call.site.is_some() as u64;
        let slot = event.id() as usize;
        if owner.len() <= slot {
            owner.resize(slot + 1, 0);
        }
        match event {
            Event::Alloc { .. } => owner[slot] = call.thread,
            Event::Free { .. } | Event::Realloc { .. } if owner[slot] != call.thread => cross += 1,
            _ => {}
        }
        match event {
            Event::Alloc { size, .. } => {
                let b = size_bucket(size);
                histogram.allocs[b] += 1;
                histogram.alloc_bytes[b] += size as u128;
            }
            Event::Realloc { size, .. } => histogram.reallocs[size_bucket(size)] += 1,
            Event::Free { .. } => {}
        }
        tally
            .apply(&event)
            .map_err(|what| TraceError::Inconsistent {
                file: "<events>".into(),
                event: tally.events,
                what,
            })?;
    }
    Ok(TraceStats {
        events: tally.events,
        allocs: tally.allocs,
        frees: tally.frees,
        reallocs: tally.reallocs,
        max_live_objects: tally.peak_live,
        peak_requested_bytes: tally.peak_requested,
        final_requested_bytes: tally.requested,
        histogram,
        events_per_thread: per_thread,
        cross_thread_frees: cross,
        thread_exits: exits,
        duration_ns: duration,
        sites,
        calls_with_site: with_site,
    })
}

fn big(v: u128) -> Cell {
    match u64::try_from(v) {
        Ok(v) => Cell::Int(v),
        Err(_) => Cell::Text(v.to_string()),
    }
}

/// The one-row summary table.
pub fn stats_table(name: &str, s: &TraceStats) -> Table {
    let mut t = Table::new(
        format!("Trace statistics: {name}"),
        &[
            "trace",
            "events",
            "allocs",
            "frees",
            "reallocs",
            "max_live_objects",
            "peak_requested_bytes",
            "final_requested_bytes",
            "threads",
            "events_per_thread",
            "cross_thread_frees",
            "duration_ns",
            "sites",
        ],
    );
    let per_thread: Vec<String> = s.events_per_thread.iter().map(u64::to_string).collect();
    t.push(vec![
        name.into(),
        s.events.into(),
        s.allocs.into(),
        s.frees.into(),
        s.reallocs.into(),
        s.max_live_objects.into(),
        big(s.peak_requested_bytes),
        big(s.final_requested_bytes),
        (s.events_per_thread.len() as u64).into(),
        per_thread.join("/").into(),
        s.cross_thread_frees.into(),
        match s.duration_ns {
            Some(ns) => ns.into(),
            None => Cell::Missing(""),
        },
        s.sites.into(),
    ]);
    t
}

/// The size histogram, one row per non-empty power-of-two bucket.
pub fn histogram_table(name: &str, s: &TraceStats) -> Table {
    let mut t = Table::new(
        format!("Request sizes by power of two: {name}"),
        &[
            "min_size",
            "max_size",
            "allocs",
            "reallocs",
            "alloc_bytes",
            "alloc_share",
        ],
    );
    let h = &s.histogram;
    for b in 0..BUCKETS {
        if h.allocs[b] == 0 && h.reallocs[b] == 0 {
            continue;
        }
        let (lo, hi) = bucket_range(b);
        let share = if s.allocs == 0 {
            0.0
        } else {
            h.allocs[b] as f64 / s.allocs as f64
        };
        t.push(vec![
            lo.into(),
            hi.into(),
            h.allocs[b].into(),
            h.reallocs[b].into(),
            big(h.alloc_bytes[b]),
            Cell::Float(share, 4),
        ]);
    }
    t
}
