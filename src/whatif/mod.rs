//! What-if analysis of a real program's heap: one allocation trace replayed under several
//! jemalloc builds, each peak split into requested bytes, size-class rounding and slab
//! fragmentation, per size class and over time.
//!
//! [`parse_builds`] checks the list of builds; [`replay_builds`] replays a trace under each in
//! parallel through any [`WhatifModel`]; [`whatif_table`], [`class_table`] and
//! [`timeline_table`] turn the results into tables, and [`figures`] into chart data.

mod builds;
pub(crate) mod figures;
mod ledger;
mod multi;
mod replay;
mod source;
mod tables;

pub use builds::{modify_builds, parse_builds, Build, BuildListError};
pub use ledger::LedgerError;
pub use multi::replay_builds;
pub use replay::{
    replay_build, BuildReplay, BuildRun, ClassRow, PeakBreakdown, ReplayError, ReplayOptions,
    SlabTurnover, TimelinePoint, Totals, WhatifModel, PROGRESS_STEP,
};
pub use source::{open_events, replay_trace, trace_events, EventStream};
pub use tables::{class_table, timeline_columns, timeline_table, whatif_table, WHATIF_COLUMNS};

/// The builds the report compares: the list, in its order.
pub(crate) const REPORT_BUILDS: &str = "default,quantum8,page16k,page64k,5.3.1";

/// Timeline points a chart needs: enough for a smooth line, few enough for a small file.
pub const CHART_POINTS: u64 = 2000;

/// The sampling step that gives about [`CHART_POINTS`] points over `events` events.
pub fn chart_every(events: u64) -> u64 {
    events.div_ceil(CHART_POINTS).max(1)
}
