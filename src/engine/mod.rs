//! The replay engine: one loop reads a trace once and drives any number of consumers (a model
//! with its observers: peaks, ledger, timeline, a live comparison) in one pass.
//!
//! Records are read in batches; each batch goes to every consumer, each on a thread of its
//! own when there are several (`pipeline.rs`), so the trace is decoded once whatever the
//! number of builds, and the consumers never wait for one another. Consumers see the calls in
//! trace order with their 1-based index; a consumer's error stops the run after that batch,
//! the first error in trace order (then by consumer order) wins.

mod pipeline;

use crate::trace::{Batch, BetweenRecord, Call, Control, OpenedTrace, Record, TraceError};
use std::convert::Infallible;

/// Records handed to the consumers at a time: large enough that the parallel hand-off costs
/// nothing per call, small enough to stay in cache.
pub const BATCH: usize = 1 << 14;

/// One consumer of a trace's calls.
pub trait Consumer: Send {
    type Error: Send;
    /// Call number `index` (1-based over calls) of the trace, in order.
    fn call(&mut self, index: u64, call: &Call) -> Result<(), Self::Error>;
    /// Calls `first`, `first + 1`, ... in order: by default [`Consumer::call`] on each, which
    /// the compiler inlines into this loop (one loop per consumer type).
    #[inline]
    fn calls(&mut self, first: u64, calls: &[Call]) -> Result<(), Self::Error> {
        for (index, call) in (first..).zip(calls) {
            self.call(index, call)?;
        }
        Ok(())
    }
    /// A thread's exit (a one-arena model has nothing to do).
    fn thread_exit(&mut self, _thread: u32, _index: u64) -> Result<(), Self::Error> {
        Ok(())
    }
    /// A thread's exit with its time stamp, if the trace has times (for consumers that weigh
    /// by time); by default the same as [`Consumer::thread_exit`].
    fn thread_exit_at(
        &mut self,
        thread: u32,
        index: u64,
        _time_ns: Option<u64>,
    ) -> Result<(), Self::Error> {
        self.thread_exit(thread, index)
    }
    /// A mapping the recorded program's allocator made ([`Record::Mapping`]): where its
    /// memory lies (the process model places its radix-tree leaves there); nothing by default.
    fn mapping(&mut self, _addr: u64, _len: u64) -> Result<(), Self::Error> {
        Ok(())
    }

    /// A `mallctl` write of thread `thread` after call `index` ([`Record::Control`]): the
    /// process model serves it; nothing by default (a one-arena model has no cache or
    /// threads).
    fn control(
        &mut self,
        _thread: u32,
        _index: u64,
        _time_ns: Option<u64>,
        _control: Control,
    ) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A consumer that takes calls and thread exits alike as the records they came from (the
/// process model and its observers, which step on both): every such type is a [`Consumer`].
pub trait RecordConsumer: Send {
    type Error: Send;
    /// The next call or thread exit, in trace order.
    fn record(&mut self, record: &Record) -> Result<(), Self::Error>;
}

impl<R: RecordConsumer> Consumer for R {
    type Error = R::Error;

    fn call(&mut self, _index: u64, call: &Call) -> Result<(), Self::Error> {
        self.record(&Record::Call(*call))
    }

    fn thread_exit_at(
        &mut self,
        thread: u32,
        _index: u64,
        time_ns: Option<u64>,
    ) -> Result<(), Self::Error> {
        self.record(&Record::ThreadExit { thread, time_ns })
    }

    fn mapping(&mut self, addr: u64, len: u64) -> Result<(), Self::Error> {
        self.record(&Record::Mapping { addr, len })
    }

    fn control(
        &mut self,
        thread: u32,
        _index: u64,
        time_ns: Option<u64>,
        control: Control,
    ) -> Result<(), Self::Error> {
        self.record(&Record::Control {
            thread,
            time_ns,
            control,
        })
    }
}

/// Records in memory as the stream a `*_stream` function reads (see [`in_memory`]).
pub(crate) type InMemory<'a> = std::iter::Map<
    std::iter::Cloned<std::slice::Iter<'a, Record>>,
    fn(Record) -> Result<Record, Infallible>,
>;

/// Records in memory, given afresh at each call, for the functions that read a trace as a
/// stream (once or twice): they cannot fail to read, see [`consumer_error`].
pub(crate) fn in_memory<'a>(
    records: &'a [Record],
) -> impl Fn() -> Result<InMemory<'a>, Infallible> + 'a {
    move || Ok(records.iter().cloned().map(Ok as fn(Record) -> _))
}

/// The consumer's error of a run over records in memory (reading them cannot fail).
pub(crate) fn consumer_error<E>(e: RunError<E, Infallible>) -> E {
    match e {
        RunError::Consumer(e) => e,
        RunError::Trace(never) => match never {},
    }
}

/// Why a run stopped: the trace could not be read (`T`, usually [`TraceError`]), or a consumer
/// refused a call.
#[derive(Debug)]
pub enum RunError<E, T = TraceError> {
    Trace(T),
    Consumer(E),
}

/// Feeds every record of `records` to every consumer; returns the number of calls.
/// `progress` hears calls done (once per batch, counted once whatever the consumers).
pub fn run<C, I, T>(
    records: I,
    consumers: &mut [C],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, RunError<C::Error, T>>
where
    C: Consumer,
    I: IntoIterator<Item = Result<Record, T>>,
{
    if consumers.len() == 1 {
        return run_one(records, &mut consumers[0], progress);
    }
    let mut records = records.into_iter();
    drive(
        |batch| batch.fill_from(&mut records, BATCH),
        consumers,
        progress,
    )
}

/// Feeds every call and thread exit of an opened trace to every consumer, as [`run`] does;
/// returns the number of calls. The trace is decoded a batch at a time straight into a reused
/// buffer (no boxed iterator, no `Record` per call), and each consumer takes the batch's calls
/// as slices ([`Consumer::calls`]); `progress` hears the calls of every batch.
pub fn run_trace<C: Consumer>(
    trace: OpenedTrace,
    consumers: &mut [C],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, RunError<C::Error>> {
    let mut batches = trace.batches();
    drive(|batch| batches.fill(batch, BATCH), consumers, progress)
}

/// The batched loop: `fill` gives the next batch (empty at the end; on an error, the records
/// before it), every consumer takes it, then a read error stops the run. Several consumers
/// take the batches on threads of their own ([`pipeline`]).
fn drive<C: Consumer, T>(
    mut fill: impl FnMut(&mut Batch) -> Result<(), T>,
    consumers: &mut [C],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, RunError<C::Error, T>> {
    if consumers.len() > 1 {
        return pipeline::drive_threads(fill, consumers, progress);
    }
    let mut batch = Batch::with_capacity(BATCH);
    let mut calls = 0u64;
    loop {
        let read = fill(&mut batch);
        if batch.is_empty() {
            return read.map(|()| calls).map_err(RunError::Trace);
        }
        for consumer in consumers.iter_mut() {
            feed_one(&batch, calls + 1, consumer).map_err(RunError::Consumer)?;
        }
        let n = batch.calls().len() as u64;
        calls += n;
        progress(n);
        read.map_err(RunError::Trace)?;
    }
}

/// One consumer: each record goes straight from the reader to it, without the batch's copy
/// (the batch is there for several consumers in parallel). Same results and errors as the
/// batched loop: a consumer's error stops the run before the next record is read, and
/// `progress` hears every [`BATCH`] calls and the rest at the end.
fn run_one<C, I, T>(
    records: I,
    consumer: &mut C,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, RunError<C::Error, T>>
where
    C: Consumer,
    I: IntoIterator<Item = Result<Record, T>>,
{
    let mut calls = 0u64;
    let mut reported = 0u64;
    for record in records {
        match record {
            Ok(Record::Call(call)) => {
                calls += 1;
                consumer.call(calls, &call).map_err(RunError::Consumer)?;
                if calls - reported == BATCH as u64 {
                    progress(BATCH as u64);
                    reported = calls;
                }
            }
            Ok(Record::ThreadExit { thread, time_ns }) => consumer
                .thread_exit_at(thread, calls, time_ns)
                .map_err(RunError::Consumer)?,
            Ok(Record::Mapping { addr, len }) => {
                consumer.mapping(addr, len).map_err(RunError::Consumer)?
            }
            Ok(Record::Control {
                thread,
                time_ns,
                control,
            }) => consumer
                .control(thread, calls, time_ns, control)
                .map_err(RunError::Consumer)?,
            Ok(Record::Site { .. }) => {}
            Err(e) => {
                progress(calls - reported);
                return Err(RunError::Trace(e));
            }
        }
    }
    if calls > reported {
        progress(calls - reported);
    }
    Ok(calls)
}

/// One batch to one consumer: the calls between thread exits as slices.
fn feed_one<C: Consumer>(batch: &Batch, first: u64, c: &mut C) -> Result<(), C::Error> {
    let calls = batch.calls();
    let mut done = 0;
    for b in batch.between() {
        c.calls(first + done as u64, &calls[done..b.after])?;
        done = b.after;
        match b.record {
            // The exit's index is the number of calls before it.
            BetweenRecord::Exit { thread, time_ns } => {
                c.thread_exit_at(thread, first + done as u64 - 1, time_ns)?
            }
            BetweenRecord::Mapping { addr, len } => c.mapping(addr, len)?,
            BetweenRecord::Control {
                thread,
                time_ns,
                control,
            } => c.control(thread, first + b.after as u64 - 1, time_ns, control)?,
        }
    }
    c.calls(first + done as u64, &calls[done..])
}
