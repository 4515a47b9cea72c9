//! The containers section of `fragsim report`: tables, charts and a short summary.

use super::compare::{compare_containers, split_ratio_by_value_size, ContainerRun};
use super::core::{ElementType, KeyOrder};
use super::tables::{comparison_table, split_steps_table, verdict_table};
use crate::charts::containers::{Line, LinesChart};
use crate::charts::write_chart;
use crate::export::{write_atomic, Csv, Markdown, Table, TableFormat};
use crate::sizeclass::SizeClasses;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The section's defaults: 8-byte keys, 24-byte values, one million elements.
pub(crate) const SECTION_KEY: u64 = 8;
pub(crate) const SECTION_VALUE: u64 = 24;
pub(crate) const SECTION_COUNT: u64 = 1_000_000;
/// Mapped-type sizes of the split-vs-unified chart.
pub(crate) const CHART_VALUE_SIZES: [u64; 14] =
    [4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128, 192, 256];

/// What [`write_section`] wrote.
#[derive(Clone, Debug)]
pub struct ContainerSection {
    pub files: Vec<PathBuf>,
    /// A few lines of Markdown for the report's index (links relative to the folder).
    pub summary_markdown: String,
}

/// Writes the comparison at N = 1,000,000 for 8-byte keys and 24-byte values (tables as CSV
/// and Markdown, the split-vs-unified steps and verdict, two charts) into `dir`.
pub fn write_section(dir: &Path, classes: &SizeClasses) -> Result<ContainerSection> {
    std::fs::create_dir_all(dir)?;
    let key = ElementType::new(SECTION_KEY, 8)?;
    let value = ElementType::new(SECTION_VALUE, 8)?;
    let runs = compare_containers(
        key,
        Some(value),
        SECTION_COUNT,
        KeyOrder::Ascending,
        classes,
    )?;
    let suffix = format!(
        "key {key}, value {value}, N = {SECTION_COUNT}, {}",
        crate::sizeclass::build_title(classes.config())
    );
    let summary = comparison_table(format!("Containers at N: {suffix}"), &runs);
    let verdict = verdict_table(format!("Split vs unified verdict: {suffix}"), &runs);
    let steps = split_steps_table(format!("Split vs unified per growth step: {suffix}"), &runs);
    let mut files = Vec::new();
    files.extend(write_table(dir, "containers-summary", &summary)?);
    files.extend(write_table(dir, "containers-split-verdict", &verdict)?);
    let steps_path = dir.join("containers-split-steps.csv");
    write_atomic(&steps_path, Csv.render(&steps)?.as_bytes())?;
    files.push(steps_path);
    files.extend(write_charts(dir, &runs, key, SECTION_COUNT, classes)?);
    Ok(ContainerSection {
        files,
        summary_markdown: summary_markdown(&summary, &verdict)?,
    })
}

fn write_table(dir: &Path, stem: &str, table: &Table) -> Result<Vec<PathBuf>> {
    Ok(crate::export::write_csv_and_markdown(dir, stem, table)?
        .into_iter()
        .map(|file| dir.join(file))
        .collect())
}

fn summary_markdown(summary: &Table, verdict: &Table) -> Result<String> {
    Ok(format!(
        "{}\n{}\nCharts: `containers-bytes-per-element.png` (usable bytes per element against \
         N for the hash tables) and `containers-split-ratio-by-value-size.png` (one \
         allocation over two, geometric mean over the growth steps, per value size).\n",
        Markdown.render(summary)?,
        Markdown.render(verdict)?
    ))
}

/// The two charts for `runs` (grown with samples) and the value-size sweep up to `count`.
pub(crate) fn write_charts(
    dir: &Path,
    runs: &[ContainerRun],
    key: ElementType,
    count: u64,
    classes: &SizeClasses,
) -> Result<Vec<PathBuf>> {
    let lines = runs
        .iter()
        .filter(|r| r.kind.is_hash_table())
        .map(|r| Line {
            label: r.kind.name().to_string(),
            points: r
                .growth
                .samples
                .iter()
                .map(|s| (s.elements as f64, s.live.usable as f64 / s.elements as f64))
                .collect(),
        })
        .collect();
    let element = runs
        .first()
        .map(|r| format!("{} B elements", r.element.size))
        .unwrap_or_default();
    // "8 B keys aligned to 8", not "key 8:8": the chart stands alone in the report.
    let keys = format!("{} B keys aligned to {}", key.size, key.align);
    let per_element = LinesChart {
        name: "containers-bytes-per-element".into(),
        title: format!(
            "Usable bytes per element while growing ({keys}, {element}), {}",
            crate::sizeclass::build_title(classes.config())
        ),
        x_label: "elements N (log scale)".into(),
        y_label: "usable bytes / element".into(),
        log_x: true,
        lines,
        reference_y: None,
        y_range: None,
        // Eight sawtooths cross each other at every doubling: one panel each.
        panels: true,
    };
    let ratio_lines = split_ratio_by_value_size(key, &CHART_VALUE_SIZES, count, classes)?
        .into_iter()
        .map(|(kind, points)| Line {
            label: kind.name().to_string(),
            points: points.into_iter().map(|(s, r)| (s as f64, r)).collect(),
        })
        .collect();
    let ratio = LinesChart {
        name: "containers-split-ratio-by-value-size".into(),
        title: format!(
            "One allocation over two: usable bytes (geometric mean, growth to {}, {} B keys)",
            crate::export::human::thousands(count),
            key.size
        ),
        x_label: "value size in bytes (log scale)".into(),
        y_label: "unified / split usable bytes".into(),
        log_x: true,
        lines: ratio_lines,
        reference_y: Some(1.0),
        y_range: None,
        panels: false,
    };
    let mut files = write_chart(&per_element, dir)?;
    files.extend(write_chart(&ratio, dir)?);
    Ok(files)
}
