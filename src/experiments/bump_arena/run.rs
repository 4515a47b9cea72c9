//! One run of the scenario, predicted and measured, and its files.

use super::{
    bump_arena_charts, bump_arena_markdown, bump_arena_table, header_bytes, measure, predict,
    BumpArenaResult, BumpArenaSpec,
};
use crate::charts::write_chart;
use crate::export::{write_atomic, Csv, TableFormat};
use crate::live::{read_isize, LiveBuild};
use crate::sizeclass::{AllocatorConfig, SizeClasses};
use anyhow::{Context, Result};
use std::path::PathBuf;

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
        None => LiveBuild::read()?.config()?,
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
    })
}

/// Writes `<stem>.md`, `<stem>.csv` and the two charts into `dir`; returns the files written.
pub fn write_bump_arena(
    result: &BumpArenaResult,
    dir: &std::path::Path,
    stem: &str,
    command: &str,
) -> Result<Vec<PathBuf>> {
    if stem.is_empty()
        || !stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        anyhow::bail!("bad name '{stem}': use letters, digits, '-' and '_'");
    }
    std::fs::create_dir_all(dir.join("charts"))
        .with_context(|| format!("cannot create folder '{}'", dir.join("charts").display()))?;
    let md = dir.join(format!("{stem}.md"));
    let csv = dir.join(format!("{stem}.csv"));
    write_atomic(&md, bump_arena_markdown(result, command)?.as_bytes())?;
    write_atomic(&csv, Csv.render(&bump_arena_table(result))?.as_bytes())?;
    let mut written = vec![md, csv];
    if !result.measurements.is_empty() {
        let (time, bytes) = bump_arena_charts(result, stem);
        written.extend(write_chart(&time, &dir.join("charts"))?);
        written.extend(write_chart(&bytes, &dir.join("charts"))?);
    }
    Ok(written)
}
