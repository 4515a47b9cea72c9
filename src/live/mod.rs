//! Live measurement: the running jemalloc checked against the model.

mod build;
mod ctl;
pub mod replay;
mod validate;

pub use build::{LiveBin, LiveBuild, LARGE_CLASS_CAP};
pub use ctl::{nallocx, read_isize, refresh_stats, ArenaUsage, PrivateArena, ThreadBinding};
pub use validate::{
    log_uniform_requests, validate, validation_markdown, validation_table, Check, F14Measurement,
    ValidateOptions, Validation,
};
