//! What-if analysis of a real program's heap: one allocation trace replayed under several
//! jemalloc builds, each peak split into requested bytes, size-class rounding and slab
//! fragmentation, per size class and over time.
//!
//! [`parse_builds`] checks the list of builds; [`replay_builds`] replays a trace under each in
//! parallel through any [`WhatifModel`]; [`whatif_table`], [`class_table`] and
//! [`timeline_table`] turn the results into tables, and `figures` into chart data.

mod arena_model;
mod builds;
pub(crate) mod figures;
mod ledger;
mod multi;
mod replay;
mod tables;

pub(crate) use builds::modify_builds;
pub use builds::parse_builds;
pub use builds::Build;
pub use multi::replay_builds;
pub use replay::replay_build;
pub use replay::BuildReplay;
pub use replay::ClassRow;
pub use replay::ReplayOptions;
pub use replay::SlabTurnover;
pub use replay::Totals;
pub use replay::WhatifModel;
pub(crate) use replay::{BuildRun, ReplayError};
pub use tables::class_table;
pub(crate) use tables::timeline_columns;
pub use tables::timeline_table;
pub use tables::whatif_table;

/// The builds the report compares: the list, in its order.
pub(crate) const REPORT_BUILDS: &str = "default,quantum8,page16k,page64k,5.3.1";

/// Timeline points a chart needs: enough for a smooth line, few enough for a small file.
pub(crate) const CHART_POINTS: u64 = 2000;

/// The sampling step that gives about `CHART_POINTS` points over `events` events.
pub fn chart_every(events: u64) -> u64 {
    events.div_ceil(CHART_POINTS).max(1)
}
