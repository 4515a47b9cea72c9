//! `fragsim view`: one self-contained HTML page per trace ([`render`]). This module gathers what
//! the page shows, as plain data: the process model's timeline, the waste by call site (a
//! blame, as folded stacks) at evenly spaced moments and at the active peak, the blame table
//! at the peak, and the size classes of the one-arena model. Nothing here draws.

mod html;

pub use html::render;

use crate::blame::{blame_moments, blame_table, folded_lines, At, BlameError, BlameSpec};
use crate::engine::{self, RecordConsumer, RunError};
use crate::export::Table;
use crate::process::{DecayClock, ProcessOptions, ProcessRun};
use crate::sizeclass::{build_title, AllocatorConfig};
use crate::trace::{Record, TraceError};
use crate::whatif::{class_table, replay_trace, whatif_table, Build, ReplayOptions};
use std::path::Path;

/// What the page is of and how the trace is modelled.
#[derive(Clone, Debug)]
pub struct ViewSpec {
    pub config: AllocatorConfig,
    pub options: ProcessOptions,
    /// CPUs for the default `narenas`.
    pub cpus: u32,
    /// Moments the flame graph can be drawn at (evenly spaced; the active peak is added).
    pub moments: usize,
    /// Where the options came from, said on the page (`the recorded program's jemalloc ...`).
    pub about: String,
    /// More tables on the page.
    pub with: Vec<Extra>,
    /// The allocator the recording says its program ran (advise's grid is moved onto it, as
    /// `fragsim advise` does), and whether its `narenas` stands (no `--cpus` given).
    pub recorded: Option<(crate::process::RecordedAllocator, bool)>,
}

/// A table a page can carry on request (`--with advise,builds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// `fragsim advise`'s table: the built-in grid of run-time options through the process
    /// model (no live check), ranked by peak resident bytes.
    Advise,
    /// Every preset build through the one-arena model (`replay --preset ...`).
    Builds,
}

impl crate::choice::Choice for Extra {
    fn all() -> &'static [Self] {
        &[Extra::Advise, Extra::Builds]
    }

    fn name(self) -> &'static str {
        match self {
            Extra::Advise => "advise",
            Extra::Builds => "builds",
        }
    }

    fn help(self) -> &'static str {
        match self {
            Extra::Advise => {
                "advise's table: the built-in grid of run-time options, ranked (no live check)"
            }
            Extra::Builds => "every preset build through the one-arena model, side by side",
        }
    }
}

impl std::fmt::Display for Extra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::choice::Choice::name(*self))
    }
}

/// One moment of the waste flame graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Moment {
    /// The event (1-based, calls and thread exits, as `replay --process` counts them).
    pub event: u64,
    pub active_bytes: u64,
    pub waste_bytes: u64,
    /// `frame;frame bytes` lines of waste, outermost frame first.
    pub folded: Vec<String>,
}

/// One point of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub event: u64,
    pub requested: u64,
    pub allocated: u64,
    pub active: u64,
    pub resident: u64,
}

/// Everything the page shows.
#[derive(Clone, Debug)]
pub struct Page {
    pub name: String,
    /// The recorded program's command line, if the trace has it.
    pub command: Option<String>,
    pub build: String,
    pub about: String,
    pub events: u64,
    pub threads: u32,
    pub peak_event: u64,
    pub peak_active_bytes: u64,
    pub timeline: Vec<Point>,
    /// In event order; the peak's is among them.
    pub moments: Vec<Moment>,
    /// The blame at the active peak (the top sites and the allocator's own lines).
    pub blame: Table,
    /// The one-arena model's size classes at its active peak.
    pub classes: Table,
    /// The tables asked for with [`ViewSpec::with`], in that order.
    pub extra: Vec<Table>,
}

/// Why a page cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Blame(#[from] BlameError),
    #[error("the process model: {0}")]
    Model(String),
    #[error("the trace has no calls: nothing to show")]
    Empty,
}

fn open(path: &Path) -> impl Fn() -> Result<crate::trace::RecordStream, TraceError> + '_ {
    move || crate::trace::open(path).map(crate::trace::OpenedTrace::records)
}

/// The process model's run, counting the trace's threads and taking a timeline point every
/// `every` events (calls, thread exits and controls; mappings are not events) and after
/// the last.
struct Sampler {
    run: ProcessRun,
    every: u64,
    events: u64,
    threads: u32,
    points: Vec<Point>,
}

impl Sampler {
    fn point(&self) -> Point {
        let s = self.run.stats();
        Point {
            event: self.events,
            requested: s.requested_bytes,
            allocated: s.allocated_bytes,
            active: s.active_bytes,
            resident: s.resident_bytes,
        }
    }
}

impl RecordConsumer for Sampler {
    type Error = crate::process::ProcessError;

    fn record(&mut self, record: &Record) -> Result<(), Self::Error> {
        self.run.record(record)?;
        match record {
            Record::Mapping { .. } => return Ok(()),
            Record::Call(c) => self.threads = self.threads.max(c.thread + 1),
            _ => {}
        }
        self.events += 1;
        if self.events.is_multiple_of(self.every) {
            self.points.push(self.point());
        }
        Ok(())
    }
}

/// Reads the trace at `path` once for the timeline (the process model, a point every
/// thousandth of the events), twice for the blames at every moment, and once for the size
/// classes.
pub fn gather(path: &Path, spec: &ViewSpec) -> Result<Page, ViewError> {
    let opened = crate::trace::open(path)?;
    let command = opened
        .meta
        .as_ref()
        .map(|m| m.command_line())
        .filter(|c| !c.is_empty());
    let name = path
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string());
    let header_events = opened.header.as_ref().map_or(0, |h| h.events);
    let (timeline, threads, peak_event, peak_active_bytes) = timeline(path, spec, header_events)?;
    let events = timeline.last().map_or(0, |p| p.event);
    if events == 0 {
        return Err(ViewError::Empty);
    }
    let mut at: Vec<u64> = (1..=spec.moments.max(1) as u64)
        .map(|k| (events * k / spec.moments.max(1) as u64).max(1))
        .collect();
    at.push(peak_event.max(1));
    at.sort_unstable();
    at.dedup();
    let blames =
        blame_moments(open(path), &blame_spec(spec, At::End), &at).map_err(|e| match e {
            RunError::Trace(e) => ViewError::Trace(e),
            RunError::Consumer(e) => ViewError::Blame(e),
        })?;
    let moments = blames
        .iter()
        .map(|b| Moment {
            event: b.event,
            active_bytes: b.active_bytes,
            waste_bytes: b.total().waste_bytes(),
            folded: folded_lines(b),
        })
        .collect();
    let at_peak = blames
        .iter()
        .find(|b| b.event == peak_event.max(1))
        .ok_or_else(|| ViewError::Model("no blame at the peak".into()))?;
    let blame = blame_table(
        at_peak,
        20,
        format!("waste by call site at the active peak, event {peak_event}"),
    );
    let classes = classes(path, spec)?;
    let extra = spec
        .with
        .iter()
        .map(|&e| extra(path, spec, e))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page {
        name,
        command,
        build: build_title(&spec.config),
        about: spec.about.clone(),
        events,
        threads,
        peak_event,
        peak_active_bytes,
        timeline,
        moments,
        blame,
        classes,
        extra,
    })
}

type Timeline = (Vec<Point>, u32, u64, u64);

/// The process model's timeline (a point every thousandth of the `events` the header counts,
/// and after the last), the threads, and the active peak's event and bytes.
fn timeline(path: &Path, spec: &ViewSpec, events: u64) -> Result<Timeline, ViewError> {
    let run = ProcessRun::new(
        spec.config,
        &spec.options,
        spec.cpus,
        DecayClock::default(),
        1,
        None,
    )
    .map_err(|e| ViewError::Model(e.to_string()))?;
    let mut sampler = [Sampler {
        run,
        every: crate::sim::arena_replay::default_every(events.max(1000)),
        events: 0,
        threads: 0,
        points: Vec::new(),
    }];
    engine::run(open(path)()?, &mut sampler, &|_| {}).map_err(|e| match e {
        RunError::Trace(e) => ViewError::Trace(e),
        RunError::Consumer(e) => ViewError::Model(e.to_string()),
    })?;
    let [mut sampler] = sampler;
    if !sampler.events.is_multiple_of(sampler.every) {
        let last = sampler.point();
        sampler.points.push(last);
    }
    let summary = sampler.run.finish().summary;
    Ok((
        sampler.points,
        sampler.threads,
        summary.at_active_peak.events,
        summary.peak_active_bytes,
    ))
}

fn blame_spec(spec: &ViewSpec, at: At) -> BlameSpec {
    BlameSpec {
        config: spec.config,
        options: spec.options.clone(),
        cpus: spec.cpus,
        at,
    }
}

/// The one-arena model's size classes (no thread cache), most bytes lost at its peak first.
fn classes(path: &Path, spec: &ViewSpec) -> Result<Table, ViewError> {
    let build = Build::new(crate::sizeclass::build_name(&spec.config), spec.config);
    let replays = replay_trace(path, &[build], ReplayOptions { every: None }, &|_| {})
        .map_err(|e| ViewError::Model(e.to_string()))?;
    Ok(class_table(
        "size classes at the one-arena model's active peak (no thread cache)",
        &replays[0],
        None,
    ))
}

/// One table asked for with `--with`.
fn extra(path: &Path, spec: &ViewSpec, what: Extra) -> Result<Table, ViewError> {
    match what {
        Extra::Builds => {
            let builds: Vec<Build> = crate::sizeclass::Preset::ALL
                .iter()
                .map(|p| Build::new(p.name(), p.config()))
                .collect();
            let replays = replay_trace(path, &builds, ReplayOptions { every: None }, &|_| {})
                .map_err(|e| ViewError::Model(e.to_string()))?;
            Ok(whatif_table(
                "every preset build, one arena without thread cache (fragsim replay --preset ...)",
                &replays,
            ))
        }
        Extra::Advise => {
            let machine = crate::advise::ModelMachine::with_cpus(spec.cpus);
            let grid = crate::advise::default_grid();
            let grid = spec
                .recorded
                .as_ref()
                .and_then(|(r, keep_narenas)| crate::advise::rebase(&grid, r, *keep_narenas))
                .map_or(grid, |(rebased, _)| rebased);
            let advice = crate::advise::advise_stream(
                open(path),
                &grid,
                machine,
                &crate::progress::Progress::default(),
            )
            .map_err(|e| match e {
                RunError::Trace(e) => ViewError::Trace(e),
                RunError::Consumer(e) => ViewError::Model(e.to_string()),
            })?;
            Ok(crate::advise::advice_table(
                &advice,
                "run-time options through the process model, ranked by peak resident bytes (fragsim advise --no-live)",
                &[],
            ))
        }
    }
}
