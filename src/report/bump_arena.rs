//! The bump-arena scenario's section: its Markdown, CSV and charts, measured in this process
//! with jemalloc's defaults and again in a child process with page decay off (jemalloc reads
//! its decay settings once, at start-up). The child prints its result as JSON; the files are
//! written here only.

use super::{SectionOutput, Written};
use crate::charts::{write_chart, GroupedBars};
use crate::experiments::bump_arena::{
    bump_arena_table, run_scenario, BumpArenaResult, Measurement, Strategy, FOOTER_SIZE,
    MALLOC_OVERHEAD,
};
use crate::export::{write_atomic, Format, Markdown, TableFormat};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The index heading both runs are listed under.
pub const SECTION: &str = "Arena scenario (the second seed)";
/// File stems of the two runs.
const DEFAULTS_STEM: &str = "arena";
const NO_DECAY_STEM: &str = "arena-nodecay";
/// jemalloc's page decay switched off, for the child process.
const NO_DECAY_CONF: &str = "dirty_decay_ms:-1,muzzy_decay_ms:-1";

/// Writes `<stem>.md`, `<stem>.csv` and (when something was measured) the time and bytes
/// charts into `dir`; returns the files written.
pub fn write_files(
    result: &BumpArenaResult,
    dir: &Path,
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
    let charts_dir = dir.join("charts");
    std::fs::create_dir_all(&charts_dir)
        .with_context(|| format!("cannot create folder '{}'", charts_dir.display()))?;
    let md = dir.join(format!("{stem}.md"));
    let csv = dir.join(format!("{stem}.{}", Format::Csv.extension()));
    write_atomic(&md, markdown(result, command)?.as_bytes())?;
    write_atomic(
        &csv,
        Format::Csv.render(&bump_arena_table(result))?.as_bytes(),
    )?;
    let mut written = vec![md, csv];
    if !result.measurements.is_empty() {
        let (time, bytes) = charts(result, stem);
        written.extend(write_chart(&time, &charts_dir)?);
        written.extend(write_chart(&bytes, &charts_dir)?);
    }
    Ok(written)
}

/// Columns of [`bump_arena_table`] that are measured times.
const TIME_COLUMNS: [&str; 3] = ["build_ms", "reset_ms", "total_ms"];

/// The report's files for one run: everything (times included) under `timing/`, which is not
/// committed; with `bytes`, also `<stem>.md`, `<stem>.csv` and the bytes chart without any
/// time, which a rerun reproduces byte for byte.
fn write_report_files(
    result: &BumpArenaResult,
    dir: &Path,
    stem: &str,
    bytes: bool,
) -> Result<Vec<PathBuf>> {
    let command = "fragsim report";
    let timing = dir.join(super::TIMING_DIR);
    let timing_charts = timing.join("charts");
    std::fs::create_dir_all(&timing_charts)
        .with_context(|| format!("cannot create folder '{}'", timing_charts.display()))?;
    let mut written = vec![
        timing.join(format!("{stem}.md")),
        timing.join(format!("{stem}.csv")),
    ];
    write_atomic(&written[0], markdown(result, command)?.as_bytes())?;
    write_atomic(
        &written[1],
        Format::Csv.render(&bump_arena_table(result))?.as_bytes(),
    )?;
    let (time_chart, bytes_chart) = charts(result, stem);
    if !result.measurements.is_empty() {
        written.extend(write_chart(&time_chart, &timing_charts)?);
    }
    if bytes {
        let md = dir.join(format!("{stem}.md"));
        let csv = dir.join(format!("{stem}.csv"));
        write_atomic(&md, bytes_markdown(result, command, stem)?.as_bytes())?;
        let table = bump_arena_table(result).without_columns(&TIME_COLUMNS);
        write_atomic(&csv, Format::Csv.render(&table)?.as_bytes())?;
        written.extend([md, csv]);
        if !result.measurements.is_empty() {
            written.extend(write_chart(&bytes_chart, &dir.join("charts"))?);
        }
    }
    Ok(written)
}

/// The scenario measured in this process, with jemalloc's defaults.
pub(super) fn write_with_defaults(
    dir: &Path,
    options: &super::ReportOptions,
) -> Result<SectionOutput> {
    let result = run_scenario(options.bump_arena, options.bump_arena_runs, false, None)?;
    let paths = write_report_files(&result, dir, DEFAULTS_STEM, true)?;
    Ok(index_entries(&paths, dir, "jemalloc defaults"))
}

/// The scenario measured by `exe bump-arena --json` in a child process with decay off. The
/// child is stopped if the report is interrupted. Its bytes equal the first run's, so only
/// its times are written.
pub(super) fn write_without_decay(
    dir: &Path,
    exe: &Path,
    options: &super::ReportOptions,
) -> Result<SectionOutput> {
    let spec = options.bump_arena;
    let child = std::process::Command::new(exe)
        .env("_RJEM_MALLOC_CONF", NO_DECAY_CONF)
        .args(["bump-arena", "--json"])
        .args(["--vectors", &spec.vectors.to_string()])
        .args(["--elements", &spec.elements.to_string()])
        .args(["--elem-bytes", &spec.elem_bytes.to_string()])
        .args(["--runs", &options.bump_arena_runs.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run '{}'", exe.display()))?;
    let registration = crate::cleanup::stop_on_interrupt(child.id());
    let output = child
        .wait_with_output()
        .with_context(|| format!("cannot run '{}'", exe.display()))?;
    drop(registration);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        anyhow::bail!(
            "'fragsim bump-arena' with decay off failed: {}",
            stderr.lines().next().unwrap_or("no message")
        );
    }
    let result: BumpArenaResult = serde_json::from_slice(&output.stdout)
        .context("'fragsim bump-arena --json' printed no result")?;
    let paths = write_report_files(&result, dir, NO_DECAY_STEM, false)?;
    Ok(index_entries(&paths, dir, "jemalloc page decay off"))
}

/// Index entries for the files of one run.
fn index_entries(paths: &[PathBuf], dir: &Path, config: &str) -> SectionOutput {
    let what = |p: &PathBuf| -> &str {
        let timed = p.starts_with(dir.join(super::TIMING_DIR));
        match p.extension().and_then(|e| e.to_str()) {
            Some("md") if !timed => {
                "general allocator vs bump arena vs no-free arena: predicted and measured \
                 bytes (the same in every run; the times are under timing/)"
            }
            Some("md") => {
                "general allocator vs bump arena vs no-free arena: predicted and measured \
                 bytes, build and reset times (times vary run to run), ratios beside the seed's"
            }
            Some("csv") => "the same comparison as CSV",
            _ if p.to_string_lossy().contains("-time") => {
                "build and reset time per strategy (median; varies run to run)"
            }
            _ => "memory per strategy: ideal, predicted and measured usable bytes, active pages",
        }
    };
    SectionOutput::files(
        paths
            .iter()
            .map(|p| Written::at(dir, p, format!("{config}: {}", what(p))))
            .collect(),
    )
}

/// The committed `reports/arena.md`: predicted and measured bytes only (they do not change
/// from run to run); the times are in `timing/<stem>.md`.
fn bytes_markdown(r: &BumpArenaResult, command: &str, stem: &str) -> Result<String> {
    let mut out = String::from(
        "# Arena scenario: general allocator vs monotonic arena vs no-free arena (bytes)\n\n",
    );
    out.push_str(&format!(
        "Produced by `{command}`. The second seed builds {} vectors of {} x {}-byte elements inside an outer vector and resets them three ways: `Vec<Vec<T>>` under jemalloc; `bumpalo::collections::Vec` in a `bumpalo::Bump` with normal drops; and the same with the inner destructors skipped. This file has the byte counts, which a rerun reproduces exactly; the build and reset times vary from run to run and are in [`{}/{stem}.md`]({}/{stem}.md) (not committed).\n\n",
        r.spec.vectors, r.spec.elements, r.spec.elem_bytes, super::TIMING_DIR, super::TIMING_DIR
    ));
    let mut table = bump_arena_table(r).without_columns(&TIME_COLUMNS);
    table.title.clear();
    out.push_str(&Markdown.render(&table)?);
    let full = markdown(r, command)?;
    // The model's explanation and the chunk list are shared with the full report.
    if let Some(at) = full.find("\nUsable bytes:") {
        let end = full[at..].find("\n\n").map_or(full.len(), |e| at + e + 2);
        out.push_str(&full[at..end]);
    }
    let bad = r.mismatches();
    if bad.is_empty() {
        out.push_str("**Predicted usable bytes equal measured usable bytes for every strategy**, and bumpalo's own `allocated_bytes` equals the replayed chunk policy.\n");
    } else {
        let names: Vec<&str> = bad.iter().map(|s| s.name()).collect();
        out.push_str(&format!(
            "**Mismatch** between predicted and measured usable bytes for: {}.\n",
            names.join(", ")
        ));
    }
    if let Some(at) = full.find("\n## The arena's chunks") {
        out.push_str(&full[at..]);
    }
    Ok(out)
}

/// `reports/arena.md`: the table, how it was measured, the ratios beside the seed's.
pub fn markdown(r: &BumpArenaResult, command: &str) -> Result<String> {
    let mut out =
        String::from("# Arena scenario: general allocator vs monotonic arena vs no-free arena\n\n");
    out.push_str(&format!(
        "Produced by `{command}`. The second seed builds {} vectors of {} x {}-byte elements inside an outer vector and resets them three ways. Here: `Vec<Vec<T>>` under jemalloc; `bumpalo::collections::Vec` in a `bumpalo::Bump` with normal drops; and the same with the inner destructors skipped (`ManuallyDrop`) before the `Bump` is dropped. Times are medians of {} runs on this machine ({}: expect noise); they vary from run to run, the byte counts do not.\n\n",
        r.spec.vectors, r.spec.elements, r.spec.elem_bytes,
        r.measurements.first().map_or(0, |m| m.runs),
        r.cores.map_or("core count unknown".into(), |n| format!("{n} cores available"))
    ));
    let mut table = bump_arena_table(r);
    table.title.clear();
    out.push_str(&Markdown.render(&table)?);
    out.push_str("\nUsable bytes: predicted by the size-class model (general allocator: the outer array plus every inner block; arenas: bumpalo's chunks, replayed from its growth policy); measured as the usable bytes of a private jemalloc arena the building thread was bound to, with its thread cache off. Active bytes are that arena's `pactive` x page.\n\n");
    if let Some((dirty, muzzy)) = r.decay_ms {
        out.push_str(&format!(
            "jemalloc ran with `dirty_decay_ms:{dirty}` and `muzzy_decay_ms:{muzzy}`. The decay settings decide the time ratios: with decay off (`_RJEM_MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1`) freed pages stay mapped for the next build and the arena wins; with the defaults the arena's large chunks are mapped afresh and most of the arena's time goes to the kernel (see the README for both measurements).\n\n"
        ));
    }
    let bad = r.mismatches();
    if bad.is_empty() {
        out.push_str("**Predicted usable bytes equal measured usable bytes for every strategy**, and bumpalo's own `allocated_bytes` equals the replayed chunk policy.\n\n");
    } else {
        let names: Vec<&str> = bad.iter().map(|s| s.name()).collect();
        out.push_str(&format!(
            "**Mismatch** between predicted and measured usable bytes for: {}.\n\n",
            names.join(", ")
        ));
    }
    out.push_str(
        "## Ratios beside the seed's\n\n| ratio | fragsim (measured) | seed |\n|---|---:|---:|\n",
    );
    for (what, ours, seed) in r.ratios() {
        out.push_str(&format!("| {what} | {ours:.3} | about {seed:.1} |\n"));
    }
    if let Some(arena) = r.predictions.iter().find(|p| p.strategy == Strategy::Bump) {
        let chunks = &arena.chunk_requests;
        out.push_str(&format!(
            "\n## The arena's chunks\n\nbumpalo asked jemalloc for {} chunks, from {} B to {} B. Each request is a chunk plus its {}-byte footer, sized as if malloc kept {} bytes of header per allocation; jemalloc keeps none, so every chunk request ends {} bytes below a power of two or a page multiple and is served by that class, wasting those bytes once per chunk, not per vector. The arena's overhead over the ideal is the unused tail of the last chunk: chunks double, so up to half of the last one.\n",
            chunks.len(),
            chunks.first().copied().unwrap_or(0),
            chunks.last().copied().unwrap_or(0),
            FOOTER_SIZE,
            MALLOC_OVERHEAD,
            MALLOC_OVERHEAD
        ));
    }
    Ok(out)
}

/// Bar charts of time and bytes per strategy.
pub fn charts(r: &BumpArenaResult, stem: &str) -> (GroupedBars, GroupedBars) {
    let categories: Vec<String> = r
        .predictions
        .iter()
        .map(|p| p.strategy.name().to_string())
        .collect();
    let ms = |f: fn(&Measurement) -> std::time::Duration| -> Vec<f64> {
        r.predictions
            .iter()
            .map(|p| {
                r.measured(p.strategy)
                    .map_or(0.0, |m| f(m).as_secs_f64() * 1e3)
            })
            .collect()
    };
    let decay = match r.decay_ms {
        Some((dirty, _)) if dirty < 0 => ", jemalloc decay off",
        _ => ", jemalloc defaults",
    };
    let sizes = format!(
        "{} vectors of {} x {} B",
        crate::charts::thousands(r.spec.vectors),
        r.spec.elements,
        r.spec.elem_bytes
    );
    let workload = format!("{sizes}{decay}");
    let time = GroupedBars {
        name: format!("{stem}-time"),
        title: format!("Build and reset time, {workload} (median)"),
        y_desc: "milliseconds".into(),
        categories: categories.clone(),
        series: vec![
            ("build".into(), ms(|m| m.build)),
            ("reset".into(), ms(|m| m.reset)),
        ],
        decimals: 1,
    };
    let mib = |v: u64| v as f64 / (1u64 << 20) as f64;
    let bytes = GroupedBars {
        name: format!("{stem}-bytes"),
        // Bytes do not depend on the decay setting.
        title: format!("Memory, {sizes}"),
        y_desc: "MiB".into(),
        categories,
        series: vec![
            (
                "ideal".into(),
                r.predictions.iter().map(|p| mib(p.ideal)).collect(),
            ),
            (
                "predicted usable".into(),
                r.predictions.iter().map(|p| mib(p.usable)).collect(),
            ),
            (
                "measured usable".into(),
                r.predictions
                    .iter()
                    .map(|p| {
                        r.measured(p.strategy)
                            .map_or(0.0, |m| mib(m.usage.allocated))
                    })
                    .collect(),
            ),
            (
                "measured active pages".into(),
                r.predictions
                    .iter()
                    .map(|p| r.measured(p.strategy).map_or(0.0, |m| mib(m.usage.active)))
                    .collect(),
            ),
        ],
        decimals: 0,
    };
    (time, bytes)
}
