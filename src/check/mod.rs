//! The models beside the real allocator: each comparison runs a model (`sim`'s one arena or
//! `process`'s whole process) as an engine consumer and reads the live jemalloc through
//! [`crate::live`]'s bindings, in this process or in a child that replays the same trace
//! (`arena_child.rs`, the baton child of `baton.rs`). `live` itself imports no model.

/// The in-memory variant of a live replay's trace, from a slice or a `Vec` of its items (a
/// test or a generated trace passes either): `from_in_memory!(Trace, Item, Variant)`.
macro_rules! from_in_memory {
    ($trace:ident, $item:ty, $variant:ident) => {
        impl<'a> From<&'a [$item]> for $trace<'a> {
            fn from(items: &'a [$item]) -> Self {
                $trace::$variant(items)
            }
        }

        impl<'a> From<&'a Vec<$item>> for $trace<'a> {
            fn from(items: &'a Vec<$item>) -> Self {
                $trace::$variant(items)
            }
        }
    };
}

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
