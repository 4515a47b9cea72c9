//! What fragsim computes and measures with the size-class model: the F14 sweeps and the
//! seed's own model (`sweep`), and the second seed's scenario of vectors built in a bump
//! arena against the general allocator (`bump_arena`).

pub(crate) mod bump_arena;
pub(crate) mod sweep;

pub use bump_arena::build_and_reset;
pub use bump_arena::bump_arena_table;
pub use bump_arena::header_bytes;
pub use bump_arena::measure;
pub use bump_arena::predict;
pub use bump_arena::run_scenario;
pub use bump_arena::timing::parse_cxx_lines;
pub use bump_arena::timing::run_cxx;
pub use bump_arena::timing::run_one;
pub use bump_arena::timing::stats_table;
pub use bump_arena::timing::summarize;
pub use bump_arena::timing::summarize_cxx;
pub use bump_arena::timing::times_markdown;
pub use bump_arena::timing::timing_section;
pub use bump_arena::timing::ArenaPages;
pub use bump_arena::timing::ChildReport;
pub use bump_arena::timing::JemallocInfo;
pub use bump_arena::timing::JemallocSetting;
pub use bump_arena::timing::MatrixOptions;
pub use bump_arena::timing::RunSample;
pub use bump_arena::timing::TimedStrategy;
pub use bump_arena::timing::TimingRun;
pub use bump_arena::timing::Workload;
pub use bump_arena::timing::RATIO_RANGES_MD;
pub use bump_arena::BumpArenaSpec;
pub use bump_arena::BumpReplay;
pub use bump_arena::Strategy;
pub use sweep::parse_seed_table;
pub use sweep::physical_sweep;
pub use sweep::seed_model_ratio;
pub use sweep::seed_rows;
pub use sweep::SizeRange;
pub use sweep::SweepSpec;
