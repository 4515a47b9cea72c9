//! fragsim: what a data-structure layout really costs under jemalloc's size classes, and
//! what changes when its arrays are allocated together or apart.
//!
//! The pipeline reads in the module names: [`sizeclass`] -> [`layout`] -> [`sweep`] ->
//! [`export`] (tables) and [`charts`]; [`live`] measures the real allocator beside it.

pub mod arena;
pub mod charts;
pub mod cli;
pub mod export;
pub mod global;
pub mod layout;
pub mod live;
pub mod report;
pub mod sim;
pub mod sizeclass;
pub mod sweep;
pub mod trace;

// No #[global_allocator] here: see `global` (binaries, tests and benchmarks that measure
// jemalloc install it with `fragsim::use_jemalloc!()`).
