//! The main job: every table, chart and validation result, written into one folder with an
//! index. Each step is timed; the files themselves carry no timestamps, so re-running on an
//! unchanged tree rewrites identical tables and charts.
//!
//! # Sections
//!
//! Each section of the index is one file here with one function that writes the section's
//! files into the report folder and returns a [`SectionOutput`]: the files written, each with
//! what it shows, and optional Markdown for the index. [`write_report`] runs them through
//! `job::Lane::section`, which times the step, tells the caller, and adds the files to the
//! index under a heading. A section from elsewhere plugs in as a lane of its own in
//! [`write_report`]:
//!
//! ```ignore
//! plan.lane(Load::Shared, |job| {
//!     job.section("container models", "Container models", |dir| {
//!         crate::containers::write_section(dir, &options.containers)
//!     })
//! });
//! ```
//!
//! `Load::Shared` lanes run beside each other (their files must not depend on the machine's
//! load); a section that measures times or resident bytes is a `Load::Alone` lane, run with
//! nothing else of the report running (`job`). The index keeps the order the lanes are
//! added in. A section whose result later sections use returns `(value, SectionOutput)` and
//! runs through `job::Lane::section_with`, which hands the value back; those later sections
//! go in the same lane (the sweeps feed the seed comparison and the charts; the validation
//! feeds a chart and the exit code).

pub(crate) mod advise;
pub(crate) mod allocators;
pub(crate) mod blame;
pub(crate) mod bump_arena;
mod charts;
mod classes;
pub(crate) mod containers;
pub(crate) mod decay_section;
mod figures;
mod findings;
pub(crate) mod job;
pub(crate) mod process;
pub(crate) mod programs;
mod seed;
mod sweeps;
mod validation;

pub use allocators::write_section as write_allocators_section;
pub use blame::write_section as write_blame_section;
pub use decay_section::write_section as write_decay_section;
pub use process::write_section as write_process_section;
pub use programs::write_programs;
pub use programs::write_programs_section;
pub use programs::LiveCheck;
pub use programs::ProgramReplays;
pub use programs::ProgramsOptions;

pub(crate) use figures::Sweeps;

use crate::experiments::bump_arena::BumpArenaSpec;
use crate::experiments::sweep::SweepSpec;
use crate::export::{write_atomic, Table};
use crate::validate::ValidateOptions;
use anyhow::{Context, Result};
use job::{Load, Plan};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the report covers.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    pub out: PathBuf,
    pub sweep: SweepSpec,
    pub validate: ValidateOptions,
    /// The bump-arena scenario's workload, and the builds per strategy's timing (at least 2:
    /// one cold, the rest warm; the reused arena's child runs at least 6, `Vec<Vec<i32>>`
    /// runs as children of two builds); without the children (no executable, or elements
    /// other than 4 bytes), the timed runs per strategy in this process.
    pub bump_arena: BumpArenaSpec,
    pub bump_arena_runs: usize,
    /// The fragsim executable, to time the bump-arena scenario in child processes, one per
    /// jemalloc setting and strategy (jemalloc reads its options at start-up). `None` skips
    /// the timing.
    pub fragsim_exe: Option<PathBuf>,
    /// Real programs: the traces to replay under several builds and check live; `None` skips.
    pub programs: Option<programs::ProgramsOptions>,
    /// `scripts/seed-pmr.sh`, to run the seed's C++ program beside the timing. `None` skips it.
    pub seed_script: Option<PathBuf>,
    /// Told of the bump-arena step's progress (its timing children take about 30 s).
    pub bump_arena_progress: crate::progress::Progress,
}

impl ReportOptions {
    /// Builds per strategy in the bump-arena timing unless asked otherwise (`report
    /// --arena-runs`): one cold, three warm.
    pub(crate) const DEFAULT_BUMP_ARENA_RUNS: usize = 4;

    pub fn new(out: PathBuf) -> Self {
        ReportOptions {
            out,
            sweep: SweepSpec::default(),
            validate: ValidateOptions::reduced(),
            bump_arena: BumpArenaSpec::seed(),
            bump_arena_runs: Self::DEFAULT_BUMP_ARENA_RUNS,
            fragsim_exe: None,
            programs: Some(programs::ProgramsOptions::new(Path::new(env!(
                "CARGO_MANIFEST_DIR"
            )))),
            seed_script: None,
            bump_arena_progress: crate::progress::Progress::default(),
        }
    }
}

impl ReportOptions {
    /// Runs the measured parts in children of `exe` (the fragsim executable), as `fragsim
    /// report` does: the bump-arena timing and the other allocators, the validation's live
    /// replays, and the programs' live checks (in a child, its statistics refresh merges
    /// two arenas, not every arena the report's threads touched).
    pub fn run_children(&mut self, exe: PathBuf) {
        if let Some(programs) = self.programs.as_mut() {
            programs.live = Some(crate::check::arena_replay::LiveOptions::isolated(&exe));
        }
        self.validate.replay_exe = Some(exe.clone());
        self.fragsim_exe = Some(exe);
    }
}

/// One entry of the index: a file (relative to the report folder) and what it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub file: String,
    pub what: String,
}

impl Written {
    /// The entry for `path`, a file inside `dir`.
    pub fn at(dir: &Path, path: &Path, what: impl Into<String>) -> Self {
        Written {
            file: path.strip_prefix(dir).unwrap_or(path).display().to_string(),
            what: what.into(),
        }
    }
}

/// What one section wrote, for the index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SectionOutput {
    /// Tables and charts (PNG with an SVG beside it), listed and shown in the index.
    pub files: Vec<Written>,
    /// Markdown placed in the index after the section's files (may be empty).
    pub markdown: String,
}

impl SectionOutput {
    pub fn files(files: Vec<Written>) -> Self {
        SectionOutput {
            files,
            markdown: String::new(),
        }
    }
}

/// A step of the job, for the terminal.
#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub took: Duration,
    pub files: Vec<String>,
}

/// What the job did.
#[derive(Clone, Debug)]
pub struct ReportSummary {
    pub steps: Vec<Step>,
    pub validation_passed: bool,
    pub mismatches: u64,
}

/// Writes `table` as `<stem>.csv` and `<stem>.md` into `dir`.
fn write_table(dir: &Path, stem: &str, table: &Table, what: &str) -> Result<Vec<Written>> {
    Ok(crate::export::write_csv_and_markdown(dir, stem, table)?
        .into_iter()
        .map(|file| Written {
            file,
            what: what.to_string(),
        })
        .collect())
}

/// The subfolder for measured times: they vary from run to run, so they are kept apart from
/// the files a rerun reproduces byte for byte (and out of git: `reports/timing/` is ignored).
pub(crate) const TIMING_DIR: &str = "timing";

/// Runs the whole job; `on_step` hears about each step as it finishes (an error from it stops
/// the job, e.g. a closed standard output).
pub fn write_report(
    options: &ReportOptions,
    on_step: &mut dyn FnMut(&Step) -> Result<()>,
) -> Result<ReportSummary> {
    let dir = options.out.as_path();
    let charts_dir = dir.join("charts");
    std::fs::create_dir_all(&charts_dir)
        .with_context(|| format!("cannot create folder '{}'", charts_dir.display()))?;
    let mut validation = None;
    // The bump-arena scenario's memory side, from its lane to the timing lane.
    let memory_side = std::sync::Mutex::new(None);
    let mut plan = Plan::new();
    // The lanes in the index's order; the longest shared lanes first (they start first).
    plan.lane(Load::Shared, |job| {
        job.section("size-class tables", "Size classes", classes::write_section)?;
        let sweeps = job.section_with("physical F14 sweep", "F14 footprint tables", |dir| {
            sweeps::write_section(dir, &options.sweep)
        })?;
        job.section("seed comparison", "The seed (folly D8485933)", |dir| {
            seed::write_section(dir, &sweeps)
        })?;
        let checked = job.section_with("live validation", "Live validation", |dir| {
            validation::write_section(dir, &options.validate)
        })?;
        job.section("charts", "Charts", |dir| {
            charts::write_section(dir, &sweeps, &checked, options.sweep.max_capacity)
        })?;
        validation = Some(checked);
        Ok(())
    });
    // The bump-arena scenario's memory side (exact bytes of private arenas) runs beside the
    // other shared lanes; its times, page faults and jemalloc's statistics of child processes
    // alone, after every shared lane (so the memory side is done by then). Its step adds
    // nothing to the index under the section's heading (the alone step fills it). Without
    // timing children the builds are timed here: then all of it runs alone.
    let memory = &memory_side;
    let memory_load = match bump_arena::timed(options) {
        true => Load::Shared,
        false => Load::Alone,
    };
    plan.lane(memory_load, move |job| {
        job.section("bump-arena memory", bump_arena::SECTION, |_| {
            *memory.lock().unwrap_or_else(|e| e.into_inner()) = Some(bump_arena::memory(options));
            Ok(SectionOutput::default())
        })
    });
    plan.lane(Load::Alone, move |job| {
        job.section("bump-arena scenario", bump_arena::SECTION, |dir| {
            let measured = memory.lock().unwrap_or_else(|e| e.into_inner()).take();
            let measured = measured.context("the bump-arena memory lane did not run")?;
            bump_arena::write_section(dir, options, measured)
        })
    });
    if let Some(programs) = &options.programs {
        program_lanes(&mut plan, programs, options.fragsim_exe.as_deref());
    }
    // Measured bytes and times of other allocators: alone.
    plan.lane(Load::Alone, |job| {
        job.section("other allocators", allocators::SECTION, |d| {
            allocators::write_section(d, options)
        })
    });
    plan.lane(Load::Shared, |job| {
        job.section(
            "container models",
            containers::SECTION,
            containers::write_section,
        )
    });
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let (index, steps) = plan.run(dir, workers, on_step)?;
    write_atomic(
        &dir.join("README.md"),
        crate::export::define_once(&index_markdown(&index)).as_bytes(),
    )?;
    let validation = validation.context("the validation lane did not run")?;
    Ok(ReportSummary {
        steps,
        validation_passed: validation.passed(),
        mismatches: validation.mismatches(),
    })
}

/// The lanes over the real programs' traces: replays, the whole process, run-time options,
/// decay bands and waste by call site (all exact: shared lanes).
fn program_lanes<'a>(
    plan: &mut Plan<'a>,
    programs: &'a programs::ProgramsOptions,
    fragsim_exe: Option<&'a Path>,
) {
    plan.lane(Load::Shared, move |job| {
        job.section("real programs", programs::SECTION, |dir| {
            let section = programs::write_programs(dir, programs)?;
            Ok(SectionOutput {
                files: section.files,
                markdown: "Every table inline, with its charts: [programs.md](programs.md).\n"
                    .into(),
            })
        })
    });
    plan.lane(Load::Shared, move |job| {
        job.section("whole process", process::SECTION, |dir| {
            process::write_section(dir, &programs.traces, fragsim_exe)
        })
    });
    plan.lane(Load::Shared, move |job| {
        job.section("run-time options", advise::SECTION, |dir| {
            let traces = programs::trace_files(&programs.traces)?;
            advise::write_section(dir, &traces, fragsim_exe)
        })
    });
    plan.lane(Load::Shared, move |job| {
        job.section("decay bands", decay_section::SECTION, |dir| {
            // The band files name their traces from the repository's root: data/traces/..
            let root = programs.traces.parent().and_then(Path::parent);
            decay_section::write_section(dir, root.unwrap_or(Path::new(".")))
        })
    });
    plan.lane(Load::Shared, move |job| {
        job.section("waste by call site", blame::SECTION, |dir| {
            blame::write_section(dir, &programs.traces)
        })
    });
}

fn is_chart(file: &str) -> bool {
    file.ends_with(".png") || file.ends_with(".svg")
}

fn index_markdown(index: &[(String, SectionOutput)]) -> String {
    let mut out = String::from(
        "# fragsim reports\n\nWritten by `cargo run --release -- report`, which regenerates every file listed here. The `validation-<variant>.md/.csv` files beside them come from `scripts/validate-variants.sh` (one per jemalloc build) and are kept when the report is rewritten. Measured times vary from run to run, so they go into `timing/` (listed below; not committed: `reports/timing/` is in `.gitignore`); every other file is reproduced byte for byte by a rerun with the same build.\n",
    );
    for (heading, section) in index {
        out.push_str(&format!("\n## {heading}\n\n"));
        let (charts, tables): (Vec<&Written>, Vec<&Written>) =
            section.files.iter().partition(|w| is_chart(&w.file));
        for w in &tables {
            out.push_str(&format!("- [{}]({}): {}\n", w.file, w.file, w.what));
        }
        for w in charts.iter().filter(|w| w.file.ends_with(".png")) {
            let stem = w.file.trim_end_matches(".png");
            out.push_str(&format!(
                "\n![{stem}]({})\n\n{} ([SVG]({stem}.svg))\n",
                w.file, w.what
            ));
        }
        if !section.markdown.is_empty() {
            out.push('\n');
            out.push_str(&section.markdown);
        }
    }
    out
}
