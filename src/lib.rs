//! fragsim: what a data-structure layout really costs under jemalloc's size classes, and
//! what changes when its arrays are allocated together or apart.
//!
//! The pipeline reads in the module names: [`sizeclass`] -> [`layout`] -> [`sweep`] ->
//! [`export`] (tables) and [`charts`]; [`live`] measures the real allocator beside it.

pub mod arena;
pub mod bump_timing;
pub mod charts;
pub mod cli;
pub mod export;
pub mod layout;
pub mod live;
pub mod report;
pub mod sizeclass;
pub mod sweep;
pub mod trace;

// Every binary, test and benchmark built from this crate allocates through jemalloc, so the
// live measurements see the allocator the model describes.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
