//! The second seed's scenario: M small vectors built and reset with the general allocator,
//! with a bump arena, and with a bump arena whose objects are never individually freed.
//! The memory side is predicted (jemalloc classes + bumpalo's chunk policy) and measured;
//! the time side is measured. The report's text and charts of a run are in
//! `crate::report::bump_arena`.

mod bump;
mod model;
mod result;
mod run;
pub(crate) mod timing;
mod workload;

pub use bump::{BumpReplay, FOOTER_SIZE, MALLOC_OVERHEAD};
pub use model::{predict, BumpArenaSpec, Prediction, Strategy};
pub use result::{bump_arena_table, BumpArenaResult};
pub use run::{check_fits_in_memory, run_scenario};
pub use workload::{build_and_reset, header_bytes, measure, Measurement};
