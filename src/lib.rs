//! fragsim: what a data-structure layout really costs under jemalloc's size classes, and
//! what changes when its arrays are allocated together or apart.
//!
//! The pipeline reads in the module names: [`sizeclass`] -> [`layout`] -> [`experiments`]
//! (the sweeps, the seed's model, the bump-arena scenario) -> [`report`], written through
//! [`export`] (tables) and [`charts`]. [`live`] binds the running jemalloc; [`validate`]
//! checks the model against it. Only [`cli`] prints.

pub mod charts;
pub mod cli;
pub mod error;
pub mod experiments;
pub mod export;
pub mod layout;
pub mod live;
pub mod random;
pub mod report;
pub mod sizeclass;
pub mod trace;
pub mod validate;

// Every binary, test and benchmark built from this crate allocates through jemalloc, so the
// live measurements see the allocator the model describes.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
