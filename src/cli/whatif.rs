//! `fragsim replay` with several builds: the what-if table, `--by-class`, `--charts`, and a
//! timeline with a build column. Everything is checked before the replay starts.

use super::replay_args::WhatifArgs;
use super::{AllocatorArgs, OutputArgs};
use crate::analysis::{build_replays, TraceSource};
use crate::export::{write_atomic, Csv, TableFormat};
use crate::whatif::{
    class_table, figures, modify_builds, timeline_table, whatif_table, Build, ReplayOptions,
};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether the replay is a what-if run: a list of builds, `--by-class` or `--charts`.
pub fn wanted(allocator: &AllocatorArgs, args: &WhatifArgs) -> bool {
    allocator.preset.len() > 1 || args.by_class || args.charts.is_some()
}

/// The builds the allocator options name: `--preset` may list several, comma-separated;
/// `--no-cache-oblivious` and `--large-page-rounding` then apply to each. Without a list, the
/// one build the options describe.
pub(crate) fn builds_from(args: &AllocatorArgs) -> Result<Vec<Build>> {
    match args.preset.as_slice() {
        [] => {
            // The same build and name as `fragsim replay` without what-if options.
            let config = args.config()?;
            Ok(vec![Build::new(
                crate::sizeclass::build_name(&config),
                config,
            )])
        }
        list => {
            let mut builds: Vec<Build> = Vec::new();
            for preset in list {
                if builds.iter().any(|b| b.name == preset.name()) {
                    bail!("'{}' is listed twice in --preset", preset.name());
                }
                builds.push(Build::new(preset.name(), preset.config()));
            }
            if args.no_cache_oblivious {
                builds = modify_builds(builds, "-nco", |c| c.cache_oblivious = false)?;
            }
            if args.large_page_rounding {
                builds = modify_builds(builds, "-lpages", |c| c.large_page_rounding = true)?;
            }
            Ok(builds)
        }
    }
}

/// A folder that exists (created if need be) and accepts a file.
fn check_writable_dir(dir: &Path) -> Result<NewDir> {
    let created = NewDir::create(dir)?;
    tempfile::Builder::new()
        .prefix(".fragsim-check-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in folder '{}'", dir.display()))?;
    Ok(created)
}

/// An output folder made for this run (`--charts DIR`): the levels of it this run created are
/// removed again if the run fails before writing into them. Only empty folders are removed
/// (`remove_dir`), so nothing a user or the run wrote is ever deleted.
pub(super) struct NewDir {
    /// The folder created, if this run created it.
    created: Vec<std::path::PathBuf>,
}

impl NewDir {
    /// Creates `dir` if missing (its last component only: the parent must exist).
    pub(super) fn create(dir: &Path) -> Result<NewDir> {
        let created = if crate::export::create_folder(dir)? {
            vec![dir.to_path_buf()]
        } else {
            Vec::new()
        };
        Ok(NewDir { created })
    }

    /// The run wrote into the folder: it stays.
    pub(super) fn keep(mut self) {
        self.created.clear();
    }
}

impl Drop for NewDir {
    fn drop(&mut self) {
        for dir in &self.created {
            // Fails, and so keeps the folder, unless it is empty.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The folder a file will be written into must exist and accept files.
fn check_writable_file(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write '{}': no folder '{}'",
            path.display(),
            dir.display()
        );
    }
    tempfile::Builder::new()
        .prefix(".fragsim-check-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    Ok(())
}

/// A progress bar on stderr that appears only after a second, and only on a terminal.
struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
    terminal: bool,
}

impl Progress {
    fn new(total: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "replay {bar:30} {percent}% of {human_len} events {elapsed}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            bar,
            start: Instant::now(),
            shown: AtomicBool::new(false),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn advance(&self, events: u64) {
        self.bar.inc(events);
        if self.terminal
            && self.start.elapsed() > Duration::from_secs(1)
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

/// Replays `trace` under `builds` and writes what `args` and `output` ask for. `every` and
/// `timeline` are the replay command's timeline options.
pub fn run(
    trace: &Path,
    builds: &[Build],
    args: &WhatifArgs,
    output: &OutputArgs,
    every: Option<u64>,
    timeline: Option<&Path>,
) -> Result<i32> {
    // Every check before any work.
    let format = output.format;
    if args.by_class && builds.len() > 1 {
        bail!(
            "--by-class takes one build, not {} (give one --preset)",
            builds.len()
        );
    }
    if args.top == Some(0) {
        bail!("--top 0 shows nothing (give at least 1)");
    }
    if every == Some(0) {
        bail!("--every 0: give a step of at least 1 event");
    }
    let charts_dir = args.charts.as_deref().map(check_writable_dir).transpose()?;
    if let Some(path) = timeline {
        check_writable_file(path)?;
    }
    if let Some(path) = &output.out {
        check_writable_file(path)?;
    }
    let events = TraceSource::File(trace).calls()?;

    let every = match (every, timeline.is_some(), args.charts.is_some()) {
        (Some(k), _, _) => Some(k),
        (None, false, false) => None,
        (None, true, _) => Some(crate::sim::arena_replay::default_every(events)),
        (None, false, true) => Some(crate::whatif::chart_every(events)),
    };
    let progress = Progress::new(events * builds.len() as u64);
    // One pass, one analysis per build, each on a thread of its own.
    let replays = build_replays(
        TraceSource::File(trace),
        builds,
        ReplayOptions { every },
        &|n| progress.advance(n),
    )?;
    progress.bar.finish_and_clear();

    let program = trace
        .file_stem()
        .map_or_else(|| "trace".to_string(), |s| s.to_string_lossy().into_owned());
    if let Some(path) = timeline {
        let table = timeline_table(&format!("{program}: timeline"), &replays);
        write_atomic(path, Csv.render(&table)?.as_bytes())?;
    }
    if let (Some(dir), Some(created)) = (&args.charts, charts_dir) {
        figures::write_charts(dir, &program, &program, &replays, args.top.unwrap_or(10))?;
        created.keep();
    }
    let table = if args.by_class {
        class_table(
            &format!(
                "{program}: size classes by bytes lost at the active peak, build {}",
                replays[0].build
            ),
            &replays[0],
            args.top,
        )
    } else {
        whatif_table(
            &format!("{program}: peaks under each jemalloc build"),
            &replays,
        )
    };
    let text = format.render(&table)?;
    match &output.out {
        Some(path) => write_atomic(path, text.as_bytes())?,
        None => super::output::print_text(&text)?,
    }
    Ok(0)
}
