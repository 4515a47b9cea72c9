//! What fragsim computes and measures with the size-class model: the F14 sweeps and the
//! seed's own model ([`sweep`]), and the second seed's scenario of vectors built in a bump
//! arena against the general allocator ([`bump_arena`]).

pub(crate) mod bump_arena;
pub(crate) mod sweep;

pub use bump_arena::timing::{
    parse_cxx_lines, run_cxx, run_one, stats_table, summarize, summarize_cxx, times_markdown,
    timing_section, ArenaPages, ChildReport, JemallocInfo, JemallocSetting, MatrixOptions,
    RunSample, TimedStrategy, TimingRun, Workload, RATIO_RANGES_MD,
};
pub use bump_arena::{
    build_and_reset, bump_arena_table, header_bytes, measure, predict, run_scenario,
    BumpArenaSpec, BumpReplay, Strategy,
};
pub use sweep::{parse_seed_table, physical_sweep, seed_model_ratio, seed_rows, SizeRange, SweepSpec};
