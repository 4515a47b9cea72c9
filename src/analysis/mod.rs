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
/// the trace's length), or records in memory (a generated trace, a test's).
#[derive(Clone, Copy, Debug)]
pub enum TraceSource<'a> {
    File(&'a Path),
    Records(&'a [Record]),
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
pub(crate) type Records<'a> = Box<dyn Iterator<Item = Result<Record, TraceError>> + Send + 'a>;

impl<'a> TraceSource<'a> {
    /// The records, from the start (a file is opened again at each call).
    pub fn records(&self) -> Result<Records<'a>, TraceError> {
        Ok(match *self {
            TraceSource::File(path) => Box::new(crate::trace::open(path)?.records()),
            TraceSource::Records(records) => Box::new(records.iter().cloned().map(Ok)),
        })
    }

    /// The trace's calls, to size a progress bar or a timeline before the run: a binary
    /// trace's header counts them; otherwise one pass over the records (which also checks
    /// them).
    pub fn calls(&self) -> Result<u64, TraceError> {
        if let TraceSource::File(path) = *self {
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
        match self {
            TraceSource::File(path) => path
                .file_stem()
                .map_or("trace".into(), |s| s.to_string_lossy().to_string()),
            TraceSource::Records(_) => "trace".into(),
        }
    }
}

/// One way of looking at a trace: the records in trace order, then its finding. Its errors
/// are `E`: any error by default; a library step whose errors are typed (advise's settings,
/// the routing what-if's rule sets) names its own type, and [`run_stream`] gives it back.
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
        TraceSource::Records(records) => engine::run(
            records.iter().cloned().map(Ok::<Record, TraceError>),
            &mut sinks,
            progress,
        )
        .map(drop),
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

/// [`run`] with the trace's times multiplied by `factor` from its first time on
/// ([`crate::process::scaled_records`]: `--time-scale`).
pub(crate) fn run_with_time_scale(
    source: TraceSource<'_>,
    factor: f64,
    analyses: Vec<Box<dyn Analysis>>,
) -> Result<Vec<Finding>> {
    if factor == 1.0 {
        return run(source, analyses);
    }
    let mut sinks: Vec<Sink<'_, anyhow::Error>> = analyses.into_iter().map(Sink).collect();
    let records = crate::process::scaled_records(source.records()?, factor);
    engine::run(records, &mut sinks, &|_| {}).map_err(|e| run_error(e, &source))?;
    finish(sinks)
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
