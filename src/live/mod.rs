//! Bindings to the running jemalloc: `mallctl` reads, private arenas and binding a thread to
//! one, `nallocx`. Nothing here decides anything; [`crate::validate`] compares the model
//! with what these read.

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
mod arena_mibs;
pub mod arena_replay;
mod baton;
mod baton_meta;
mod baton_ops;
mod build;
pub mod ctl;
pub mod decay;
pub mod decay_band;
pub mod decay_compare;
mod live_arena;
pub mod process;
mod process_child;
mod process_line;
mod process_trace;
pub mod relay;
pub mod replayed_clock;
pub mod snapshot_line;

pub use baton::manual_arena;
pub use build::{LiveBin, LiveBuild, LARGE_CLASS_CAP};
pub use ctl::{
    in_private_arena, nallocx, read_isize, refresh_stats, Api, ArenaUsage, PrivateArena,
};
