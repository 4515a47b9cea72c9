//! The bump-arena scenario's section. The memory side (exact bytes) is measured in this
//! process; the time side by the timing run (`experiments::bump_arena::timing`): one child
//! process per (jemalloc setting, strategy), cold and warm apart, beside the seed's C++ program.
//! Committed files get bytes, page faults in thousands and the ratio ranges recorded over
//! several runs; this run's times go under `timing/`, which is not committed.

use super::{SectionOutput, Written};
use crate::charts::{write_chart, GroupedBars};
use crate::experiments::bump_arena::timing::{
    faults_chart, measure_all, summarize, time_chart, times_markdown, timing_section,
    MatrixOptions, TimingRun,
};
use crate::experiments::bump_arena::{
    bump_arena_table, run_scenario, BumpArenaResult, Strategy, FOOTER_SIZE, MALLOC_OVERHEAD,
};
use crate::export::{write_atomic, Format, Markdown, Table, TableFormat};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The index heading.
pub(crate) const SECTION: &str = "Arena scenario (the second seed)";
/// File stem of the scenario's files.
const STEM: &str = "arena";
/// Builds of the reused arena's timing child (at least): it grows in builds 2 and 3.
pub(crate) const REUSED_RUNS: usize = 6;
/// Subfolder for measured times: listed in .gitignore, never committed (times differ from run
/// to run; the committed files must not).
pub(crate) const TIMES_DIR: &str = super::TIMING_DIR;

/// The scenario's table without its time columns (they go to the times file).
fn without_times(table: &Table) -> Table {
    let keep: Vec<usize> = (0..table.columns.len())
        .filter(|&i| !table.columns[i].ends_with("_ms"))
        .collect();
    Table {
        title: table.title.clone(),
        columns: keep.iter().map(|&i| table.columns[i].clone()).collect(),
        rows: table
            .rows
            .iter()
            .map(|row| keep.iter().map(|&i| row[i].clone()).collect())
            .collect(),
    }
}

/// Writes `<stem>.md`, `<stem>.csv`, the bytes chart and (with a timing run) the page-fault
/// chart into `dir`, and this run's times into `dir/timing/`; returns the files written.
pub(crate) fn write_files(
    result: &BumpArenaResult,
    timing: Option<&TimingRun>,
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
    let times_dir = dir.join(TIMES_DIR);
    for folder in [&charts_dir, &times_dir.join("charts")] {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create folder '{}'", folder.display()))?;
    }
    let md = dir.join(format!("{stem}.md"));
    let csv = dir.join(format!("{stem}.{}", Format::Csv.extension()));
    write_atomic(&md, markdown(result, timing, command)?.as_bytes())?;
    let table = without_times(&bump_arena_table(result));
    write_atomic(&csv, Format::Csv.render(&table)?.as_bytes())?;
    let mut written = vec![md, csv];
    if !result.measurements.is_empty() {
        written.extend(write_chart(&bytes_chart(result, stem), &charts_dir)?);
    }
    if let Some(run) = timing {
        let summaries = summarize(&run.children);
        // The fewest warm faults of a general-allocator build move with decay on the wall
        // clock (the committed table says so), so the chart is this run's.
        let faults = faults_chart(&summaries, &format!("{stem}-faults"));
        written.extend(write_chart(&faults, &times_dir.join("charts"))?);
        let times = times_dir.join(format!("{stem}-times.md"));
        let mut text = times_markdown(run, command)?;
        let timed = result.measurements.iter().any(|m| m.runs > 0);
        let mut in_process = bump_arena_table(result);
        let heading = if timed {
            "The in-process run (memory side; times are medians after one untimed run, cold and warm mixed)"
        } else {
            in_process = without_times(&in_process);
            "The in-process run (memory side only: the builds are timed in the child processes above)"
        };
        in_process.title.clear();
        text.push_str(&format!(
            "## {heading}\n\n{}",
            Markdown.render(&in_process)?
        ));
        write_atomic(&times, text.as_bytes())?;
        written.push(times);
        let time = time_chart(&summaries, &format!("{stem}-time"));
        written.extend(write_chart(&time, &times_dir.join("charts"))?);
    }
    Ok(written)
}

/// The scenario's memory side, in this process: exact bytes of private arenas, so it may run
/// beside other shared lanes ([`super::job::Load::Shared`]); [`write_section`] takes it.
/// Memory only when the builds are timed in child processes (timing them here too would add a
/// fifth of the section's work for a table only the uncommitted times file showed); without
/// the children, the builds are timed here (then run it alone).
pub(super) fn memory(options: &super::ReportOptions) -> Result<BumpArenaResult> {
    let runs = if timed(options) {
        0
    } else {
        options.bump_arena_runs
    };
    run_scenario(options.bump_arena, runs, false, None)
}

/// Whether the builds are timed in child processes: the executable is known and the elements
/// are the children's 4 bytes.
pub(super) fn timed(options: &super::ReportOptions) -> bool {
    options.fragsim_exe.is_some() && options.bump_arena.elem_bytes == 4
}

/// The scenario: memory from [`memory`], time in child processes (when the executable is
/// known) with the seed's C++ program beside it (when its script is given).
pub(super) fn write_section(
    dir: &Path,
    options: &super::ReportOptions,
    memory: Result<BumpArenaResult>,
) -> Result<SectionOutput> {
    let progress = &options.bump_arena_progress;
    let exe = options.fragsim_exe.as_deref();
    let timed = timed(options);
    // Every warm build but the reused arena's is a steady state from build 2 on; that one
    // grows in builds 2 and 3, so its child runs 6 (its warm median is then a steady build).
    let matrix = exe.map(|exe| MatrixOptions {
        reused_runs: REUSED_RUNS,
        ..MatrixOptions::all(
            exe,
            options.bump_arena.vectors,
            options.bump_arena.elements,
            options.bump_arena_runs,
        )
    });
    // Steps: each timing child, the C++ program.
    let children = matrix
        .as_ref()
        .filter(|_| timed)
        .map_or(0, |m| m.settings.len() * m.strategies.len());
    let cxx = usize::from(timed && options.seed_script.is_some());
    progress.start("steps", (children + cxx) as u64);
    let timing = match (memory.is_ok() && timed, &matrix) {
        (true, Some(matrix)) => Some(measure_all(
            matrix,
            options.seed_script.as_deref(),
            &mut |_, _| progress.advance(1),
        )),
        _ => None,
    };
    progress.finish();
    let result = memory?;
    let timing = timing.transpose()?;
    let paths = write_files(&result, timing.as_ref(), dir, STEM, "fragsim report")?;
    Ok(index_entries(&paths, dir))
}

/// Index entries for the files of one run.
fn index_entries(paths: &[PathBuf], dir: &Path) -> SectionOutput {
    let what = |p: &PathBuf| -> &str {
        let name = p
            .strip_prefix(dir)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        match p.extension().and_then(|e| e.to_str()) {
            _ if name.starts_with(&format!("{TIMES_DIR}/")) && name.ends_with(".md") => {
                "this run's times: cold and warm per strategy and jemalloc setting, the seed's C++ \
                 program, jemalloc's statistics (not committed: times vary run to run)"
            }
            _ if name.starts_with(&format!("{TIMES_DIR}/")) && name.contains("-faults") => {
                "page faults of a warm build + reset per strategy and jemalloc setting (not \
                 committed: decay on the wall clock moves them run to run)"
            }
            _ if name.starts_with(&format!("{TIMES_DIR}/")) => {
                "warm build + reset time per strategy and jemalloc setting (not committed)"
            }
            Some("md") => {
                "general allocator vs bump arena variants: predicted and measured bytes; page \
                 faults cold and warm per jemalloc setting; ratio ranges beside the seed's and its \
                 C++ program's; why the arena wins or loses"
            }
            Some("csv") => "the bytes comparison as CSV",
            _ => "memory per strategy: ideal, predicted and measured usable bytes, active pages",
        }
    };
    SectionOutput::files(paths.iter().map(|p| Written::at(dir, p, what(p))).collect())
}

/// `reports/arena.md`: the bytes (exact), then the timing comparison.
pub fn markdown(r: &BumpArenaResult, timing: Option<&TimingRun>, command: &str) -> Result<String> {
    let mut out =
        String::from("# Arena scenario: general allocator vs monotonic arena vs no-free arena\n\n");
    out.push_str(&format!(
        "Produced by `{command}`. The second seed builds {} vectors of {} x {}-byte elements inside an outer vector and resets them three ways. Here: `Vec<Vec<T>>` under jemalloc; `bumpalo::collections::Vec` in a `bumpalo::Bump` with normal drops; and the same with the inner destructors skipped (`ManuallyDrop`) before the `Bump` is dropped. The byte counts below do not vary from run to run; the time side follows in its own section.\n\n",
        r.spec.vectors, r.spec.elements, r.spec.elem_bytes,
    ));
    let mut table = without_times(&bump_arena_table(r));
    table.title.clear();
    out.push_str(&Markdown.render(&table)?);
    out.push_str("\nUsable bytes: predicted by the size-class model (general allocator: the outer array plus every inner block; arenas: bumpalo's chunks, replayed from its growth policy); measured as the usable bytes of a private jemalloc arena the building thread was bound to, with its thread cache off. Active bytes are that arena's `pactive` x page.\n\n");
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
    if let Some(arena) = r.predictions.iter().find(|p| p.strategy == Strategy::Bump) {
        let chunks = &arena.chunk_requests;
        out.push_str(&format!(
            "## The arena's chunks\n\nbumpalo asked jemalloc for {} chunks, from {} B to {} B. Each request is a chunk plus its {}-byte footer, sized as if malloc kept {} bytes of header per allocation; jemalloc keeps none, so every chunk request ends {} bytes below a power of two or a page multiple and is served by that class, wasting those bytes once per chunk, not per vector. The arena's overhead over the ideal is the unused tail of the last chunk: chunks double, so up to half of the last one.\n\n",
            chunks.len(),
            chunks.first().copied().unwrap_or(0),
            chunks.last().copied().unwrap_or(0),
            FOOTER_SIZE,
            MALLOC_OVERHEAD,
            MALLOC_OVERHEAD
        ));
    }
    match timing {
        Some(run) => out.push_str(&timing_section(run, command)?),
        None => out.push_str("## Time\n\nNot measured in this run: the timing needs the fragsim executable (child processes) and 4-byte elements.\n"),
    }
    Ok(out)
}

/// Bar chart of the bytes per strategy (exact; the times chart is in the times folder).
pub(crate) fn bytes_chart(r: &BumpArenaResult, stem: &str) -> GroupedBars {
    let categories: Vec<String> = r
        .predictions
        .iter()
        .map(|p| p.strategy.name().to_string())
        .collect();
    let mib = |v: u64| v as f64 / (1u64 << 20) as f64;
    GroupedBars {
        name: format!("{stem}-bytes"),
        title: format!(
            "Memory, {} vectors of {} x {} B",
            r.spec.vectors, r.spec.elements, r.spec.elem_bytes
        ),
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
    }
}
