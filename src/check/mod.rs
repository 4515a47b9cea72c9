//! The models beside the real allocator: each comparison runs a model (`sim`'s one arena or
//! `process`'s whole process) as an engine consumer and reads the live jemalloc through
//! [`crate::live`]'s bindings, in this process or in a child that replays the same trace
//! (`arena_child.rs`, the baton child of `baton.rs`). `live` itself imports no model.

mod arena_child;
pub(crate) mod arena_replay;
mod baton;
mod baton_meta;
mod baton_ops;
pub(crate) mod clocked_child;
pub(crate) mod decay_compare;
mod live_arena;
pub(crate) mod process;
mod process_child;
mod process_line;
mod process_trace;
pub(crate) mod replayed_clock;
pub(crate) mod saved_band;
pub(crate) mod snapshot_line;

pub use arena_replay::replay_compare;
pub use arena_replay::replay_validation;
pub use arena_replay::LiveAllocator;
pub use arena_replay::LiveArena;
pub use arena_replay::LiveOptions;
pub use decay_compare::compare_on_clock;
pub use decay_compare::ErrorSummary;
pub use process::compare_process_live;
pub use process::ProcessAllocator;
pub use snapshot_line::parse_snapshot;

pub(crate) use baton::manual_arena;
