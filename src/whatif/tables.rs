//! The what-if, per-class and timeline tables.

use super::replay::BuildReplay;
use crate::export::{Cell, Table};

/// Columns of [`whatif_table`], in order.
pub const WHATIF_COLUMNS: &[&str] = &[
    "build",
    "events",
    "peak_requested_bytes",
    "peak_allocated_bytes",
    "peak_active_bytes",
    "final_active_bytes",
    "internal_fragmentation",
    "external_fragmentation",
    "active_vs_first_bytes",
    "active_vs_first_ratio",
    "rounding_share",
    "empty_and_pad_share",
    "peak_mapped_bytes",
    "rounding_bytes_at_peak",
    "empty_region_bytes_at_peak",
    "large_pad_bytes_at_peak",
];

/// One row per build. Peaks are maxima over every event. At the event where active bytes
/// peaked: internal fragmentation = allocated / requested − 1, external = active / allocated
/// − 1 (as `fragsim replay` defines them for one build), and the shares of the peak active
/// bytes that are size-class rounding and empty slab regions plus large padding pages.
pub fn whatif_table(title: &str, replays: &[BuildReplay]) -> Table {
    let mut table = Table::new(title, WHATIF_COLUMNS);
    let first = replays.first().map_or(0, |r| r.peak.active);
    for r in replays {
        let diff = r.peak.active as f64 - first as f64;
        let ratio = if first == 0 {
            0.0
        } else {
            r.peak.active as f64 / first as f64
        };
        table.push(vec![
            r.build.clone().into(),
            r.events.into(),
            r.peak.requested.into(),
            r.peak.allocated.into(),
            r.peak.active.into(),
            r.last.active.into(),
            Cell::Float(r.internal_fragmentation(), 4),
            Cell::Float(r.external_fragmentation(), 4),
            Cell::Float(diff, 0),
            Cell::Float(ratio, 4),
            Cell::Float(r.at_peak.rounding_share(), 4),
            Cell::Float(r.at_peak.external_share(), 4),
            r.peak.mapped.into(),
            r.at_peak.rounding.into(),
            r.at_peak.empty_regions.into(),
            r.at_peak.large_pad.into(),
        ]);
    }
    table
}

/// One row per size class the trace used under this build, most bytes lost at the active
/// peak first; `top` keeps only the first rows.
pub fn class_table(title: &str, replay: &BuildReplay, top: Option<usize>) -> Table {
    let mut table = Table::new(
        title,
        &[
            "class",
            "size",
            "kind",
            "allocations",
            "peak_live_regions",
            "peak_slabs",
            "live_at_peak",
            "requested_bytes_at_peak",
            "active_bytes_at_peak",
            "rounding_bytes",
            "empty_region_bytes",
            "large_pad_bytes",
            "lost_bytes",
        ],
    );
    let rows = replay.classes_by_loss();
    for c in rows.into_iter().take(top.unwrap_or(usize::MAX)) {
        table.push(vec![
            (c.index as u64).into(),
            c.size.into(),
            c.kind.as_str().into(),
            c.allocations.into(),
            c.peak_live.into(),
            c.peak_slabs.into(),
            c.live_at_peak.into(),
            c.requested_at_peak.into(),
            c.active_at_peak.into(),
            c.rounding_at_peak.into(),
            c.empty_regions_at_peak.into(),
            c.large_pad_at_peak.into(),
            c.lost().into(),
        ]);
    }
    table
}

/// Every build's timeline in one table, with a leading build column.
pub fn timeline_table(title: &str, replays: &[BuildReplay]) -> Table {
    let mut table = Table::new(title, &timeline_columns());
    for r in replays {
        for p in &r.timeline {
            table.push(vec![
                r.build.clone().into(),
                p.event.into(),
                p.live_objects.into(),
                p.totals.requested.into(),
                p.totals.allocated.into(),
                p.totals.active.into(),
                p.totals.mapped.into(),
                p.slabs.created.into(),
                p.slabs.released.into(),
            ]);
        }
    }
    table
}

/// The timeline's columns, whatever the flags: the build, then
/// [`crate::sim::arena_replay::TIMELINE_COLUMNS`].
pub fn timeline_columns() -> Vec<&'static str> {
    let mut columns = vec!["build"];
    columns.extend_from_slice(crate::sim::arena_replay::TIMELINE_COLUMNS);
    columns
}
