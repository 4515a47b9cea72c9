//! Live replay: a trace through the real jemalloc, in a fresh private arena with no thread
//! cache and decay off, its statistics read every K events and compared with the model's
//! ([`crate::sim::ArenaModel`]) at the same events.
//!
//! `opt.disable_large_size_classes` can only be set when jemalloc starts, so a replay for the
//! other setting runs in a child process (`fragsim __replay-live-child TRACE`) started with
//! `_RJEM_MALLOC_CONF`; the child opens the trace file itself and streams its snapshots back
//! as text lines. Either way the comparison is an engine consumer ([`replay_compare`],
//! [`compare_builds`]: one pass for any number of builds).

pub(crate) use super::arena_child::parse_config;
pub use super::arena_child::serve_child;
use super::arena_child::{ChildAllocator, ChildReplay};
use super::process_trace::{ChildTrace, ProcessInput};
use crate::analysis::{self, Analysis, Finding, TraceSource};
use crate::engine::RunError;
use crate::live::ctl::read_bool;
use crate::live::Api;
use crate::progress::Progress;
use crate::sim::{compare, ArenaModel, ArenaStats, Comparison, Snapshot};
use crate::sizeclass::{build_title, AllocatorConfig};
use crate::trace::{Call, Record, TraceError};
use anyhow::{Context, Result};
use std::path::Path;

pub use super::live_arena::LiveArena;
// The baton (`baton.rs`) reads through these paths.

mod validation;
pub use validation::{replay_validation, ReplayCheck};

/// Which jemalloc a live replay drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveAllocator {
    /// The linked jemalloc as this process started it (5.3.1: disable_large_size_classes on).
    Linked,
    /// The linked jemalloc with `disable_large_size_classes` set to this value (in a child
    /// process when it differs from this process's setting).
    LinkedWith(bool),
    /// The linked jemalloc with `disable_large_size_classes` set to this value, always in a
    /// child process: the same comparisons, cheaper in a process with many threads. Each
    /// statistics read first refreshes them (`epoch`: jemalloc's `ctl_refresh` merges every
    /// initialized arena and clears their sum), so its cost grows with the arenas this
    /// process's threads have touched (up to `opt.narenas`, the huge arena and any private
    /// ones); the child, one thread, has arena 0 and the replay's.
    Isolated(bool),
    /// A jemalloc shared library (e.g. Debian's 5.3.0 `libjemalloc.so.2`) preloaded into a
    /// child process.
    System(std::path::PathBuf),
}

/// How to run a live comparison.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// Compare every `every` events (and after the last).
    pub every: u64,
    pub allocator: LiveAllocator,
    /// The fragsim executable, for the child process (needed unless in process).
    pub child_exe: Option<std::path::PathBuf>,
    /// How many mismatches to keep.
    pub keep: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            every: 1,
            allocator: LiveAllocator::Linked,
            child_exe: None,
            keep: 10,
        }
    }
}

impl LiveOptions {
    /// The linked jemalloc as this process runs it, replayed in a child process of `exe`
    /// (the fragsim executable): [`LiveAllocator::Isolated`], for callers with many threads.
    pub(crate) fn isolated(exe: &Path) -> Self {
        let linked = read_bool("opt.disable_large_size_classes").unwrap_or(false);
        LiveOptions {
            allocator: LiveAllocator::Isolated(linked),
            child_exe: Some(exe.to_path_buf()),
            ..LiveOptions::default()
        }
    }
}

/// Comparisons a live replay makes by default on a long trace: each reads jemalloc's
/// statistics (about 230 µs measured on `python-dict.trace`, against under 1 µs an event), so
/// a long trace is compared at evenly spaced events.
pub(crate) const DEFAULT_LIVE_COMPARISONS: u64 = 10_000;

/// The widest default spacing: a comparison at least every 100 events, so a long trace is
/// still checked closely (and costs seconds per million events).
pub(crate) const MAX_DEFAULT_LIVE_EVERY: u64 = 100;

/// The default spacing of a live comparison of `events` events: every event up to
/// [`DEFAULT_LIVE_COMPARISONS`] events, then about that many comparisons, at most
/// [`MAX_DEFAULT_LIVE_EVERY`] events apart.
pub(crate) fn default_live_every(events: u64) -> u64 {
    events
        .div_ceil(DEFAULT_LIVE_COMPARISONS)
        .clamp(1, MAX_DEFAULT_LIVE_EVERY)
}

/// A model-versus-live run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LiveComparison {
    /// The build the model used (read from the live jemalloc).
    pub config: AllocatorConfig,
    pub comparison: Comparison,
    /// The model's final statistics.
    pub final_stats: ArenaStats,
}

/// Replays the trace through the model and the live jemalloc side by side (one engine pass)
/// and compares them every `options.every` events.
pub fn replay_compare<'a>(
    trace: impl Into<TraceSource<'a>>,
    options: &LiveOptions,
) -> Result<LiveComparison> {
    replay_compare_with(trace, options, &Progress::default())
}

/// [`replay_compare`], telling `progress` of the calls replayed (one step, "events").
pub(crate) fn replay_compare_with<'a>(
    trace: impl Into<TraceSource<'a>>,
    options: &LiveOptions,
    progress: &Progress,
) -> Result<LiveComparison> {
    let one = [(None, options.allocator.clone())];
    let mut all = compare_all(trace.into(), &one, options, progress)?;
    Ok(all.remove(0))
}

/// [`replay_compare`] for several builds at once, each `(name, live allocator)`: one engine
/// pass, one consumer per build (in parallel), the results in order; an error names its
/// build.
pub fn compare_builds<'a>(
    trace: impl Into<TraceSource<'a>>,
    builds: &[(String, LiveAllocator)],
    options: &LiveOptions,
) -> Result<Vec<LiveComparison>> {
    let named: Vec<_> = builds
        .iter()
        .map(|(name, a)| (Some(name.as_str()), a.clone()))
        .collect();
    compare_all(trace.into(), &named, options, &Progress::default())
}

fn compare_all(
    trace: TraceSource<'_>,
    builds: &[(Option<&str>, LiveAllocator)],
    options: &LiveOptions,
    progress: &Progress,
) -> Result<Vec<LiveComparison>> {
    let records = trace.records()?;
    progress.start("events", trace.calls()?);
    let result = compare_records(trace, records, builds, options, progress);
    progress.finish();
    result
}

fn compare_records(
    trace: TraceSource<'_>,
    records: impl Iterator<Item = Result<Record, TraceError>>,
    builds: &[(Option<&str>, LiveAllocator)],
    options: &LiveOptions,
    progress: &Progress,
) -> Result<Vec<LiveComparison>> {
    let linked = read_bool("opt.disable_large_size_classes").unwrap_or(false);
    let places: Vec<Place> = builds.iter().map(|(_, a)| Place::of(a, linked)).collect();
    let input = match places.iter().any(|p| !matches!(p, Place::InProcess)) {
        true => Some(trace.child_args()?),
        false => None,
    };
    let mut runs: Vec<Box<dyn Analysis>> = Vec::with_capacity(builds.len());
    for (place, (name, _)) in places.into_iter().zip(builds) {
        let label = name.map(|n| format!("build '{n}'"));
        let mut run =
            ArenaCompare::start(place, input.as_ref(), options).map_err(|e| labelled(e, &label))?;
        run.label = label;
        runs.push(Box::new(run));
    }
    // One pass, one analysis per build, each on a thread of its own.
    analysis::run_stream(records, runs, &|n| progress.advance(n))
        .map_err(|e| match e {
            RunError::Trace(e) => anyhow::Error::from(e),
            RunError::Consumer(e) => e,
        })?
        .into_iter()
        .map(|f| {
            f.result::<LiveComparison>()
                .context("a live comparison's finding")
        })
        .collect()
}

fn labelled(e: anyhow::Error, label: &Option<String>) -> anyhow::Error {
    match label {
        Some(l) => e.context(l.clone()),
        None => e,
    }
}

/// Where a live replay runs.
enum Place {
    InProcess,
    Child(ChildAllocator),
}

impl Place {
    /// `linked`: this process's `disable_large_size_classes`.
    fn of(allocator: &LiveAllocator, linked: bool) -> Place {
        match allocator {
            LiveAllocator::Linked => Place::InProcess,
            LiveAllocator::LinkedWith(v) if *v == linked => Place::InProcess,
            LiveAllocator::LinkedWith(v) | LiveAllocator::Isolated(v) => {
                Place::Child(ChildAllocator::Linked(*v))
            }
            LiveAllocator::System(lib) => Place::Child(ChildAllocator::System(lib.clone())),
        }
    }
}

/// Where the measured statistics come from: a private arena of this process, or the snapshot
/// lines of a child replaying the same trace.
enum Measured {
    InProcess(Box<LiveArena>),
    Child(ChildReplay),
}

/// The model beside the live allocator, compared every `every` calls and after the last: one
/// engine consumer.
struct ArenaCompare {
    config: AllocatorConfig,
    model: ArenaModel,
    measured: Measured,
    tally: Tally,
    every: u64,
    calls: u64,
    /// What an error names (`build 'NAME'`) when several builds run at once.
    label: Option<String>,
}

/// The comparison as an analysis: its finding's result is the [`LiveComparison`], its
/// summary the comparison's named fields ([`Comparison::summary`]).
impl Analysis for ArenaCompare {
    fn record(&mut self, record: &Record) -> Result<()> {
        match record {
            Record::Call(call) => self.step(call).map_err(|e| labelled(e, &self.label)),
            _ => Ok(()),
        }
    }

    fn calls(&mut self, _first: u64, calls: &[Call]) -> Result<()> {
        calls
            .iter()
            .try_for_each(|c| self.step(c))
            .map_err(|e| labelled(e, &self.label))
    }

    fn finish(self: Box<Self>) -> Result<Finding> {
        let label = self.label.clone();
        let title = match &label {
            Some(l) => format!("{l}: model vs live {}", build_title(&self.config)),
            None => format!("model vs live {}", build_title(&self.config)),
        };
        let result = self.end().map_err(|e| labelled(e, &label))?;
        let summary = result.comparison.summary(title, result.final_stats.events);
        Ok(Finding::new(summary, result))
    }
}

impl ArenaCompare {
    fn step(&mut self, call: &Call) -> Result<()> {
        self.model.apply(call.event)?;
        if let Measured::InProcess(live) = &mut self.measured {
            live.apply(call.event)?;
        }
        self.calls += 1;
        if self.calls.is_multiple_of(self.every) {
            self.compare()?;
        }
        Ok(())
    }

    fn start(place: Place, input: Option<&ChildTrace>, options: &LiveOptions) -> Result<Self> {
        let (config, measured) = match place {
            Place::InProcess => (
                Api::linked().config()?,
                Measured::InProcess(Box::new(LiveArena::new()?)),
            ),
            Place::Child(how) => {
                let exe = options.child_exe.as_deref().context(
                    "this live replay runs in a child process and needs the fragsim executable",
                )?;
                let input = input.context("the child's trace")?;
                let (config, child) = ChildReplay::start(exe, &how, input.path(), options.every)?;
                (config, Measured::Child(child))
            }
        };
        Ok(ArenaCompare {
            config,
            model: ArenaModel::new(config)?,
            measured,
            tally: Tally::new(options.keep),
            every: options.every.max(1),
            calls: 0,
            label: None,
        })
    }

    fn compare(&mut self) -> Result<()> {
        let measured = match &mut self.measured {
            Measured::InProcess(live) => live.snapshot()?,
            Measured::Child(child) => child.snapshot()?,
        };
        self.tally.push(self.model.snapshot(), measured);
        Ok(())
    }

    fn end(mut self) -> Result<LiveComparison> {
        if !self.calls.is_multiple_of(self.every) {
            self.compare()?;
        }
        if let Measured::Child(child) = self.measured {
            child.wait()?;
        }
        Ok(LiveComparison {
            config: self.config,
            comparison: self.tally.finish(),
            final_stats: self.model.stats(),
        })
    }
}

/// Snapshots compared in batches as they arrive, so memory stays bounded on long traces.
struct Tally {
    predicted: Vec<Snapshot>,
    measured: Vec<Snapshot>,
    total: Comparison,
    keep: usize,
}

impl Tally {
    const BATCH: usize = 1024;

    fn new(keep: usize) -> Self {
        Tally {
            predicted: Vec::with_capacity(Self::BATCH),
            measured: Vec::with_capacity(Self::BATCH),
            total: Comparison::default(),
            keep,
        }
    }

    fn push(&mut self, predicted: Snapshot, measured: Snapshot) {
        self.predicted.push(predicted);
        self.measured.push(measured);
        if self.predicted.len() >= Self::BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let part = compare(&self.predicted, &self.measured, self.keep);
        merge(&mut self.total, part, self.keep);
        self.predicted.clear();
        self.measured.clear();
    }

    fn finish(mut self) -> Comparison {
        self.flush();
        self.total
    }
}

fn merge(total: &mut Comparison, part: Comparison, keep: usize) {
    total.snapshots += part.snapshots;
    total.values += part.values;
    total.mismatched_snapshots += part.mismatched_snapshots;
    total.mismatched_values += part.mismatched_values;
    for m in part.first {
        if total.first.len() < keep {
            total.first.push(m);
        }
    }
}
