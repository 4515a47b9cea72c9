//! fragsim: how much memory a data structure, or a whole program, really costs under
//! jemalloc (size-class rounding, partly empty slabs, thread caches, pages), which code and
//! which setting cause the waste, and what changes with another layout, build or allocator.
//!
//! A program's allocations become a trace ([`record`] preloads the recorder; [`trace`]
//! reads, writes and imports traces). [`engine`] feeds one reading of a trace to models:
//! one arena ([`sim`], any build of [`sizeclass`]; several builds at once in [`whatif`]),
//! the whole process ([`process`]: thread caches, arenas, threads, decay), and the analyses
//! built on them ([`blame`]: waste by call site; [`route`]: dedicated arenas;
//! [`advise`]: run-time settings ranked). [`live`] replays the same trace through the
//! real jemalloc and compares; [`measure`] runs other allocators. Layouts without a trace
//! go [`layout`] -> [`containers`] / [`experiments`]. Results leave through [`export`]
//! (tables, profiles), [`charts`], [`view`] (one HTML page) and [`report`]. Only [`cli`]
//! prints. ARCHITECTURE.md is the map, with the import rules `tests/architecture.rs` keeps.

pub mod advise;
pub mod analysis;
pub mod blame;
pub mod charts;
pub mod check;
pub(crate) mod choice;
pub(crate) mod cleanup;
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
pub(crate) mod progress;
pub mod random;
pub mod record;
pub mod report;
pub(crate) mod route;
pub mod sim;
pub mod sizeclass;
pub mod trace;
pub mod validate;
pub(crate) mod view;
pub mod whatif;

// No #[global_allocator] here: see `global` (binaries, tests and benchmarks that measure
// jemalloc install it with `fragsim::use_jemalloc!()`).
