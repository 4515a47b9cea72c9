//! The report's "Real programs" section: for every allocation trace, the what-if table across
//! jemalloc builds, the classes losing the most bytes, three charts and the live check.

use super::Written;
use crate::analysis::{build_replays, TraceSource};
use crate::charts::write_chart;
use crate::check::arena_replay::{replay_compare, LiveOptions};
use crate::export::{write_atomic, Markdown, Table, TableFormat};
use crate::whatif::{
    chart_every, class_table, figures, parse_builds, whatif_table, Build, BuildReplay,
    ReplayOptions, REPORT_BUILDS,
};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Classes shown per program in the report.
/// The heading of this section in the report index.
pub(crate) const SECTION: &str = "Real programs";

pub(crate) const TOP_CLASSES: usize = 10;

/// The model replayed beside the real jemalloc (a private arena, no thread cache, decay off)
/// for one trace, statistics compared at regular events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveCheck {
    /// The build the live jemalloc is (its label), which the model ran as.
    pub build: String,
    /// Events at which both sides were read.
    pub snapshots: u64,
    /// Statistics compared in all (allocated and active bytes, three per bin, per snapshot).
    pub compared: u64,
    pub mismatched: u64,
}

/// One program's replays, ready to write.
#[derive(Clone, Debug)]
pub struct ProgramReplays {
    /// The trace's file stem, used in file names and headings.
    pub name: String,
    /// One replay per build, the first being the reference; the per-class table, the
    /// timeline and the class chart use the first.
    pub replays: Vec<BuildReplay>,
    /// `None` when the live check was not run (then the section says so).
    pub live: Option<LiveCheck>,
}

/// What [`write_programs_section`] wrote.
#[derive(Clone, Debug, Default)]
pub struct ProgramsSection {
    pub files: Vec<Written>,
    /// The section as Markdown (tables inline, charts as images), links relative to the
    /// folder; also written there as `programs.md`.
    pub markdown: String,
}

fn write_table(
    dir: &Path,
    stem: &str,
    table: &Table,
    what: &str,
    files: &mut Vec<Written>,
) -> Result<()> {
    files.extend(super::write_table(dir, stem, table, what)?);
    Ok(())
}

fn relative(dir: &Path, paths: Vec<PathBuf>) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.strip_prefix(dir).unwrap_or(p).display().to_string())
        .collect()
}

/// Writes one program's tables (`programs-<name>-*.csv/md`) and charts
/// (`charts/programs-<name>-*.png/svg`) into `dir`; returns the files and its Markdown.
pub(crate) fn write_program(
    dir: &Path,
    program: &ProgramReplays,
) -> Result<(Vec<Written>, String)> {
    let charts = dir.join("charts");
    std::fs::create_dir_all(&charts)
        .with_context(|| format!("cannot create folder '{}'", charts.display()))?;
    let name = &program.name;
    let Some(first) = program.replays.first() else {
        anyhow::bail!("no builds replayed for '{name}'");
    };
    let mut files = Vec::new();
    let (whatif, top) = write_program_tables(dir, program, first, &mut files)?;
    let chart_files = write_program_charts(dir, &charts, program, first)?;
    let mut md = program_markdown(program, first, &whatif, &top)?;
    for (paths, what) in &chart_files {
        if let Some(png) = paths.iter().find(|p| p.ends_with(".png")) {
            let svg = png.trim_end_matches(".png").to_string() + ".svg";
            md.push_str(&format!("![{what}]({png})\n\n{what} ([SVG]({svg}))\n\n"));
        }
        files.extend(paths.iter().map(|p| Written {
            file: p.clone(),
            what: what.clone(),
        }));
    }
    Ok((files, md))
}

/// Writes the what-if and per-class tables of one program; returns the what-if table and
/// the top classes (for the Markdown).
fn write_program_tables(
    dir: &Path,
    program: &ProgramReplays,
    first: &BuildReplay,
    files: &mut Vec<Written>,
) -> Result<(Table, Table)> {
    let name = &program.name;
    let stem = format!("programs-{name}");
    let whatif = whatif_table(
        &format!("{name}: peaks under each jemalloc build"),
        &program.replays,
    );
    write_table(
        dir,
        &format!("{stem}-whatif"),
        &whatif,
        &format!("{name}: peak requested, allocated and active bytes per build, with the shares of rounding and slab fragmentation"),
        files,
    )?;
    let classes_title = format!(
        "{name}: size classes by bytes lost at the active peak, build {}",
        first.build
    );
    write_table(
        dir,
        &format!("{stem}-classes"),
        &class_table(&classes_title, first, None),
        &format!(
            "{name}: every size class the trace used, build {}",
            first.build
        ),
        files,
    )?;
    let top = class_table(
        &format!("{classes_title} (top {TOP_CLASSES})"),
        first,
        Some(TOP_CLASSES),
    );
    Ok((whatif, top))
}

/// Writes one program's three charts into `charts`; returns each one's files (relative to
/// `dir`) and what it shows.
fn write_program_charts(
    dir: &Path,
    charts: &Path,
    program: &ProgramReplays,
    first: &BuildReplay,
) -> Result<Vec<(Vec<String>, String)>> {
    let name = &program.name;
    let stem = format!("programs-{name}");
    let mut chart_files = Vec::new();
    let timeline = figures::timeline_chart(&format!("{stem}-timeline"), name, first);
    chart_files.push((
        relative(dir, write_chart(&timeline, charts)?),
        format!(
            "{name}: requested, allocated and active bytes over the trace, build {}",
            first.build
        ),
    ));
    let bars = figures::whatif_chart(&format!("{stem}-whatif"), name, &program.replays);
    chart_files.push((
        relative(dir, write_chart(&bars, charts)?),
        format!("{name}: peak active bytes per build: requested, rounding, empty slab regions, large padding"),
    ));
    let loss = figures::class_loss_chart(&format!("{stem}-class-loss"), name, first, TOP_CLASSES);
    chart_files.push((
        relative(dir, write_chart(&loss, charts)?),
        format!(
            "{name}: the {TOP_CLASSES} size classes losing the most bytes, build {}",
            first.build
        ),
    ));
    Ok(chart_files)
}

/// One program's Markdown up to its charts: the heading, the what-if table, the top
/// classes and the live check.
fn program_markdown(
    program: &ProgramReplays,
    first: &BuildReplay,
    whatif: &Table,
    top: &Table,
) -> Result<String> {
    let name = &program.name;
    let mut md = format!("### {name}\n\n");
    md.push_str(&format!(
        "{} events. Peaks are maxima over every event. At the event where active bytes peak: \
         `internal_fragmentation` = allocated / requested − 1, `external_fragmentation` = \
         active / allocated − 1; `rounding_share` and `empty_and_pad_share` are the shares of \
         the peak active bytes that are size-class rounding, and empty slab regions plus the \
         padding page of large blocks.\n\n",
        first.events
    ));
    // The section's own headings name the tables; the tables' titles would repeat them.
    let untitled = |table: &Table| Table {
        title: String::new(),
        ..table.clone()
    };
    md.push_str(&Markdown.render(&untitled(whatif))?);
    md.push_str(&format!(
        "\nThe {TOP_CLASSES} size classes losing the most bytes at the active peak, build {} \
         ([all classes](programs-{name}-classes.md)):\n\n",
        first.build
    ));
    md.push_str(&Markdown.render(&untitled(top))?);
    md.push('\n');
    md.push_str(&match &program.live {
        Some(live) => format!(
            "Live check (the exact model beside the real jemalloc this binary links, build \
             `{}`, in a private arena without thread cache): {} statistics compared at {} \
             events, {} mismatched.\n\n",
            live.build, live.compared, live.snapshots, live.mismatched
        ),
        None => "Live check: not run for this report.\n\n".to_string(),
    });
    Ok(md)
}

/// Writes every program's files and `programs.md` (the whole section) into `dir`.
pub fn write_programs_section(dir: &Path, programs: &[ProgramReplays]) -> Result<ProgramsSection> {
    let mut section = ProgramsSection {
        files: Vec::new(),
        markdown: String::from(
            "## Real programs\n\nEach allocation trace in `data/traces/` replayed by the exact \
             arena model under several jemalloc builds (`fragsim replay TRACE --preset ...`).\n\n",
        ),
    };
    for program in programs {
        let (files, md) = write_program(dir, program)?;
        section.files.extend(files);
        section.markdown.push_str(&md);
    }
    write_atomic(
        &dir.join("programs.md"),
        crate::export::define_once(&section.markdown).as_bytes(),
    )?;
    section.files.push(Written {
        file: "programs.md".into(),
        what: "real programs: every trace's what-if table, top classes, charts and live check"
            .into(),
    });
    Ok(section)
}

/// What the section covers.
#[derive(Clone, Debug)]
pub struct ProgramsOptions {
    /// The folder of traces (`*.trace`, in name order).
    pub traces: PathBuf,
    pub builds: Vec<Build>,
    /// The live check's options; `None` skips it. Its `every` is replaced by a step that
    /// gives about `LIVE_SNAPSHOTS` snapshots per trace.
    pub live: Option<LiveOptions>,
}

/// Snapshots the live check takes per trace: each reads every bin's statistics through
/// `mallctl`, so every event would be slow on long traces.
pub const LIVE_SNAPSHOTS: u64 = 20_000;

impl ProgramsOptions {
    /// `data/traces` under `root`, the report's builds, the live check on.
    pub fn new(root: &Path) -> Self {
        ProgramsOptions {
            traces: root.join("data").join("traces"),
            builds: parse_builds(REPORT_BUILDS).expect("the report's builds are presets"),
            live: Some(LiveOptions::default()),
        }
    }
}

/// The traces in `dir`, in name order (none when the folder does not exist).
pub(crate) fn trace_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read folder '{}'", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "trace"))
        .collect();
    files.sort();
    Ok(files)
}

/// Replays one trace under every build (timeline sampled for a chart) and, if asked, beside
/// the live jemalloc.
pub(crate) fn replay_program(path: &Path, options: &ProgramsOptions) -> Result<ProgramReplays> {
    let events = TraceSource::File(path).calls()?;
    let replays = build_replays(
        TraceSource::File(path),
        &options.builds,
        ReplayOptions {
            every: Some(chart_every(events)),
        },
        &|_| {},
    )?;
    let live = match &options.live {
        Some(live) => Some(live_check(path, events, live)?),
        None => None,
    };
    Ok(ProgramReplays {
        name: path
            .file_stem()
            .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned()),
        replays,
        live,
    })
}

/// The model against the live jemalloc on the trace at `path`.
pub fn live_check(path: &Path, events: u64, options: &LiveOptions) -> Result<LiveCheck> {
    let options = LiveOptions {
        every: events.div_ceil(LIVE_SNAPSHOTS).max(1),
        ..options.clone()
    };
    let result = replay_compare(path, &options)
        .with_context(|| format!("live check of '{}'", path.display()))?;
    Ok(LiveCheck {
        build: crate::sizeclass::build_name(&result.config),
        snapshots: result.comparison.snapshots,
        compared: result.comparison.values,
        mismatched: result.comparison.mismatched_values,
    })
}

/// The whole section: every trace in `options.traces` replayed and written into `dir`.
pub fn write_programs(dir: &Path, options: &ProgramsOptions) -> Result<ProgramsSection> {
    let programs = trace_files(&options.traces)?
        .iter()
        .map(|path| replay_program(path, options))
        .collect::<Result<Vec<_>>>()?;
    write_programs_section(dir, &programs)
}
