//! Bindings to the running jemalloc: `mallctl` reads, private arenas and binding a thread to
//! one, `nallocx`. Nothing here decides anything; [`crate::validate`] compares the model
//! with what these read.

mod arena_child;
pub mod arena_replay;
mod baton;
mod build;
pub mod ctl;
pub mod decay;
pub mod decay_band;
pub mod decay_compare;
pub mod process;
pub mod relay;
pub mod replayed_clock;

pub use baton::manual_arena;
pub use build::{LiveBin, LiveBuild, LARGE_CLASS_CAP};
pub use ctl::{
    in_private_arena, nallocx, read_isize, refresh_stats, Api, ArenaUsage, PrivateArena,
};
