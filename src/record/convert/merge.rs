//! The merge of one image's threads by order key (sequence number, or TSC key with ties
//! between threads broken by thread id).

use super::calls::Emit;
use super::ids::Staged;
use super::Converter;
use crate::record::raw::{
    CursorError, FastMap, RawEvent, RawImage, RawProcess, RawThread, Stacks, ThreadCursor,
    FLAG_AUTO_ORDER, FLAG_STACKS, FLAG_TSC_ORDER,
};
use crate::record::symbols::Modules;
use crate::trace::{ObjectId, SiteId, ThreadId, TraceError};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Lanes with more threads waiting than this keep their heads in a heap.
const FEW_LANES: usize = 16;

/// A lane's next event in the merge's order: its key, then its [`tag`] (with TSC keys,
/// threads' keys may be equal: the lower raw thread id goes first, the same whether the
/// image is converted while it runs or after).
type Head = (u64, u64);

/// A lane's tie-breaker and index in one word: the raw thread id above, the lane below.
fn tag(tid: u32, lane: usize) -> u64 {
    (tid as u64) << 32 | lane as u64
}

fn lane_of_tag(tag: u64) -> usize {
    (tag & 0xffff_ffff) as usize
}

/// The heads of the lanes waiting to run, lowest first as a heap would give them: while
/// few, a vector sorted from the highest down (the merge pops a head per run of a thread's
/// events, and threads that run at once make runs of a call or two: a heap's pop was 5% of
/// a conversion), past [`FEW_LANES`] a heap.
#[derive(Default)]
struct Heads {
    sorted: Vec<Head>,
    heap: BinaryHeap<Reverse<Head>>,
}

impl Heads {
    #[inline(always)]
    fn push(&mut self, head: Head) {
        if !self.heap.is_empty() || self.sorted.len() >= FEW_LANES {
            return self.push_heap(head);
        }
        // From the end down to its place (a thread's next head is most often the highest,
        // and a few moves cost less than `insert`'s copy call).
        let v = &mut self.sorted;
        v.push(head);
        let mut i = v.len() - 1;
        while i > 0 && v[i - 1] < head {
            v[i] = v[i - 1];
            i -= 1;
        }
        v[i] = head;
    }

    #[cold]
    #[inline(never)]
    fn push_heap(&mut self, head: Head) {
        self.heap.extend(self.sorted.drain(..).map(Reverse));
        self.heap.push(Reverse(head));
    }

    #[inline]
    fn peek(&self) -> Option<Head> {
        match self.sorted.last() {
            Some(&h) => Some(h),
            None => self.heap.peek().map(|r| r.0),
        }
    }

    #[inline]
    fn pop(&mut self) {
        if self.sorted.pop().is_none() {
            self.heap.pop();
        }
    }
}

/// One thread of the image being merged: its cursor, the event due next, and what the
/// merge learnt about it.
pub(super) struct Lane {
    tid: u32,
    pub(super) slot: u32,
    cursor: ThreadCursor,
    /// Its trace thread, from its first event on.
    pub(super) thread: Option<ThreadId>,
    /// A realloc between its two points: the object it moves (`None`: not live).
    pub(super) pending: Option<Option<ObjectId>>,
    /// The allocator's last mapping in the thread's current call, as trimmed so far
    /// (`[addr, addr + len)`): written before the call's own record.
    pub(super) mapping: Option<(u64, u64)>,
    /// The `MALLOCX_` flags of the thread's next call (0: none).
    pub(super) mallocx_flags: u32,
    pub(super) exited: bool,
}

/// What the events of one image share while they are merged.
pub(super) struct ImageState {
    /// The image's maps, parsed when first needed.
    pub(super) modules: Vec<Option<Modules>>,
    pub(super) stacks_on: bool,
    pub(super) stacks: Stacks,
    pub(super) site_of: FastMap<(u32, u32), Option<SiteId>>,
    /// (maps, return address) -> frame id (`None`: the recorder's own frame), per image
    /// (the mappings are the image's).
    pub(super) frame_of: FastMap<(usize, u64), Option<u32>>,
    /// The thread that exec'd into this image: it is the first one seen here.
    pub(super) first_thread: Option<ThreadId>,
}

/// The merge of one image's threads by order key, in rounds as its file grows.
///
/// The lane with the lowest next number runs until its next event passes the second lowest,
/// so the heap is touched once per run of a thread's events, not once per event. A round
/// stops at its mark: a lane whose indexed events run out waits (parked) for more.
pub(super) struct ImageMerge {
    pub(super) index: usize,
    lanes: Vec<Lane>,
    lane_of: FastMap<u32, usize>,
    heads: Heads,
    parked: Vec<usize>,
    st: ImageState,
    /// The last key converted and its lane's raw thread id: a mark that was wrong (or a
    /// corrupt file) shows as a key going back (with sequence numbers: not going up).
    last: Option<(u64, u32)>,
    /// Keys are (or become, `FLAG_AUTO_ORDER`) TSC keys (`FLAG_TSC_ORDER`): equal keys of
    /// different threads are in order (sequence numbers never tie).
    tsc_keys: bool,
}

impl ImageMerge {
    /// Converts the events numbered below `mark` (all of them: `u64::MAX`).
    pub(super) fn round(
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
                    let mut cursor = process.cursor(t, clock);
                    if let Some(pool) = &c.pool {
                        cursor.use_pool(std::sync::Arc::clone(pool), self.index, tid);
                    }
                    self.lanes.push(Lane {
                        tid,
                        slot: t.slot,
                        cursor,
                        thread: None,
                        pending: None,
                        mapping: None,
                        mallocx_flags: 0,
                        exited: false,
                    });
                }
            }
        }
        for li in std::mem::take(&mut self.parked) {
            let lane = &mut self.lanes[li];
            match c.head(
                process,
                self.index,
                &mut lane.cursor,
                lane.tid,
                &mut self.st.stacks,
            )? {
                Some(seq) => self.heads.push((seq, tag(lane.tid, li))),
                None => self.parked.push(li),
            }
        }
        while let Some((seq, tag)) = self.heads.peek() {
            if seq >= mark {
                break;
            }
            self.heads.pop();
            let bound = self.heads.peek().unwrap_or((u64::MAX, u64::MAX));
            let lane = &mut self.lanes[lane_of_tag(tag)];
            loop {
                let ev: RawEvent = *lane.cursor.current().expect("a lane in the heap has one");
                // A mapping or a call's flags has its thread's last key (none of its own).
                if !ev.op.is_keyless() {
                    check_order(&mut self.last, self.tsc_keys, &c.file, ev.seq, lane.tid)?;
                }
                c.event(image, lane, ev, &mut self.st)?;
                lane.cursor.advance();
                match c.head(
                    process,
                    self.index,
                    &mut lane.cursor,
                    lane.tid,
                    &mut self.st.stacks,
                )? {
                    Some(seq) if (seq, tag) > bound || seq >= mark => {
                        self.heads.push((seq, tag));
                        break;
                    }
                    None => {
                        self.parked.push(lane_of_tag(tag));
                        break;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// After the last round: the thread that exec'd (if it did) and the other live threads.
    /// `unseen`: the image ended in an exec the recorder did not see (no `EXEC` chunk names
    /// the thread): its first live thread stands for the one that exec'd.
    pub(super) fn finish(
        self,
        image: &RawImage,
        unseen: bool,
    ) -> (Option<ThreadId>, Vec<ThreadId>) {
        let exec_thread = match unseen {
            false => image
                .exec_tid
                .and_then(|tid| self.lanes.iter().find(|l| l.tid == tid))
                .and_then(|l| l.thread),
            true => self
                .lanes
                .iter()
                .filter(|l| !l.exited)
                .find_map(|l| l.thread),
        };
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

/// The next event converted has key `seq` on thread `tid`: with sequence numbers it must be
/// above the `last` one, with TSC keys (`tsc_keys`) above it or equal on a later thread (each
/// thread's keys strictly increase).
#[inline(always)]
fn check_order(
    last: &mut Option<(u64, u32)>,
    tsc_keys: bool,
    file: &str,
    seq: u64,
    tid: u32,
) -> Result<(), TraceError> {
    let back = match *last {
        None => false,
        Some(l) if tsc_keys => (seq, tid) <= l,
        Some(l) => seq <= l.0,
    };
    if back {
        return Err(order_error(*last, tsc_keys, file, seq, tid));
    }
    *last = Some((seq, tid));
    Ok(())
}

#[cold]
fn order_error(
    last: Option<(u64, u32)>,
    tsc_keys: bool,
    file: &str,
    seq: u64,
    tid: u32,
) -> TraceError {
    let what = match last {
        Some((key, thread)) if tsc_keys => {
            format!("event key {seq} of thread {tid} after key {key} of thread {thread}")
        }
        _ => format!("event number {seq} after {:?}", last.map(|l| l.0)),
    };
    TraceError::Corrupt {
        file: file.to_string(),
        offset: 0,
        what,
    }
}

impl Converter<'_, '_> {
    /// Starts image `index`; `inherited`: the thread that exec'd into it and the previous
    /// image's other live threads.
    pub(super) fn start_image(
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
            if let Some(ids) = &mut self.ids {
                let release = Staged::ReleaseAll {
                    thread: exec_thread,
                    at,
                };
                ids.stage(release, self.sink)?;
            } else {
                let before = self.summary.events;
                let mut out =
                    Emit::new(&mut self.records, &mut self.summary, exec_thread, at, None);
                self.importer.release_all(&mut out);
                self.summary.released_by_exec += self.summary.events - before;
                self.hand_over_if_full()?;
            }
            for t in others {
                self.exit(t, at)?;
            }
            st.first_thread = Some(exec_thread);
        }
        Ok(ImageMerge {
            index,
            lanes: Vec::new(),
            lane_of: FastMap::default(),
            heads: Heads::default(),
            parked: Vec::new(),
            st,
            last: None,
            tsc_keys: image.flags & (FLAG_TSC_ORDER | FLAG_AUTO_ORDER) != 0,
        })
    }

    /// The number of `cursor`'s event due next (its next chunk of thread `tid` decoded if
    /// need be), `None` if the chunks indexed so far hold no more.
    #[inline(always)]
    fn head(
        &mut self,
        process: &RawProcess,
        image: usize,
        cursor: &mut ThreadCursor,
        tid: u32,
        stacks: &mut Stacks,
    ) -> Result<Option<u64>, TraceError> {
        match cursor.current() {
            Some(e) => Ok(Some(e.seq)),
            None => self.refill(
                process,
                &process.images[image].threads[&tid],
                cursor,
                stacks,
            ),
        }
    }

    #[cold]
    #[inline(never)]
    fn refill(
        &mut self,
        process: &RawProcess,
        thread: &RawThread,
        cursor: &mut ThreadCursor,
        stacks: &mut Stacks,
    ) -> Result<Option<u64>, TraceError> {
        let read = cursor.bytes_read;
        let more = cursor.refill(process, thread, stacks);
        if cursor.bytes_read != read {
            (self.progress)(cursor.bytes_read - read);
        }
        more.map(|_| cursor.current().map(|e| e.seq))
            .map_err(|e| match e {
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
}
