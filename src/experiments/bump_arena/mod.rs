//! The second seed's scenario: M small vectors built and reset with the general allocator,
//! with a bump arena, and with a bump arena whose objects are never individually freed.
//! The memory side is predicted (jemalloc classes + bumpalo's chunk policy) and measured;
//! the time side is measured.

mod bump;
mod model;
mod report;
mod run;
mod workload;

pub use bump::{BumpReplay, FOOTER_SIZE, MALLOC_OVERHEAD};
pub use model::{predict, BumpArenaSpec, Prediction, Strategy};
pub use report::{
    bump_arena_charts, bump_arena_markdown, bump_arena_table, BumpArenaResult, SEED_RESET_RATIO,
    SEED_TOTAL_RATIO,
};
pub use run::{run_scenario, write_bump_arena};
pub use workload::{build_and_reset, header_bytes, measure, Measurement};
