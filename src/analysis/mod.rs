//! One trace, any number of ways of looking at it (ripgrep's searcher and sinks): a
//! [`TraceSource`] feeds each [`Analysis`] the trace's records in one engine pass (each on a
//! thread of its own when there are several), and each ends with a [`Finding`]: its result
//! and the summary a table shows, its column names the same wherever it is shown (the CLI,
//! the report).
//!
//! Adding a way to look at a trace is one file: a type that takes records and finishes into
//! a finding (`arena.rs`, the one-arena model's peak and mean, is 60 lines), then whatever
//! option asks for it.

pub(crate) mod arena;
pub(crate) mod builds;
pub(crate) mod process;

pub use arena::ActiveBytes;
pub use arena::OneArena;
pub use arena::{ArenaReplay, ArenaTimeline};
pub use builds::{build_replays, BuildModel};
pub use process::ProcessModel;
pub use process::ProcessModelRun;

use crate::engine::{self, Consumer, RunError};
use crate::export::Summary;
use crate::trace::{Call, Control, Record, TraceError};
use anyhow::Result;
use std::any::Any;
use std::path::Path;

/// Where a trace's records come from: a file, streamed (memory follows live objects, never
/// the trace's length), as is or with its times scaled, or records in memory (a generated
/// trace, a test's). The one type that says "a trace" to every model, analysis and live
/// comparison.
#[derive(Clone, Copy, Debug)]
pub enum TraceSource<'a> {
    File(&'a Path),
    /// A file whose times are multiplied by the factor from its first time on
    /// (`--time-scale`: [`crate::process::scale_times`]).
    Scaled(&'a Path, f64),
    Records(&'a [Record]),
}

impl<'a> From<&'a Path> for TraceSource<'a> {
    fn from(path: &'a Path) -> Self {
        TraceSource::File(path)
    }
}

impl<'a> From<&'a [Record]> for TraceSource<'a> {
    fn from(records: &'a [Record]) -> Self {
        TraceSource::Records(records)
    }
}

impl<'a> From<&'a Vec<Record>> for TraceSource<'a> {
    fn from(records: &'a Vec<Record>) -> Self {
        TraceSource::Records(records)
    }
}

/// What the models step on in a trace, learnt in one streaming pass: a v4 header counts
/// calls, exits, threads and sites, not the `mallctl` writes a model also steps on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceShape {
    /// Calls, thread exits and `mallctl` writes: a process model's events.
    pub events: u64,
    pub calls: u64,
    /// Threads that call (the highest thread id + 1).
    pub threads: u32,
    /// Whether any record has a time.
    pub timed: bool,
}

impl TraceShape {
    /// Counts `record` in.
    pub fn add(&mut self, record: &Record) {
        self.timed |= record.time_ns().is_some();
        match record {
            Record::Site { .. } | Record::Mapping { .. } => return,
            Record::Call(c) => {
                self.calls += 1;
                self.threads = self.threads.max(c.thread + 1);
            }
            Record::ThreadExit { .. } | Record::Control { .. } => {}
        }
        self.events += 1;
    }
}

/// The records of a source, as the engine reads them.
pub type Records<'a> = Box<dyn Iterator<Item = Result<Record, TraceError>> + Send + 'a>;

impl<'a> TraceSource<'a> {
    /// The records, from the start (a file is opened again at each call).
    pub fn records(&self) -> Result<Records<'a>, TraceError> {
        Ok(match *self {
            TraceSource::File(path) => Box::new(crate::trace::open(path)?.records()),
            TraceSource::Scaled(path, factor) => Box::new(crate::process::scaled_records(
                crate::trace::open(path)?.records(),
                factor,
            )),
            TraceSource::Records(records) => Box::new(records.iter().cloned().map(Ok)),
        })
    }

    /// The file the records come from, if any.
    pub fn path(&self) -> Option<&'a Path> {
        match *self {
            TraceSource::File(path) | TraceSource::Scaled(path, _) => Some(path),
            TraceSource::Records(_) => None,
        }
    }

    /// The factor the times are multiplied by (1 unless scaled).
    pub fn time_scale(&self) -> f64 {
        match *self {
            TraceSource::Scaled(_, factor) => factor,
            _ => 1.0,
        }
    }

    /// A file with its times multiplied by `factor` (the file itself when `factor` is 1);
    /// records in memory are taken as they are.
    pub fn scaled(self, factor: f64) -> TraceSource<'a> {
        match self {
            TraceSource::File(path) | TraceSource::Scaled(path, _) if factor != 1.0 => {
                TraceSource::Scaled(path, factor)
            }
            TraceSource::Scaled(path, _) => TraceSource::File(path),
            other => other,
        }
    }

    /// The trace's calls, to size a progress bar or a timeline before the run: a binary
    /// trace's header counts them; otherwise one pass over the records (which also checks
    /// them).
    pub fn calls(&self) -> Result<u64, TraceError> {
        if let Some(path) = self.path() {
            if let Some(n) = crate::trace::open(path)?.events_hint() {
                return Ok(n);
            }
        }
        Ok(self.shape()?.calls)
    }

    /// The trace's shape, in one pass over its records.
    pub fn shape(&self) -> Result<TraceShape, TraceError> {
        let mut shape = TraceShape::default();
        for r in self.records()? {
            shape.add(&r?);
        }
        Ok(shape)
    }

    /// A name for titles: the file's stem, or `trace`.
    pub fn name(&self) -> String {
        match self.path() {
            Some(path) => path
                .file_stem()
                .map_or("trace".into(), |s| s.to_string_lossy().to_string()),
            None => "trace".into(),
        }
    }
}

/// One way of looking at a trace: the records in trace order, then its finding. Its errors
/// are `E`: any error by default; a library step whose errors are typed (advise's settings,
/// the routing what-if's rule sets) names its own type, and `run_stream` gives it back.
pub trait Analysis<E = anyhow::Error>: Send {
    /// The next call, thread exit, mapping or `mallctl` write (sites are not passed on: a
    /// call carries its site's id).
    fn record(&mut self, record: &Record) -> Result<(), E>;
    /// Calls `first`, `first + 1`, ... (1-based over calls) in a row, as the engine decodes
    /// them a batch at a time: by default each as a record; an analysis that steps on calls
    /// alone takes the slice whole (one virtual call per batch, not per call).
    fn calls(&mut self, first: u64, calls: &[Call]) -> Result<(), E> {
        let _ = first;
        calls
            .iter()
            .try_for_each(|c| self.record(&Record::Call(*c)))
    }
    /// The result and its summary.
    fn finish(self: Box<Self>) -> Result<Finding, E>;
}

/// What an analysis found: its summary (named fields) and its result, whose type the
/// analysis documents ([`Finding::result`] takes it back).
pub struct Finding {
    pub summary: Summary,
    result: Box<dyn Any + Send>,
}

impl Finding {
    pub fn new(summary: Summary, result: impl Any + Send) -> Self {
        Finding {
            summary,
            result: Box::new(result),
        }
    }

    /// The result as the type the analysis gave (`None`: another type).
    pub fn result<T: Any>(self) -> Option<T> {
        self.result.downcast().ok().map(|b| *b)
    }
}

/// The results of findings whose analyses all give a `T` (a run of one kind of analysis,
/// in order). A finding of another type is this crate's own mistake, never the input's.
pub(crate) fn results<T: Any>(findings: Vec<Finding>) -> Vec<T> {
    findings
        .into_iter()
        .map(|f| {
            f.result()
                .expect("an analysis's finding holds the type its analysis documents")
        })
        .collect()
}

/// An analysis as the engine's consumer.
struct Sink<'a, E>(Box<dyn Analysis<E> + 'a>);

impl<E: Send> Consumer for Sink<'_, E> {
    type Error = E;

    fn call(&mut self, index: u64, call: &Call) -> Result<(), E> {
        self.0.calls(index, std::slice::from_ref(call))
    }

    fn calls(&mut self, first: u64, calls: &[Call]) -> Result<(), E> {
        self.0.calls(first, calls)
    }

    fn thread_exit_at(&mut self, thread: u32, _index: u64, time_ns: Option<u64>) -> Result<(), E> {
        self.0.record(&Record::ThreadExit { thread, time_ns })
    }

    fn mapping(&mut self, addr: u64, len: u64) -> Result<(), E> {
        self.0.record(&Record::Mapping { addr, len })
    }

    fn control(
        &mut self,
        thread: u32,
        _index: u64,
        time_ns: Option<u64>,
        control: Control,
    ) -> Result<(), E> {
        self.0.record(&Record::Control {
            thread,
            time_ns,
            control,
        })
    }
}

/// Runs every analysis over `source` in one pass; their findings in the same order.
pub fn run(source: TraceSource<'_>, analyses: Vec<Box<dyn Analysis>>) -> Result<Vec<Finding>> {
    run_with_progress(source, analyses, &|_| {})
}

/// [`run`], telling `progress` of the calls read (once per batch, whatever the number of
/// analyses). A file is decoded a batch at a time straight into the engine's buffers
/// ([`engine::run_trace`]); records in memory go through [`engine::run`].
pub fn run_with_progress(
    source: TraceSource<'_>,
    analyses: Vec<Box<dyn Analysis>>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<Finding>> {
    let mut sinks: Vec<Sink<'_, anyhow::Error>> = analyses.into_iter().map(Sink).collect();
    let ran = match source {
        TraceSource::File(path) => {
            engine::run_trace(crate::trace::open(path)?, &mut sinks, progress).map(drop)
        }
        TraceSource::Records(_) | TraceSource::Scaled(..) => {
            engine::run(source.records()?, &mut sinks, progress).map(drop)
        }
    };
    ran.map_err(|e| run_error(e, &source))?;
    finish(sinks)
}

/// [`run`] over any stream of records (a caller's own reading of a trace: `advise` reads a
/// file as a stream it opened), telling `progress` of the calls read; the error is the
/// stream's (`RunError::Trace`) or the first analysis's in trace order.
pub(crate) fn run_stream<'a, A: Send, I, E>(
    records: I,
    analyses: Vec<Box<dyn Analysis<A> + 'a>>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<Finding>, RunError<A, E>>
where
    I: IntoIterator<Item = Result<Record, E>>,
{
    let mut sinks: Vec<Sink<'_, A>> = analyses.into_iter().map(Sink).collect();
    engine::run(records, &mut sinks, progress)?;
    finish(sinks).map_err(RunError::Consumer)
}

fn run_error(e: RunError<anyhow::Error>, source: &TraceSource<'_>) -> anyhow::Error {
    match e {
        RunError::Trace(e) => anyhow::Error::from(e).context(format!("reading {}", source.name())),
        RunError::Consumer(e) => e,
    }
}

fn finish<E>(sinks: Vec<Sink<'_, E>>) -> Result<Vec<Finding>, E> {
    sinks.into_iter().map(|s| s.0.finish()).collect()
}
