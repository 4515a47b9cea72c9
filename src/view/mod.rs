//! `fragsim view`: one self-contained HTML page per trace ([`render`]). This module gathers what
//! the page shows, as plain data: the process model's timeline, the waste by call site (a
//! blame, as folded stacks) at evenly spaced moments and at the active peak, the blame table
//! at the peak, and the size classes of the one-arena model. Nothing here draws.

mod band;
mod extra;
mod html;

pub use band::Band;
pub use extra::{Extra, Section};
pub use html::render;

use crate::analysis::{self, build_replays, Analysis, Finding, TraceSource};
use crate::blame::{blame_moments, blame_table, folded_lines, At, BlameError, BlameSpec};
use crate::engine::{RecordConsumer, RunError};
use crate::export::{Summary, Table};
use crate::process::{DecayClock, ProcessError, ProcessOptions, ProcessRun};
use crate::sizeclass::{build_title, AllocatorConfig};
use crate::trace::{Record, TraceError};
use crate::whatif::{class_table, Build, ReplayOptions};
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
    /// More sections on the page.
    pub with: Vec<Extra>,
    /// The real allocator's resident band to draw on the timeline (its time scale and decay
    /// clock then apply to the model's runs).
    pub band: Option<Band>,
    /// The allocator the recording says its program ran (advise's grid is moved onto it, as
    /// `fragsim advise` does), and whether its `narenas` stands (no `--cpus` given).
    pub recorded: Option<(crate::process::RecordedAllocator, bool)>,
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

impl ViewSpec {
    /// The factor the trace's times are multiplied by: the band's, else 1.
    fn time_scale(&self) -> f64 {
        self.band.as_ref().map_or(1.0, |b| b.time_scale)
    }

    /// The decay model's clock: the band's seed and clock resolution, else the default.
    fn clock(&self) -> DecayClock {
        self.band
            .as_ref()
            .map_or_else(DecayClock::default, |b| DecayClock {
                seed: b.seed,
                resolution_ns: b.clock_resolution_ns,
                start_ns: 0,
            })
    }
}

/// One arena's active bytes at every timeline point (0 where the arena was not in use).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArenaCurve {
    pub index: u32,
    pub active: Vec<u64>,
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
    /// Each arena the model used, in index order, sampled with the timeline.
    pub arenas: Vec<ArenaCurve>,
    /// The real allocator's resident band, if given.
    pub band: Option<Band>,
    /// In event order; the peak's is among them.
    pub moments: Vec<Moment>,
    /// The blame at the active peak (the top sites and the allocator's own lines).
    pub blame: Table,
    /// The one-arena model's size classes at its active peak.
    pub classes: Table,
    /// The sections asked for with [`ViewSpec::with`], in that order.
    pub extra: Vec<Section>,
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
    #[error("the band was {0}")]
    Band(String),
    #[error("the trace has no calls: nothing to show")]
    Empty,
}

/// The trace's records afresh on every call, their times multiplied by `factor`
/// ([`TraceSource::Scaled`]).
fn open<'a>(
    path: &'a Path,
    factor: f64,
) -> impl Fn() -> Result<crate::analysis::Records<'a>, TraceError> + 'a {
    let source = TraceSource::File(path).scaled(factor);
    move || source.records()
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
    /// Each point's arenas in use: (index, active bytes).
    arenas: Vec<Vec<(u32, u64)>>,
}

impl Sampler {
    fn sample(&mut self) {
        let point = self.point();
        self.points.push(point);
        let arenas = self.run.arenas();
        self.arenas
            .push(arenas.iter().map(|a| (a.index, a.active_bytes)).collect());
    }

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

/// The page's timeline as an analysis: its finding's result is the [`Timeline`].
impl Analysis<ProcessError> for Sampler {
    fn finish(mut self: Box<Self>) -> Result<Finding, ProcessError> {
        if !self.events.is_multiple_of(self.every) {
            self.sample();
        }
        let summary = self.run.finish().summary;
        let timeline = Timeline {
            arenas: arena_curves(&self.arenas),
            points: self.points,
            threads: self.threads,
            peak_event: summary.at_active_peak.events,
            peak_active_bytes: summary.peak_active_bytes,
        };
        let mut fields = Summary::new("the page's timeline");
        fields
            .field("points", "points", timeline.points.len() as u64)
            .field(
                "peak_event",
                "event of the active peak",
                timeline.peak_event,
            )
            .field(
                "peak_active_bytes",
                "peak active bytes",
                timeline.peak_active_bytes,
            );
        Ok(Finding::new(fields, timeline))
    }

    fn record(&mut self, record: &Record) -> Result<(), ProcessError> {
        self.run.record(record)?;
        match record {
            Record::Mapping { .. } => return Ok(()),
            Record::Call(c) => self.threads = self.threads.max(c.thread + 1),
            _ => {}
        }
        self.events += 1;
        if self.events.is_multiple_of(self.every) {
            self.sample();
        }
        Ok(())
    }
}

/// Reads the trace at `path` once for the timeline (the process model, a point every
/// thousandth of the events, each arena's too), twice for the blames at every moment, and
/// once for the size classes; then once or more per section asked for.
pub(crate) fn gather(path: &Path, spec: &ViewSpec) -> Result<Page, ViewError> {
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
    let t = timeline(path, spec, header_events)?;
    let events = t.points.last().map_or(0, |p| p.event);
    if events == 0 {
        return Err(ViewError::Empty);
    }
    if let Some(b) = &spec.band {
        b.check(events)?;
    }
    let (moments, blame) = moments(path, spec, events, t.peak_event)?;
    let classes = classes(path, spec)?;
    let extra = spec
        .with
        .iter()
        .map(|&e| extra::extra(path, spec, e, &name))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page {
        name,
        command,
        build: build_title(&spec.config),
        about: spec.about.clone(),
        events,
        threads: t.threads,
        peak_event: t.peak_event,
        peak_active_bytes: t.peak_active_bytes,
        timeline: t.points,
        arenas: t.arenas,
        band: spec.band.clone(),
        moments,
        blame,
        classes,
        extra,
    })
}

/// The waste by call site at `spec.moments` evenly spaced events and the active peak, and
/// the blame table at the peak.
fn moments(
    path: &Path,
    spec: &ViewSpec,
    events: u64,
    peak_event: u64,
) -> Result<(Vec<Moment>, Table), ViewError> {
    let mut at: Vec<u64> = (1..=spec.moments.max(1) as u64)
        .map(|k| (events * k / spec.moments.max(1) as u64).max(1))
        .collect();
    at.push(peak_event.max(1));
    at.sort_unstable();
    at.dedup();
    let blames = blame_moments(
        TraceSource::File(path).scaled(spec.time_scale()),
        &blame_spec(spec, At::End),
        &at,
    )
    .map_err(|e| match e {
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
    Ok((moments, blame))
}

/// The process model's run over the trace, sampled.
struct Timeline {
    points: Vec<Point>,
    arenas: Vec<ArenaCurve>,
    threads: u32,
    peak_event: u64,
    peak_active_bytes: u64,
}

/// The process model's timeline (a point every thousandth of the `events` the header counts,
/// and after the last) and each arena's, the threads, and the active peak's event and bytes.
fn timeline(path: &Path, spec: &ViewSpec, events: u64) -> Result<Timeline, ViewError> {
    let run = ProcessRun::new(spec.config, &spec.options, spec.cpus, spec.clock(), 1, None)
        .map_err(|e| ViewError::Model(e.to_string()))?;
    let sampler = Sampler {
        run,
        every: crate::sim::arena_replay::default_every(events.max(1000)),
        events: 0,
        threads: 0,
        points: Vec::new(),
        arenas: Vec::new(),
    };
    let findings = analysis::run_stream(
        open(path, spec.time_scale())()?,
        vec![Box::new(sampler)],
        &|_| {},
    )
    .map_err(|e| match e {
        RunError::Trace(e) => ViewError::Trace(e),
        RunError::Consumer(e) => ViewError::Model(e.to_string()),
    })?;
    Ok(analysis::results::<Timeline>(findings).remove(0))
}

/// Each arena in use at any point, its active bytes at every point.
fn arena_curves(at: &[Vec<(u32, u64)>]) -> Vec<ArenaCurve> {
    let mut indices: Vec<u32> = at.iter().flatten().map(|&(i, _)| i).collect();
    indices.sort_unstable();
    indices.dedup();
    indices
        .into_iter()
        .map(|index| ArenaCurve {
            index,
            active: at
                .iter()
                .map(|p| p.iter().find(|&&(i, _)| i == index).map_or(0, |&(_, v)| v))
                .collect(),
        })
        .collect()
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
    let replays = build_replays(
        TraceSource::File(path),
        &[build],
        ReplayOptions { every: None },
        &|_| {},
    )
    .map_err(|e| ViewError::Model(e.to_string()))?;
    Ok(class_table(
        "size classes at the one-arena model's active peak (no thread cache)",
        &replays[0],
        None,
    ))
}
