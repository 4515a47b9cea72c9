//! Sweeps: a layout priced over ranges of value sizes and table sizes.

mod physical;
mod range;
mod seed;

pub use physical::{physical_sweep, physical_table, PhysicalRow, SweepSpec};
pub use range::SizeRange;
pub use seed::{parse_seed_table, seed_comparison_table, seed_model_ratio, seed_rows, SeedRow};
