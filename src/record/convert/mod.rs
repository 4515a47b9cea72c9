//! Raw per-thread events -> one stream of trace records: merged by sequence number,
//! addresses -> ids lowest-free-first (the importer valgrind logs use), raw thread ids ->
//! dense trace threads in order of first appearance, stacks -> the site table.
//!
//! The merge of one image's threads is in `merge.rs`, one merged event -> calls and sites in
//! `calls.rs`, the ids on a thread of their own in `ids.rs`, the address table split over
//! shard threads beside it in `shards.rs`.

mod calls;
mod ids;
mod merge;
mod shards;

use super::raw::{DecodePool, FastMap, RawProcess, FLAG_NO_UNWINDER, FLAG_TSC};
use super::symbols::Symbolizer;
use crate::trace::{AddressImporter, Frame, IssueCounts, Record, SiteId, ThreadId, TraceError};
use ids::{IdThread, Staged};
use merge::ImageMerge;
use serde::Serialize;
use std::collections::HashMap;

/// What a conversion found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConvertSummary {
    /// Calls written (allocs, frees, reallocs; repairs included).
    pub events: u64,
    pub allocs: u64,
    pub frees: u64,
    pub reallocs: u64,
    /// Calls per trace thread.
    pub events_per_thread: Vec<u64>,
    pub thread_exits: u64,
    pub sites: u64,
    /// The allocator's mappings written (`Record::Mapping`).
    pub mappings: u64,
    /// The program's `mallctl` writes written (`Record::Control`).
    pub controls: u64,
    /// The program's jemalloc as it ran (the last image's `ALLOCATOR` chunk), if it had one.
    pub allocator: Option<String>,
    /// Program images (1 + the number of execs).
    pub images: usize,
    /// Objects still live when an exec replaced the image (freed in the trace there).
    pub released_by_exec: u64,
    /// Images replaced by an exec the recorder did not see (a direct `execve` system call):
    /// the calls they had not written yet are lost; their objects are freed at the next
    /// image's start, as for any exec.
    pub unseen_execs: u64,
    /// From the first image's start to the last event.
    pub duration_ns: u64,
    /// The decoding threads' CPU time (0: decoded on the converting thread).
    #[serde(skip)]
    pub decode_cpu_ns: u64,
    /// The id thread's CPU time (0: ids assigned on the converting thread).
    #[serde(skip)]
    pub ids_cpu_ns: u64,
    /// The busiest address shard thread's CPU time (0: no shards).
    #[serde(skip)]
    pub shards_cpu_ns: u64,
    /// The last image ended without the recorder's `END` (killed, fatal signal).
    pub truncated: bool,
    pub signal: Option<u64>,
    pub dropped_threads: u64,
    pub late_calls: u64,
    pub lost_bytes: u64,
    /// Stacks were asked for but libunwind could not be loaded.
    pub no_unwinder: bool,
    /// Stripped modules (no symbols, no debug file found) whose frames stay
    /// `module+0xOFFSET`, with how many distinct frames, the most first.
    pub unnamed_frames: Vec<(String, u64)>,
    pub issues: IssueCounts,
}

/// Where converted records go, in order, a batch at a time: the sink takes what it wants out
/// of the vector (what it leaves is dropped). A call per record, through a `dyn`, and the
/// record's copy into the writer's batch were a tenth of a conversion.
pub(crate) type Sink<'a> = dyn FnMut(&mut Vec<Record>) -> Result<(), TraceError> + 'a;

/// Records handed to the sink at a time: 1.8 MB of them, still in this core's 4 MB L2 when
/// the writer reads them, and a quarter of 8,192's hand-overs (each may wake the writer):
/// `convert_raw` 3% less CPU on the C++ program's raw file, 2% on CPython's (2,048: 10% more).
pub(crate) const SINK_BATCH: usize = 32768;

struct Converter<'a, 'p> {
    file: String,
    sink: &'a mut Sink<'a>,
    /// Told how many more bytes of events were read, chunk by chunk.
    progress: &'p mut dyn FnMut(u64),
    importer: AddressImporter,
    base_ns: u64,
    last_ns: u64,
    next_thread: ThreadId,
    /// Sites by their frames' ids in `frames`.
    sites: FastMap<Vec<u32>, SiteId>,
    /// Every distinct frame of the recording, named once (a stack's frames are looked up by
    /// return address in `ImageState::frame_of`, not symbolized again per stack).
    frames: Vec<Frame>,
    frame_ids: HashMap<Frame, u32>,
    symbolizer: Symbolizer,
    summary: ConvertSummary,
    /// Records not yet handed to the sink.
    records: Vec<Record>,
    /// Decoding threads, if the threads' chunks are decoded beside the merge.
    pool: Option<std::sync::Arc<DecodePool>>,
    /// The id thread, if the ids are assigned beside the merge (then every record goes
    /// through it, in order).
    ids: Option<IdThread>,
}

/// Threads a conversion uses beside the converting one (which merges the threads' events in
/// order): each takes a share of the converting thread's work off it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvertThreads {
    /// Threads that decode the threads' chunks ahead of the merge.
    pub decoders: usize,
    /// A thread that keeps the address table and hands out the ids after the merge.
    pub ids: bool,
    /// Threads that keep the address table split by address, beside the id thread (which
    /// then keeps only the ids; any shards imply the id thread).
    pub shards: usize,
}

impl Converter<'_, '_> {
    #[inline(always)]
    fn push(&mut self, record: Record) -> Result<(), TraceError> {
        if let Some(ids) = &mut self.ids {
            return ids.stage(Staged::Record(record), self.sink);
        }
        self.records.push(record);
        if self.records.len() >= SINK_BATCH {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Hands the records converted so far to the sink.
    fn hand_over(&mut self) -> Result<(), TraceError> {
        if let Some(ids) = &mut self.ids {
            return ids.send(self.sink);
        }
        if self.records.is_empty() {
            return Ok(());
        }
        let done = (self.sink)(&mut self.records);
        self.records.clear();
        done
    }

    /// Ends the id thread, if there is one: every record handed on, its counts taken in.
    fn end_ids(&mut self) -> Result<(), TraceError> {
        let Some(ids) = self.ids.take() else {
            return Ok(());
        };
        let end = ids.end(self.sink)?;
        let (s, c) = (&mut self.summary, end.counts);
        s.events += c.events;
        s.allocs += c.allocs;
        s.frees += c.frees;
        s.reallocs += c.reallocs;
        s.released_by_exec += c.released_by_exec;
        let per_thread = &mut s.events_per_thread;
        if per_thread.len() < c.events_per_thread.len() {
            per_thread.resize(c.events_per_thread.len(), 0);
        }
        for (mine, theirs) in per_thread.iter_mut().zip(&c.events_per_thread) {
            *mine += theirs;
        }
        s.ids_cpu_ns = end.cpu_ns;
        s.shards_cpu_ns = end.shards_cpu_ns;
        self.importer.issues = end.issues;
        Ok(())
    }
}

/// Converts one process's raw file (`file` names it in errors), handing every record to
/// `sink` in order.
pub fn convert<'a>(
    process: &RawProcess,
    file: &str,
    sink: &'a mut Sink<'a>,
) -> Result<ConvertSummary, TraceError> {
    convert_with_progress(process, file, sink, &mut |_| {}, ConvertThreads::default())
}

/// As [`convert`], telling `progress` how many more bytes of the file's events
/// ([`RawProcess::event_bytes`] in all) were read, each time a chunk is read; `threads`:
/// the threads beside the merge ([`StreamConverter::with_threads`]).
pub fn convert_with_progress<'a>(
    process: &RawProcess,
    file: &str,
    sink: &'a mut Sink<'a>,
    progress: &mut dyn FnMut(u64),
    threads: ConvertThreads,
) -> Result<ConvertSummary, TraceError> {
    // Room for the live objects of a large recording from the start (about one object live
    // per 50 bytes of raw events, at most 4 M: a few percent of the time was the table
    // growing).
    let live = (process.event_bytes() / 50).min(1 << 22) as usize;
    let mut stream = StreamConverter::new(file, sink, progress, live).with_threads(threads);
    stream.step(process, true)?;
    Ok(stream.finish(process))
}

/// A conversion that goes on as the raw file grows: [`StreamConverter::step`] converts what
/// the file allows so far (while the program runs, the last image up to its progress mark).
pub struct StreamConverter<'a, 'p> {
    c: Converter<'a, 'p>,
    /// The image being merged.
    merge: Option<ImageMerge>,
    next_image: usize,
    /// The thread that exec'd into the next image and the other live threads then.
    inherited: Option<(ThreadId, Vec<ThreadId>)>,
}

impl<'a, 'p> StreamConverter<'a, 'p> {
    /// `live`: the live objects to make room for from the start.
    pub fn new(
        file: &str,
        sink: &'a mut Sink<'a>,
        progress: &'p mut dyn FnMut(u64),
        live: usize,
    ) -> Self {
        StreamConverter {
            c: Converter {
                file: file.to_string(),
                sink,
                progress,
                importer: AddressImporter::with_capacity(live),
                base_ns: 0,
                last_ns: 0,
                next_thread: 0,
                sites: FastMap::default(),
                frames: Vec::new(),
                frame_ids: HashMap::new(),
                symbolizer: Symbolizer::default(),
                summary: ConvertSummary::default(),
                records: Vec::with_capacity(SINK_BATCH),
                pool: None,
                ids: None,
            },
            merge: None,
            next_image: 0,
            inherited: None,
        }
    }

    /// Takes `threads` beside the converting one: decoders ahead of the merge, an id thread
    /// after it, and address shards beside the id thread. None started: all on the converting
    /// thread (the output is the same).
    pub fn with_threads(mut self, threads: ConvertThreads) -> Self {
        let decoders = threads.decoders;
        self.c.pool = (decoders > 0).then(|| DecodePool::new(decoders));
        if threads.ids || threads.shards > 0 {
            // The table moves to the id thread (a new, empty one stays here).
            let importer = std::mem::take(&mut self.c.importer);
            self.c.ids = IdThread::start(&self.c.file, importer, threads.shards);
        }
        self
    }

    /// The decoding threads' CPU time so far (0 without them).
    pub fn decode_cpu_ns(&self) -> u64 {
        self.c.pool.as_ref().map_or(0, |p| p.cpu_ns())
    }

    /// Converts what `process` holds so far: every image but the last whole, the last one
    /// up to its progress mark, or whole once the program has `ended`. An image with TSC
    /// stamps (scaled with all its clock pairs) waits for its end.
    pub fn step(&mut self, process: &RawProcess, ended: bool) -> Result<(), TraceError> {
        self.step_images(process, ended)?;
        if ended {
            self.c.end_ids()?;
        }
        self.c.hand_over()
    }

    fn step_images(&mut self, process: &RawProcess, ended: bool) -> Result<(), TraceError> {
        if let Some(first) = process.images.first() {
            self.c.base_ns = first.start_ns;
        }
        loop {
            let index = self.merge.as_ref().map_or(self.next_image, |m| m.index);
            let Some(image) = process.images.get(index) else {
                return Ok(());
            };
            let whole = ended || index + 1 < process.images.len();
            if !whole && image.flags & FLAG_TSC != 0 {
                return Ok(());
            }
            if self.merge.is_none() {
                let inherited = self.inherited.take();
                self.merge = Some(self.c.start_image(image, index, inherited)?);
                self.next_image = index + 1;
            }
            let merge = self.merge.as_mut().expect("started");
            merge.round(
                &mut self.c,
                process,
                if whole { u64::MAX } else { image.mark },
            )?;
            if !whole {
                return Ok(());
            }
            let merge = self.merge.take().expect("started");
            // A later image in the same process's file can only be an exec's.
            let unseen = index + 1 < process.images.len()
                && image.exec_tid.is_none()
                && image.end.is_none()
                && image.signal.is_none();
            self.c.summary.unseen_execs += unseen as u64;
            let (exec_thread, live) = merge.finish(image, unseen);
            if let Some(t) = exec_thread {
                self.inherited = Some((t, live));
            }
            let s = &mut self.c.summary;
            if let Some(end) = image.end {
                s.dropped_threads += end.dropped_threads;
                s.late_calls += end.late_calls;
                s.lost_bytes += end.lost_bytes;
            }
            s.no_unwinder |= image.flags & FLAG_NO_UNWINDER != 0;
        }
    }

    /// The summary, once [`StreamConverter::step`] has converted the whole file.
    pub fn finish(self, process: &RawProcess) -> ConvertSummary {
        let decode_cpu_ns = self.decode_cpu_ns();
        let mut c = self.c;
        c.summary.decode_cpu_ns = decode_cpu_ns;
        c.summary.images = process.images.len();
        if let Some(last) = process.images.last() {
            c.summary.truncated = last.end.is_none();
            c.summary.signal = last.signal;
            c.summary.allocator = last.allocator.clone();
        }
        c.summary.issues = c.importer.issues;
        c.summary.unnamed_frames = c.symbolizer.unnamed();
        c.summary.duration_ns = c.last_ns;
        c.summary
    }
}

fn exhausted(file: &str) -> TraceError {
    TraceError::Input {
        file: file.to_string(),
        what: "more than 2^32 live objects".into(),
    }
}
