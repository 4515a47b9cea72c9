//! Raw per-thread events -> one stream of trace records: merged by sequence number,
//! addresses -> ids lowest-free-first (the importer valgrind logs use), raw thread ids ->
//! dense trace threads in order of first appearance, stacks -> the site table.

use super::raw::{
    CursorError, FastMap, RawEvent, RawImage, RawOp, RawProcess, Stacks, ThreadCursor,
    FLAG_NO_UNWINDER, FLAG_STACKS,
};
use super::symbols::{Modules, Symbolizer};
use crate::trace::{
    AddressImporter, Call, Event, Frame, IssueCounts, ObjectId, Record, SiteId, ThreadId,
    TraceError,
};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

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
    /// Program images (1 + the number of execs).
    pub images: usize,
    /// Objects still live when an exec replaced the image (freed in the trace there).
    pub released_by_exec: u64,
    /// From the first image's start to the last event.
    pub duration_ns: u64,
    /// The last image ended without the recorder's `END` (killed, fatal signal).
    pub truncated: bool,
    pub signal: Option<u64>,
    pub dropped_threads: u64,
    pub late_calls: u64,
    pub lost_bytes: u64,
    /// Stacks were asked for but libunwind could not be loaded.
    pub no_unwinder: bool,
    pub issues: IssueCounts,
}

type Sink<'a> = dyn FnMut(&Record) -> Result<(), TraceError> + 'a;

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
    /// return address in [`ImageState::frame_of`], not symbolized again per stack).
    frames: Vec<Frame>,
    frame_ids: HashMap<Frame, u32>,
    symbolizer: Symbolizer,
    summary: ConvertSummary,
    out: Vec<Event>,
}

/// Converts one process's raw file (`file` names it in errors), handing every record to
/// `sink` in order.
pub fn convert<'a>(
    process: &RawProcess,
    file: &str,
    sink: &'a mut Sink<'a>,
) -> Result<ConvertSummary, TraceError> {
    convert_with_progress(process, file, sink, &mut |_| {})
}

/// As [`convert`], telling `progress` how many more bytes of the file's events
/// ([`RawProcess::event_bytes`] in all) were read, each time a chunk is read.
pub fn convert_with_progress<'a>(
    process: &RawProcess,
    file: &str,
    sink: &'a mut Sink<'a>,
    progress: &mut dyn FnMut(u64),
) -> Result<ConvertSummary, TraceError> {
    let mut c = Converter {
        file: file.to_string(),
        sink,
        progress,
        // Room for the live objects of a large recording from the start (about one
        // object live per 80 bytes of raw events, at most 4 M: a few percent of the time was
        // the table growing).
        importer: AddressImporter::with_capacity((process.event_bytes() / 80).min(1 << 22) as usize),
        base_ns: process.images.first().map_or(0, |i| i.start_ns),
        last_ns: 0,
        next_thread: 0,
        sites: FastMap::default(),
        frames: Vec::new(),
        frame_ids: HashMap::new(),
        symbolizer: Symbolizer::default(),
        summary: ConvertSummary {
            images: process.images.len(),
            ..ConvertSummary::default()
        },
        out: Vec::new(),
    };
    let mut inherited: Option<(ThreadId, Vec<ThreadId>)> = None;
    for image in &process.images {
        let (exec_thread, live) = c.image(process, image, inherited.take())?;
        if let Some(t) = exec_thread {
            inherited = Some((t, live));
        }
        let s = &mut c.summary;
        if let Some(end) = image.end {
            s.dropped_threads += end.dropped_threads;
            s.late_calls += end.late_calls;
            s.lost_bytes += end.lost_bytes;
        }
        s.no_unwinder |= image.flags & FLAG_NO_UNWINDER != 0;
    }
    if let Some(last) = process.images.last() {
        c.summary.truncated = last.end.is_none();
        c.summary.signal = last.signal;
    }
    c.summary.issues = c.importer.issues;
    c.summary.duration_ns = c.last_ns;
    Ok(c.summary)
}

fn exhausted(file: &str) -> TraceError {
    TraceError::Input {
        file: file.to_string(),
        what: "more than 2^32 live objects".into(),
    }
}

/// One thread of the image being merged: its cursor, the event due next, and what the
/// merge learnt about it.
struct Lane<'a> {
    tid: u32,
    slot: u32,
    cursor: ThreadCursor<'a>,
    head: Option<RawEvent>,
    /// Its trace thread, from its first event on.
    thread: Option<ThreadId>,
    /// A realloc between its two points: the object it moves (`None`: not live).
    pending: Option<Option<ObjectId>>,
    exited: bool,
}

/// What the events of one image share while they are merged.
struct ImageState {
    modules: Modules,
    stacks_on: bool,
    stacks: Stacks,
    site_of: FastMap<(u32, u32), Option<SiteId>>,
    /// Return address -> frame id (`None`: the recorder's own frame), per image (the
    /// mappings are the image's).
    frame_of: FastMap<u64, Option<u32>>,
    /// The thread that exec'd into this image: it is the first one seen here.
    first_thread: Option<ThreadId>,
}

impl Converter<'_, '_> {
    /// One image; `inherited`: the thread that exec'd into it and the previous image's other
    /// live threads. Returns this image's exec'ing thread (if it exec'd) and its live threads.
    ///
    /// The threads' events are merged by sequence number as they are decoded: the lane with
    /// the lowest next number runs until its next event passes the second lowest, so the heap
    /// is touched once per run of a thread's events, not once per event.
    fn image<'p>(
        &mut self,
        process: &'p RawProcess,
        image: &'p RawImage,
        inherited: Option<(ThreadId, Vec<ThreadId>)>,
    ) -> Result<(Option<ThreadId>, Vec<ThreadId>), TraceError> {
        let mut st = ImageState {
            modules: image
                .maps
                .as_deref()
                .map(Modules::parse)
                .unwrap_or_default(),
            stacks_on: image.flags & FLAG_STACKS != 0,
            stacks: Stacks::default(),
            site_of: FastMap::default(),
            frame_of: FastMap::default(),
            first_thread: None,
        };
        if let Some((exec_thread, others)) = inherited {
            // The exec released the old address space and ended every other thread.
            let at = self.time(image.start_ns);
            self.out.clear();
            self.importer.release_all(&mut self.out);
            self.summary.released_by_exec += self.out.len() as u64;
            self.emit_calls(exec_thread, at, None)?;
            for t in others {
                self.exit(t, at)?;
            }
            st.first_thread = Some(exec_thread);
        }
        let clock = image.clock();
        let mut lanes: Vec<Lane> = image
            .threads
            .iter()
            .map(|(&tid, t)| Lane {
                tid,
                slot: t.slot,
                cursor: process.cursor(t, clock),
                head: None,
                thread: None,
                pending: None,
                exited: false,
            })
            .collect();
        let mut heap = BinaryHeap::new();
        for (i, lane) in lanes.iter_mut().enumerate() {
            lane.head = self.next(lane, &mut st.stacks)?;
            if let Some(e) = lane.head {
                heap.push(Reverse((e.seq, i)));
            }
        }
        while let Some(Reverse((_, li))) = heap.pop() {
            let bound = heap.peek().map_or(u64::MAX, |r| r.0 .0);
            let lane = &mut lanes[li];
            while let Some(ev) = lane.head.take() {
                self.event(lane, ev, &mut st)?;
                lane.head = self.next(lane, &mut st.stacks)?;
                match lane.head {
                    Some(e) if e.seq > bound => {
                        heap.push(Reverse((e.seq, li)));
                        break;
                    }
                    _ => {}
                }
            }
        }
        let exec_thread = image
            .exec_tid
            .and_then(|tid| lanes.iter().find(|l| l.tid == tid))
            .and_then(|l| l.thread);
        let live = lanes
            .iter()
            .filter(|l| !l.exited)
            .filter_map(|l| l.thread)
            .filter(|&t| Some(t) != exec_thread)
            .collect();
        Ok((exec_thread, live))
    }

    fn next(
        &mut self,
        lane: &mut Lane,
        stacks: &mut Stacks,
    ) -> Result<Option<RawEvent>, TraceError> {
        let read = lane.cursor.bytes_read;
        let next = lane.cursor.next_event(stacks);
        if lane.cursor.bytes_read != read {
            (self.progress)(lane.cursor.bytes_read - read);
        }
        next.map_err(|e| match e {
            CursorError::Corrupt(at, what) => TraceError::Corrupt {
                file: self.file.clone(),
                offset: at as u64,
                what,
            },
            CursorError::Io(source) => TraceError::Io {
                file: self.file.clone(),
                source,
            },
        })
    }

    /// One merged event of `lane`.
    fn event(
        &mut self,
        lane: &mut Lane,
        ev: RawEvent,
        st: &mut ImageState,
    ) -> Result<(), TraceError> {
        let thread = match lane.thread {
            Some(t) => t,
            None => {
                let t = st.first_thread.take().unwrap_or_else(|| {
                    let t = self.next_thread;
                    self.next_thread += 1;
                    t
                });
                lane.thread = Some(t);
                t
            }
        };
        let at = self.time(ev.time_ns);
        let site = if st.stacks_on && ev.stack != 0 {
            let key = (lane.slot, ev.stack);
            match st.site_of.get(&key) {
                Some(&s) => s,
                None => {
                    let ips = st.stacks.remove(&key);
                    let s = self.site(&st.modules, &mut st.frame_of, ips.as_deref())?;
                    st.site_of.insert(key, s);
                    s
                }
            }
        } else {
            None
        };
        self.out.clear();
        match ev.op {
            RawOp::Alloc { size, align, addr } => {
                self.importer
                    .alloc(addr, size, align, &mut self.out)
                    .map_err(|_| exhausted(&self.file))?;
            }
            RawOp::Free { addr } => {
                self.importer.free(addr, &mut self.out);
            }
            RawOp::ReallocBegin { old } => {
                lane.pending = Some(self.importer.detach(old));
            }
            RawOp::ReallocEnd { new, size, .. } => {
                let id = lane.pending.take().flatten();
                self.importer
                    .attach(id, new, size, &mut self.out)
                    .map_err(|_| exhausted(&self.file))?;
            }
            RawOp::Exit => {
                lane.exited = true;
                return self.exit(thread, at);
            }
        }
        self.emit_calls(thread, at, site)
    }

    /// Nanoseconds since the start, never going back (threads read the clock a moment
    /// after taking their sequence number).
    fn time(&mut self, raw_ns: u64) -> u64 {
        let t = raw_ns.saturating_sub(self.base_ns).max(self.last_ns);
        self.last_ns = t;
        t
    }

    fn exit(&mut self, thread: ThreadId, at: u64) -> Result<(), TraceError> {
        self.summary.thread_exits += 1;
        (self.sink)(&Record::ThreadExit {
            thread,
            time_ns: Some(at),
        })
    }

    /// Writes the events in `self.out` as calls of `thread` (the site goes to the call's own
    /// alloc or realloc, not to a repair's free).
    fn emit_calls(
        &mut self,
        thread: ThreadId,
        at: u64,
        site: Option<SiteId>,
    ) -> Result<(), TraceError> {
        let s = &mut self.summary;
        let t = thread as usize;
        if s.events_per_thread.len() <= t {
            s.events_per_thread.resize(t + 1, 0);
        }
        for event in &self.out {
            s.events += 1;
            s.events_per_thread[t] += 1;
            let site = match event {
                Event::Alloc { .. } => {
                    s.allocs += 1;
                    site
                }
                Event::Realloc { .. } => {
                    s.reallocs += 1;
                    site
                }
                Event::Free { .. } => {
                    s.frees += 1;
                    None
                }
            };
            (self.sink)(&Record::Call(Call {
                event: *event,
                thread,
                time_ns: Some(at),
                site,
            }))?;
        }
        Ok(())
    }

    /// The trace site of a stack, defined (written) the first time it is seen.
    fn site(
        &mut self,
        modules: &Modules,
        frame_of: &mut FastMap<u64, Option<u32>>,
        ips: Option<&[u64]>,
    ) -> Result<Option<SiteId>, TraceError> {
        let Some(ips) = ips else {
            return Ok(None);
        };
        let mut ids = Vec::with_capacity(ips.len());
        for &ip in ips {
            let id = match frame_of.get(&ip) {
                Some(&id) => id,
                None => {
                    let id = modules.frame(ip).map(|f| self.frame_id(f));
                    frame_of.insert(ip, id);
                    id
                }
            };
            ids.extend(id);
        }
        if ids.is_empty() {
            return Ok(None);
        }
        if let Some(&id) = self.sites.get(&ids) {
            return Ok(Some(id));
        }
        let id = self.sites.len() as SiteId;
        let frames = ids
            .iter()
            .map(|&f| self.frames[f as usize].clone())
            .collect();
        self.sites.insert(ids, id);
        self.summary.sites += 1;
        (self.sink)(&Record::Site { id, frames })?;
        Ok(Some(id))
    }

    /// The id of a frame (symbolized here), the same for equal frames of any image.
    fn frame_id(&mut self, frame: Frame) -> u32 {
        let frame = self.symbolizer.name(frame);
        if let Some(&id) = self.frame_ids.get(&frame) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame, id);
        id
    }
}
