//! One run of the scenario, predicted and measured.

use super::{header_bytes, measure, predict, BumpArenaResult, BumpArenaSpec, Prediction};
use crate::error::InputError;
use crate::live::{read_isize, LiveBuild};
use crate::sizeclass::{AllocatorConfig, SizeClasses};
use anyhow::Result;

/// Predicts, measures (unless `model_only`; the times from `runs` timed runs per strategy,
/// none when `runs` is 0), and returns both.
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
        check_memory(&predictions)?;
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
        model: crate::sizeclass::build_name(&config),
        predictions,
        measurements,
        decay_ms,
        cores: std::thread::available_parallelism().ok().map(usize::from),
    })
}

/// Refuses a measurement whose largest strategy (its predicted active pages) would not fit in
/// the memory available now.
fn check_memory(predictions: &[Prediction]) -> Result<(), InputError> {
    let needed = predictions.iter().map(|p| p.active).max().unwrap_or(0);
    match available_memory() {
        Some(available) if needed > available => {
            Err(InputError::NotEnoughMemory { needed, available })
        }
        _ => Ok(()),
    }
}

/// Checks, before any other work, that measuring `spec` fits in memory (for callers that
/// run the scenario later, e.g. the report).
pub fn check_fits_in_memory(spec: &BumpArenaSpec) -> Result<()> {
    spec.validate()?;
    let classes = SizeClasses::new(LiveBuild::running_config()?)?;
    let (std_header, bump_header) = header_bytes();
    check_memory(&predict(&classes, spec, std_header, bump_header)?)?;
    Ok(())
}

/// `MemAvailable` from /proc/meminfo (Linux), in bytes.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
