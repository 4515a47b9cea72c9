//! fragsim: how much memory a data structure, or a whole program, really costs under
//! jemalloc (size-class rounding, partly empty slabs, thread caches, pages), which code and
//! which setting cause the waste, and what changes with another layout, build or allocator.
//!
//! A program's allocations become a trace ([`record`] preloads the recorder; [`trace`]
//! reads, writes and imports traces). [`analysis`] runs any number of ways of looking at
//! one trace in one pass of the [`engine`]: one arena ([`sim`], any build of [`sizeclass`];
//! several builds at once in [`whatif`]), the whole process ([`process`]: thread caches,
//! arenas, threads, decay), and what is built on them ([`blame`]: waste by call site;
//! [`advise`]: run-time settings ranked). [`check`] replays the same trace through the real
//! jemalloc, driven through [`live`]'s bindings, and compares; [`measure`] runs other
//! allocators. Layouts without a trace go [`layout`] -> [`containers`] / [`experiments`].
//! Results leave through [`export`] (tables, profiles), [`charts`] and [`report`]. Only
//! [`cli`] prints. ARCHITECTURE.md is the map, with the import rules `tests/architecture.rs`
//! keeps.
//!
//! # The public surface
//!
//! Each module below is a façade: its submodules are the crate's own, and what it offers
//! is declared (or re-exported with `pub use`) in its root file, so a user's path is always
//! `fragsim::module::Item`, one level deep. The routing what-if (`route`) and the HTML page
//! (`view`) are the program's alone (`fragsim advise --routes`, `fragsim view`), and so are
//! the named choices, the temporary-file registry and the progress observer.
//! `tests/architecture.rs` keeps it so: no `pub mod` outside this file.

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
