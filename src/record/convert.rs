//! Raw per-thread events -> one stream of trace records: merged by sequence number,
//! addresses -> ids lowest-free-first (the importer valgrind logs use), raw thread ids ->
//! dense trace threads in order of first appearance, stacks -> the site table.

use super::raw::{
    CursorError, FastMap, RawEvent, RawImage, RawOp, RawProcess, RawThread, Stacks, ThreadCursor,
    FLAG_NO_UNWINDER, FLAG_STACKS, FLAG_TSC,
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

/// Where converted records go, in order.
pub type Sink<'a> = dyn FnMut(&Record) -> Result<(), TraceError> + 'a;

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
    // Room for the live objects of a large recording from the start (about one object live
    // per 80 bytes of raw events, at most 4 M: a few percent of the time was the table
    // growing).
    let live = (process.event_bytes() / 80).min(1 << 22) as usize;
    let mut stream = StreamConverter::new(file, sink, progress, live);
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
                out: Vec::new(),
            },
            merge: None,
            next_image: 0,
            inherited: None,
        }
    }

    /// Converts what `process` holds so far: every image but the last whole, the last one
    /// up to its progress mark, or whole once the program has `ended`. An image with TSC
    /// stamps (scaled with all its clock pairs) waits for its end.
    pub fn step(&mut self, process: &RawProcess, ended: bool) -> Result<(), TraceError> {
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
            let (exec_thread, live) = merge.finish(image);
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
        let mut c = self.c;
        c.summary.images = process.images.len();
        if let Some(last) = process.images.last() {
            c.summary.truncated = last.end.is_none();
            c.summary.signal = last.signal;
        }
        c.summary.issues = c.importer.issues;
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

/// One thread of the image being merged: its cursor, the event due next, and what the
/// merge learnt about it.
struct Lane {
    tid: u32,
    slot: u32,
    cursor: ThreadCursor,
    head: Option<RawEvent>,
    /// Its trace thread, from its first event on.
    thread: Option<ThreadId>,
    /// A realloc between its two points: the object it moves (`None`: not live).
    pending: Option<Option<ObjectId>>,
    exited: bool,
}

/// What the events of one image share while they are merged.
struct ImageState {
    /// The image's maps, parsed when first needed.
    modules: Vec<Option<Modules>>,
    stacks_on: bool,
    stacks: Stacks,
    site_of: FastMap<(u32, u32), Option<SiteId>>,
    /// (maps, return address) -> frame id (`None`: the recorder's own frame), per image
    /// (the mappings are the image's).
    frame_of: FastMap<(usize, u64), Option<u32>>,
    /// The thread that exec'd into this image: it is the first one seen here.
    first_thread: Option<ThreadId>,
}

/// The merge of one image's threads by sequence number, in rounds as its file grows.
///
/// The lane with the lowest next number runs until its next event passes the second lowest,
/// so the heap is touched once per run of a thread's events, not once per event. A round
/// stops at its mark: a lane whose indexed events run out waits (parked) for more.
struct ImageMerge {
    index: usize,
    lanes: Vec<Lane>,
    lane_of: FastMap<u32, usize>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    parked: Vec<usize>,
    st: ImageState,
    /// The last sequence number converted: a mark that was wrong (or a corrupt file) shows
    /// as a number going back.
    last_seq: Option<u64>,
}

impl ImageMerge {
    /// Converts the events numbered below `mark` (all of them: `u64::MAX`).
    fn round(
        &mut self,
        c: &mut Converter,
        process: &RawProcess,
        mark: u64,
    ) -> Result<(), TraceError> {
        let image = &process.images[self.index];
        if self.lane_of.len() < image.threads.len() {
            let clock = image.clock();
            for (&tid, t) in &image.threads {
                if !self.lane_of.contains_key(&tid) {
                    self.lane_of.insert(tid, self.lanes.len());
                    self.parked.push(self.lanes.len());
                    self.lanes.push(Lane {
                        tid,
                        slot: t.slot,
                        cursor: process.cursor(t, clock),
                        head: None,
                        thread: None,
                        pending: None,
                        exited: false,
                    });
                }
            }
        }
        for li in std::mem::take(&mut self.parked) {
            let lane = &mut self.lanes[li];
            let thread = &image.threads[&lane.tid];
            lane.head = c.next(process, thread, &mut lane.cursor, &mut self.st.stacks)?;
            match lane.head {
                Some(e) => self.heap.push(Reverse((e.seq, li))),
                None => self.parked.push(li),
            }
        }
        while let Some(&Reverse((seq, li))) = self.heap.peek() {
            if seq >= mark {
                break;
            }
            self.heap.pop();
            let bound = self.heap.peek().map_or(u64::MAX, |r| r.0 .0);
            let lane = &mut self.lanes[li];
            let thread = &image.threads[&lane.tid];
            while let Some(ev) = lane.head.take() {
                if self.last_seq.is_some_and(|last| ev.seq <= last) {
                    return Err(TraceError::Corrupt {
                        file: c.file.clone(),
                        offset: 0,
                        what: format!("event number {} after {:?}", ev.seq, self.last_seq),
                    });
                }
                self.last_seq = Some(ev.seq);
                c.event(image, lane, ev, &mut self.st)?;
                lane.head = c.next(process, thread, &mut lane.cursor, &mut self.st.stacks)?;
                match lane.head {
                    Some(e) if e.seq > bound || e.seq >= mark => {
                        self.heap.push(Reverse((e.seq, li)));
                        break;
                    }
                    None => self.parked.push(li),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// After the last round: the thread that exec'd (if it did) and the other live threads.
    fn finish(self, image: &RawImage) -> (Option<ThreadId>, Vec<ThreadId>) {
        let exec_thread = image
            .exec_tid
            .and_then(|tid| self.lanes.iter().find(|l| l.tid == tid))
            .and_then(|l| l.thread);
        let live = self
            .lanes
            .iter()
            .filter(|l| !l.exited)
            .filter_map(|l| l.thread)
            .filter(|&t| Some(t) != exec_thread)
            .collect();
        (exec_thread, live)
    }
}

impl Converter<'_, '_> {
    /// Starts image `index`; `inherited`: the thread that exec'd into it and the previous
    /// image's other live threads.
    fn start_image(
        &mut self,
        image: &RawImage,
        index: usize,
        inherited: Option<(ThreadId, Vec<ThreadId>)>,
    ) -> Result<ImageMerge, TraceError> {
        let mut st = ImageState {
            modules: Vec::new(),
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
        Ok(ImageMerge {
            index,
            lanes: Vec::new(),
            lane_of: FastMap::default(),
            heap: BinaryHeap::new(),
            parked: Vec::new(),
            st,
            last_seq: None,
        })
    }

    fn next(
        &mut self,
        process: &RawProcess,
        thread: &RawThread,
        cursor: &mut ThreadCursor,
        stacks: &mut Stacks,
    ) -> Result<Option<RawEvent>, TraceError> {
        let read = cursor.bytes_read;
        let next = cursor.next_event(process, thread, stacks);
        if cursor.bytes_read != read {
            (self.progress)(cursor.bytes_read - read);
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
        image: &RawImage,
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
                    let s = match st.stacks.remove(&key) {
                        Some((maps, ips)) => {
                            if st.modules.len() <= maps {
                                st.modules.resize(maps + 1, None);
                            }
                            let modules = st.modules[maps].get_or_insert_with(|| {
                                image
                                    .maps
                                    .get(maps)
                                    .map_or_else(Modules::default, |m| Modules::parse(m))
                            });
                            self.site(modules, maps, &mut st.frame_of, &ips)?
                        }
                        None => None,
                    };
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
        maps: usize,
        frame_of: &mut FastMap<(usize, u64), Option<u32>>,
        ips: &[u64],
    ) -> Result<Option<SiteId>, TraceError> {
        let mut ids = Vec::with_capacity(ips.len());
        for &ip in ips {
            let id = match frame_of.get(&(maps, ip)) {
                Some(&id) => id,
                None => {
                    let id = modules.frame(ip).map(|f| self.frame_id(f));
                    frame_of.insert((maps, ip), id);
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
