//! fragsim: what a data-structure layout really costs under jemalloc's size classes, and
//! what changes when its arrays are allocated together or apart.
//!
//! The pipeline reads in the module names: [`sizeclass`] -> [`layout`] -> [`experiments`]
//! (the sweeps, the seed's model, the bump-arena scenario) -> [`report`], written through
//! [`export`] (tables) and [`charts`]. [`live`] binds the running jemalloc; [`validate`]
//! checks the model against it. Only [`cli`] prints.

pub mod advise;
pub mod blame;
pub mod charts;
pub mod choice;
pub mod cleanup;
pub mod cli;
pub mod containers;
pub mod engine;
pub mod error;
pub mod experiments;
pub mod export;
pub mod global;
pub mod layout;
pub mod live;
pub mod measure;
pub mod process;
pub mod progress;
pub mod random;
pub mod record;
pub mod report;
pub mod route;
pub mod sim;
pub mod sizeclass;
pub mod trace;
pub mod validate;
pub mod view;
pub mod whatif;

// No #[global_allocator] here: see `global` (binaries, tests and benchmarks that measure
// jemalloc install it with `fragsim::use_jemalloc!()`).
