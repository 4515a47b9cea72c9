//! One run of the scenario, predicted and measured.

use super::{header_bytes, measure, predict, BumpArenaResult, BumpArenaSpec};
use crate::live::{read_isize, LiveBuild};
use crate::sizeclass::{AllocatorConfig, SizeClasses};
use anyhow::Result;

/// Predicts, measures (unless `model_only`), and returns both.
/// `model` is the build to predict for; `None` derives it from the running jemalloc.
pub fn run_scenario(
    spec: BumpArenaSpec,
    runs: usize,
    model_only: bool,
    model: Option<AllocatorConfig>,
) -> Result<BumpArenaResult> {
    spec.validate()?;
    let config = match model {
        Some(config) => config,
        None => LiveBuild::running_config()?,
    };
    let classes = SizeClasses::new(config)?;
    let (std_header, bump_header) = header_bytes();
    let predictions = predict(&classes, &spec, std_header, bump_header)?;
    let measurements = if model_only {
        Vec::new()
    } else {
        measure(&spec, runs)?
    };
    let decay_ms = match (
        read_isize("opt.dirty_decay_ms"),
        read_isize("opt.muzzy_decay_ms"),
    ) {
        (Ok(dirty), Ok(muzzy)) => Some((dirty, muzzy)),
        _ => None,
    };
    Ok(BumpArenaResult {
        spec,
        model: config.label(),
        predictions,
        measurements,
        decay_ms,
        cores: std::thread::available_parallelism().ok().map(usize::from),
    })
}
