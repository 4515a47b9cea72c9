//! The parent side: the model beside the trace, the event file, one child per allocator,
//! their samples turned into deltas over each child's baseline.

use super::events::{encode_entry, encode_header};
use super::{Allocator, ChildReport, Library, MeasureError};
use crate::analysis::{self, Analysis, Finding, TraceSource};
use crate::engine::{self, RunError};
use crate::export::Summary;
use crate::process::{machine_cpus, Process, ProcessOptions};
use crate::sim::ArenaModel;
use crate::sizeclass::{AllocatorConfig, JemallocVersion};
use crate::trace::{Event, Record, TraceError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What to measure and how.
#[derive(Clone, Debug)]
pub struct MeasureOptions {
    pub allocators: Vec<Allocator>,
    /// Sample every K events (and at event 0 and after the last).
    pub every: u64,
    /// The fragsim executable (its hidden `__measure-child` command is the child).
    pub exe: PathBuf,
    /// Extra environment for every child (e.g. `GLIBC_TUNABLES`, `MALLOC_CONF`); the
    /// children otherwise inherit this process's, `LD_PRELOAD` aside.
    pub env: Vec<(String, String)>,
}

/// One sample: bytes over the child's baseline at event 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Sample {
    pub event: u64,
    /// Anonymous resident bytes over the baseline (negative if the allocator gave back
    /// memory it held at the baseline).
    pub resident: i64,
    /// The allocator's in-use figure over its baseline (`None`: not available).
    pub in_use: Option<i64>,
    /// The allocator's held figure over its baseline (`None`: not available).
    pub held: Option<i64>,
    /// jemalloc's `stats.active` over its baseline (`None`: not jemalloc).
    pub active: Option<i64>,
    /// Bytes the trace's live objects asked for at this event.
    pub requested: u64,
}

/// What a jemalloc child says of itself, read before the baseline.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct JemallocBuild {
    pub config: AllocatorConfig,
    /// Large bytes start-up left live in arena 0 (what the process model starts from:
    /// [`crate::process::Process::replayer_start`]).
    pub arena0_large: u64,
}

/// One allocator's measured replay.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AllocatorRun {
    pub allocator: Allocator,
    #[serde(flatten)]
    pub library: Library,
    pub replay_ns: u64,
    pub events: u64,
    /// Replay threads (one per trace thread).
    pub threads: u64,
    pub jemalloc: Option<JemallocBuild>,
    pub samples: Vec<Sample>,
}

impl AllocatorRun {
    /// The sample with the most resident bytes (the first of equals).
    pub fn peak(&self) -> Sample {
        let mut best = self.samples[0];
        for s in &self.samples {
            if s.resident > best.resident {
                best = *s;
            }
        }
        best
    }

    /// The mean resident bytes over every sample after the baseline.
    pub fn mean_resident(&self) -> f64 {
        let rest = &self.samples[1.min(self.samples.len() - 1)..];
        rest.iter().map(|s| s.resident as f64).sum::<f64>() / rest.len() as f64
    }

    pub fn ns_per_event(&self) -> Option<f64> {
        (self.events > 0).then(|| self.replay_ns as f64 / self.events as f64)
    }

    pub(crate) fn peak_in_use(&self) -> Option<i64> {
        self.samples.iter().filter_map(|s| s.in_use).max()
    }

    pub(crate) fn peak_held(&self) -> Option<i64> {
        self.samples.iter().filter_map(|s| s.held).max()
    }
}

/// An allocator whose library is not installed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Missing {
    pub allocator: Allocator,
    pub library: &'static str,
    pub package: &'static str,
}

/// Everything measured on one trace.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measurement {
    pub events: u64,
    pub every: u64,
    pub runs: Vec<AllocatorRun>,
    pub missing: Vec<Missing>,
    /// The most bytes the trace's live objects asked for at once, over every event.
    pub peak_requested: u64,
    /// The model's build, e.g. `5.3.1 (16 B quantum, 4 KiB pages, large to pages)`.
    pub model_label: String,
    /// Which model: one arena, or the process model for a trace with threads.
    pub model_kind: String,
    /// The model's active bytes at each sample event.
    pub model: Vec<(u64, u64)>,
    /// The model's peak active bytes over every event.
    pub model_peak_active: u64,
}

struct ModelSide {
    label: String,
    /// Which model: one arena, or the whole process for a trace with threads.
    kind: String,
    /// (event, requested, active) at each sample event.
    points: Vec<(u64, u64, u64)>,
    peak_requested: u64,
    peak_active: u64,
}

/// What a first reading of the trace gives: calls, entries of the event file (calls and
/// thread exits), object ids (the highest + 1) and whether it has threads.
#[derive(Default)]
struct Shape {
    calls: u64,
    entries: u64,
    ids: u64,
    threaded: bool,
}

fn shape_of<E>(records: impl Iterator<Item = Result<Record, E>>) -> Result<Shape, E> {
    let mut s = Shape::default();
    for r in records {
        match r? {
            Record::Call(c) => {
                s.calls += 1;
                s.entries += 1;
                s.ids = s.ids.max(u64::from(c.event.id()) + 1);
                s.threaded |= c.thread != 0;
            }
            Record::ThreadExit { .. } => {
                s.entries += 1;
                s.threaded = true;
            }
            Record::Site { .. } | Record::Mapping { .. } | Record::Control { .. } => {}
        }
    }
    Ok(s)
}

/// The model a measurement compares with: the process model for a trace with threads.
enum SideModel {
    Process(Box<Process>),
    Arena(Box<ArenaModel>),
}

/// The trace through the model of the linked jemalloc, as an engine consumer: checks every
/// event before any child runs, and gives requested and active bytes at the sample events
/// (counted in calls, as the children count them). A trace with threads goes through the
/// process model (thread caches, arenas for this machine's CPUs, 5.3.1's deterministic
/// cache GC): one arena would leave out what the threads' caches and arenas hold.
struct SideRun {
    model: SideModel,
    side: ModelSide,
    calls: u64,
    every: u64,
    n: u64,
}

impl SideRun {
    fn new(shape: &Shape, every: u64) -> Result<SideRun, MeasureError> {
        let config = crate::live::Api::linked().config().map_err(|e| {
            MeasureError::child_input(&format!("the linked jemalloc's build: {e:#}"))
        })?;
        let model = if shape.threaded {
            let options = ProcessOptions {
                experimental_tcache_gc: (config.version == JemallocVersion::V5_3_1)
                    .then_some(false),
                ..ProcessOptions::default()
            };
            SideModel::Process(Box::new(Process::new(config, options, machine_cpus())?))
        } else {
            SideModel::Arena(Box::new(ArenaModel::new(config)?))
        };
        Ok(SideRun {
            model,
            side: ModelSide {
                label: crate::sizeclass::build_name(&config),
                kind: "one arena, no thread cache".into(),
                points: vec![(0, 0, 0)],
                peak_requested: 0,
                peak_active: 0,
            },
            calls: shape.calls,
            every,
            n: 0,
        })
    }

    fn finish(self) -> ModelSide {
        let mut side = self.side;
        if let SideModel::Process(process) = &self.model {
            side.kind = format!(
                "the process model: thread caches, {} arenas",
                process.narenas()
            );
        }
        if self.calls == 0 {
            side.points.push((0, 0, 0));
        }
        side
    }
}

/// The model beside the measured allocators as an analysis: its finding's result is its
/// [`ModelSide`] (points and peak), its summary the model's peak.
impl Analysis<MeasureError> for SideRun {
    fn finish(self: Box<Self>) -> Result<Finding, MeasureError> {
        let side = SideRun::finish(*self);
        let mut summary = Summary::new(format!("the model beside the allocators ({})", side.kind));
        summary
            .field(
                "peak_requested_bytes",
                "peak requested bytes",
                side.peak_requested,
            )
            .field("points", "points", side.points.len() as u64);
        Ok(Finding::new(summary, side))
    }

    fn record(&mut self, r: &Record) -> Result<(), MeasureError> {
        let (requested, active) = match &mut self.model {
            SideModel::Process(process) => {
                process.apply(r)?;
                if !matches!(r, Record::Call(_)) {
                    return Ok(());
                }
                let s = process.stats();
                (s.requested_bytes, s.active_bytes)
            }
            SideModel::Arena(arena) => {
                let Record::Call(c) = r else {
                    return Ok(());
                };
                arena.apply(c.event)?;
                let s = arena.stats();
                (s.requested_bytes, s.active_bytes)
            }
        };
        self.n += 1;
        let side = &mut self.side;
        side.peak_requested = side.peak_requested.max(requested);
        side.peak_active = side.peak_active.max(active);
        if self.n.is_multiple_of(self.every) || self.n == self.calls {
            side.points.push((self.n, requested, active));
        }
        Ok(())
    }
}

/// Measures `events` (one thread) under every allocator of `options`: [`measure_records`].
pub fn measure(events: &[Event], options: &MeasureOptions) -> Result<Measurement, MeasureError> {
    measure_records(&Record::plain_calls(events), options)
}

/// Measures `records` under every allocator of `options`, one child process each, in turn
/// (so that they do not compete for the machine), each trace thread on its own replay
/// thread in the trace's order: `measure_stream` over records in memory.
pub fn measure_records(
    records: &[Record],
    options: &MeasureOptions,
) -> Result<Measurement, MeasureError> {
    measure_stream_reopened(engine::in_memory(records), options).map_err(engine::consumer_error)
}

/// Measures a trace under every allocator of `options`, one child process each, in turn.
/// `open` gives its records afresh: read once for its shape, once through the model (an
/// [`engine::run`] consumer) while the children's event file is written, so this process's
/// memory follows the live objects, never the trace's length. A library that is not
/// installed is listed in [`Measurement::missing`]; a child that fails is an error.
pub fn measure_stream(
    source: TraceSource<'_>,
    options: &MeasureOptions,
) -> Result<Measurement, RunError<MeasureError, TraceError>> {
    measure_stream_reopened(|| source.records(), options)
}

/// [`measure_stream`] over any re-opening of a trace's records (`open` gives them afresh).
pub(crate) fn measure_stream_reopened<I, E>(
    open: impl Fn() -> Result<I, E>,
    options: &MeasureOptions,
) -> Result<Measurement, RunError<MeasureError, E>>
where
    I: Iterator<Item = Result<Record, E>>,
{
    let fail = RunError::Consumer;
    if options.every == 0 {
        return Err(fail(MeasureError::ZeroEvery));
    }
    for (i, a) in options.allocators.iter().enumerate() {
        if options.allocators[..i].contains(a) {
            return Err(fail(MeasureError::Duplicate(a.name().to_string())));
        }
    }
    let shape = shape_of(open().map_err(RunError::Trace)?).map_err(RunError::Trace)?;
    let file = tempfile::Builder::new()
        .prefix(".fragsim-measure-")
        .tempfile()
        .map_err(|e| fail(MeasureError::io("temporary event file", e)))?;
    let _cleanup = crate::cleanup::remove_on_interrupt(file.path());
    let mut out = std::io::BufWriter::new(file.as_file());
    let mut written = out.write_all(&encode_header(shape.entries, shape.ids));
    let mut bad_entry = None;
    let records = open().map_err(RunError::Trace)?.inspect(|r| {
        let Ok(r) = r else { return };
        match encode_entry(r) {
            Ok(Some(entry)) if written.is_ok() => written = out.write_all(&entry),
            Ok(_) => {}
            Err(e) => {
                bad_entry.get_or_insert(e);
            }
        }
    });
    let side = SideRun::new(&shape, options.every).map_err(fail)?;
    let findings = analysis::run_stream(records, vec![Box::new(side)], &|_| {})?;
    if let Some(e) = bad_entry {
        return Err(fail(e));
    }
    written
        .and_then(|()| out.flush())
        .map_err(|e| fail(MeasureError::io("temporary event file", e)))?;
    drop(out);
    let model: ModelSide = analysis::results(findings).remove(0);
    let calls = shape.calls;
    let mut runs = Vec::new();
    let mut missing = Vec::new();
    for &allocator in &options.allocators {
        let library = match (allocator.library_name(), allocator.find_library()) {
            (Some(name), None) => {
                missing.push(Missing {
                    allocator,
                    library: name,
                    package: allocator.debian_package().unwrap_or("?"),
                });
                continue;
            }
            (_, found) => found,
        };
        let report =
            run_child(options, allocator, library.as_deref(), file.path()).map_err(fail)?;
        runs.push(to_run(allocator, report, &model.points, calls).map_err(fail)?);
    }
    Ok(Measurement {
        events: calls,
        every: options.every,
        runs,
        missing,
        peak_requested: model.peak_requested,
        model_label: model.label,
        model_kind: model.kind,
        model: model.points.iter().map(|&(e, _, a)| (e, a)).collect(),
        model_peak_active: model.peak_active,
    })
}

fn run_child(
    options: &MeasureOptions,
    allocator: Allocator,
    library: Option<&Path>,
    events: &Path,
) -> Result<ChildReport, MeasureError> {
    let exe = &options.exe;
    let fail = |message: String| MeasureError::Child {
        allocator: allocator.name().to_string(),
        message,
    };
    let mut command = Command::new(exe);
    command
        .args([
            "__measure-child",
            "--allocator",
            allocator.name(),
            "--every",
        ])
        .arg(options.every.to_string())
        .arg(events)
        .envs(options.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match library {
        Some(lib) => command.env("LD_PRELOAD", lib),
        None => command.env_remove("LD_PRELOAD"),
    };
    // Under jemalloc the replayer's main thread leaves the automatic arenas before `main`
    // (the process child's start-up constructor, `crate::check::baton`).
    match allocator {
        Allocator::Jemalloc => command.env("FRAGSIM_PROCESS_CHILD", "system"),
        Allocator::Jemalloc531 => command.env("FRAGSIM_PROCESS_CHILD", "linked"),
        _ => command.env_remove("FRAGSIM_PROCESS_CHILD"),
    };
    // Stopped on interrupt, as every child fragsim waits for.
    let mut child = crate::cleanup::GuardedChild::spawn(&mut command)
        .map_err(|e| fail(format!("cannot start '{}': {e}", exe.display())))?;
    let mut out = String::new();
    let mut err = String::new();
    // The report is one line written at the end; stderr stays small. Reading stdout to its
    // end first cannot deadlock on a full stderr pipe of a few lines.
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out)
            .map_err(|e| fail(format!("reading its output: {e}")))?;
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = child
        .wait()
        .map_err(|e| fail(format!("waiting for it: {e}")))?;
    if !status.success() {
        let last = err.lines().last().unwrap_or("").trim().to_string();
        return Err(fail(format!("the child failed ({status}): {last}")));
    }
    serde_json::from_str(out.trim()).map_err(|e| fail(format!("bad report from the child: {e}")))
}

/// A figure that is zero at every sample is one the library does not keep (Debian's
/// mimalloc is built without statistics: its commit count stays 0): it and its source
/// become `None`.
fn drop_unkept_figures(report: &mut ChildReport) {
    if report.samples.iter().all(|s| s.2.unwrap_or(0) == 0) {
        for s in &mut report.samples {
            s.2 = None;
        }
        report.library.in_use_source = None;
    }
    if report.samples.iter().all(|s| s.3.unwrap_or(0) == 0) {
        for s in &mut report.samples {
            s.3 = None;
        }
        report.library.held_source = None;
    }
}

fn to_run(
    allocator: Allocator,
    report: ChildReport,
    points: &[(u64, u64, u64)],
    events: u64,
) -> Result<AllocatorRun, MeasureError> {
    let fail = |message: &str| MeasureError::Child {
        allocator: allocator.name().to_string(),
        message: message.to_string(),
    };
    if report.samples.len() != points.len()
        || report.samples.iter().zip(points).any(|(s, p)| s.0 != p.0)
    {
        return Err(fail("its samples are not at the expected events"));
    }
    let mut report = report;
    drop_unkept_figures(&mut report);
    let jemalloc = match (&report.jemalloc_config, report.jemalloc_arena0_large) {
        (Some(json), Some(arena0_large)) => Some(JemallocBuild {
            config: crate::check::arena_replay::parse_config(json)
                .map_err(|e| fail(&format!("its build: {e:#}")))?,
            arena0_large,
        }),
        _ => None,
    };
    let (_, r0, u0, h0, a0) = report.samples[0];
    let delta = |v: Option<u64>, base: Option<u64>| match (v, base) {
        (Some(v), Some(b)) => Some(v as i64 - b as i64),
        _ => None,
    };
    let samples = report
        .samples
        .iter()
        .zip(points)
        .map(|(&(event, r, u, h, a), &(_, requested, _))| Sample {
            event,
            resident: r as i64 - r0 as i64,
            in_use: delta(u, u0),
            held: delta(h, h0),
            active: delta(a, a0),
            requested,
        })
        .collect();
    Ok(AllocatorRun {
        allocator,
        library: report.library,
        replay_ns: report.replay_ns,
        events,
        threads: report.threads,
        jemalloc,
        samples,
    })
}
