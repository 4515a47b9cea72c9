//! The process child's calls, read from the trace a window at a time: a scan first (threads,
//! object ids, every free and realloc checked against the live objects, so workers never see
//! a bad pointer), then the replay refills one fixed window of calls between baton runs. The
//! child's memory follows the trace's live objects (a pointer per object id) and threads,
//! never its length.

use crate::live::ctl::mib;
use crate::live::relay::{Step, Work};
use crate::live::Api;
use crate::process::{ArenaChoice, ManualArenas};
use crate::trace::{Control, Event, Record, TraceError, ALL_ARENAS};
use anyhow::{ensure, Context, Result};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Calls in the window: enough that handing runs to the workers dominates, small enough to
/// cost nothing beside the live objects (16 bytes shared, 24 the replayer's, per call).
const WINDOW: usize = 1 << 14;

const OP_ALLOC: u64 = 0;
const OP_FREE: u64 = 1;
const OP_REALLOC: u64 = 2;
const OP_EXIT: u64 = 3;
/// A `mallctl` write (`Record::Control`): its code ([`Control::code`]) in the id field; the
/// arena in the flag bits as `MALLOCX_ARENA`'s; size [`CTL_ALL`] or [`CTL_NONE`].
const OP_CONTROL: u64 = 4;
/// The control names every arena (`MALLCTL_ARENAS_ALL`).
const CTL_ALL: u64 = 1;
/// The control names an arena the trace has not used: jemalloc finds none, nothing happens.
const CTL_NONE: u64 = 2;
/// Explicit caches a replay can make (`tcache.create`; jemalloc's `MALLOCX_TCACHE_MAX` + 1).
const MAX_EXPLICIT: usize = 4094;

/// One call as a worker runs it.
#[derive(Clone, Copy)]
struct Op {
    kind: u64,
    thread: u32,
    id: u32,
    size: u64,
    /// `MALLOCX_LG_ALIGN`: log2 of the alignment (0: none), in bits 0-5; then the call's own
    /// `MALLOCX_` choices ([`api_bits`]).
    flags: u32,
    /// `MALLOCX_TCACHE(c)`: the trace's explicit cache `c` + 1 (0: none).
    cache: u32,
}

/// Bit 6: `MALLOCX_TCACHE_NONE`; bit 7: the arena in bits 8-23 is the trace's `k`-th manual
/// one (else an automatic one); bits 8-23: the arena + 1 (0: none).
const OP_TCACHE_NONE: u32 = 1 << 6;
const OP_MANUAL: u32 = 1 << 7;
/// Manual arenas a replay can make (`arenas.create`).
const MAX_MANUAL: usize = 256;

/// The op bits of a call's `MALLOCX_` flags (see [`OP_TCACHE_NONE`]). A reentrant call (made
/// inside another allocator call of its thread) is replayed with the flags jemalloc gives it
/// there: an allocation from arena 0 without the cache (`imalloc_body`), a free without the
/// cache (`free_default`), a realloc as an ordinary call (`do_rallocx`). What the flags cannot
/// say: jemalloc fires no thread event inside a reentrant call (a cache GC due then waits for
/// the thread's next call), the replayed call fires it at once.
fn api_bits(c: &crate::trace::Call, narenas: u32, manual: &mut ManualArenas) -> Result<u32> {
    if c.reentrant {
        match c.event {
            Event::Alloc { .. } => return Ok(OP_TCACHE_NONE | 1 << 8),
            Event::Free { .. } => return Ok(OP_TCACHE_NONE),
            Event::Realloc { .. } => {}
        }
    }
    let mut bits = if c.tcache_off() { OP_TCACHE_NONE } else { 0 };
    if let Some(a) = c.explicit_arena() {
        bits |= arena_bits(a, manual.choose(a, narenas))?;
    }
    Ok(bits)
}

/// The op bits naming arena `a` (recorded), which is `choice` in the replay.
fn arena_bits(a: u32, choice: ArenaChoice) -> Result<u32> {
    let (flag, i) = match choice {
        ArenaChoice::Automatic(a) => (0, a),
        ArenaChoice::Manual(k) => {
            ensure!(
                (k as usize) < MAX_MANUAL,
                "arena {a}: a replay makes at most {MAX_MANUAL} manual arenas"
            );
            (OP_MANUAL, k)
        }
    };
    ensure!(i < 0xffff, "arena {a}: above the 65,534 an op can name");
    Ok(flag | (i + 1) << 8)
}

/// The op of a `mallctl` write: (code, size, bits) as [`OP_CONTROL`] says.
fn control_op(
    control: Control,
    narenas: u32,
    manual: &mut ManualArenas,
) -> Result<(u32, u64, u32)> {
    let (code, _) = control.code();
    let (size, bits) = match control {
        Control::FlushCache => (0, 0),
        Control::Purge { arena } | Control::Decay { arena } if arena == ALL_ARENAS => (CTL_ALL, 0),
        Control::Purge { arena } | Control::Decay { arena } => match manual.find(arena, narenas) {
            Some(choice) => (0, arena_bits(arena, choice)?),
            None => (CTL_NONE, 0),
        },
        Control::BindArena { arena } => (0, arena_bits(arena, manual.choose(arena, narenas))?),
        Control::CacheEnabled { on } => (u64::from(on), 0),
        Control::CacheCreate { cache }
        | Control::CacheFlush { cache }
        | Control::CacheDestroy { cache } => {
            ensure!(
                (cache as usize) < MAX_EXPLICIT,
                "explicit cache {cache}: jemalloc makes at most {MAX_EXPLICIT}"
            );
            (u64::from(cache), 0)
        }
        Control::BackgroundThreads { on } => (u64::from(on), 0),
    };
    Ok((code as u32, size, bits))
}

/// Turns records into ops, checking them against the live objects: per object id, its
/// alignment flags while live.
struct OpMaker {
    live: Vec<Option<u32>>,
    /// Records turned into ops so far (errors name the next one: this + 1).
    records: u64,
    /// The child's automatic arenas, and the trace's manual ones by first use.
    narenas: u32,
    manual: ManualArenas,
}

impl OpMaker {
    fn with_ids(ids: usize, narenas: u32) -> Self {
        OpMaker {
            live: Vec::with_capacity(ids),
            records: 0,
            narenas,
            manual: ManualArenas::default(),
        }
    }

    /// The op of the next record (a site has none: the stream drops them).
    fn op(&mut self, r: &Record) -> Result<Option<Op>> {
        let n = self.records + 1;
        let cache = match r {
            Record::Call(c) if !c.reentrant => match c.explicit_cache() {
                Some(k) => {
                    ensure!(
                        (k as usize) < MAX_EXPLICIT,
                        "event {n}: explicit cache {k}: jemalloc makes at most {MAX_EXPLICIT}"
                    );
                    k + 1
                }
                None => 0,
            },
            _ => 0,
        };
        let op = |kind, thread, id, size, flags| Op {
            kind,
            thread,
            id,
            size,
            flags,
            cache,
        };
        let op = match r {
            Record::Site { .. } | Record::Mapping { .. } => return Ok(None),
            Record::ThreadExit { thread, .. } => op(OP_EXIT, *thread, 0, 0, 0),
            Record::Control {
                thread, control, ..
            } => {
                let (code, size, bits) = control_op(*control, self.narenas, &mut self.manual)?;
                op(OP_CONTROL, *thread, code, size, bits)
            }
            Record::Call(c) => match c.event {
                Event::Alloc { id, size, align } => {
                    let i = id as usize;
                    if i >= self.live.len() {
                        self.live.resize(i + 1, None);
                    }
                    ensure!(
                        self.live[i].is_none(),
                        "event {n}: alloc of id {id}, which is already live"
                    );
                    ensure!(
                        align <= 1 || align.is_power_of_two(),
                        "event {n}: alignment {align} is not a power of two"
                    );
                    let flags = if align > 1 { align.trailing_zeros() } else { 0 };
                    self.live[i] = Some(flags);
                    let api = api_bits(c, self.narenas, &mut self.manual)?;
                    op(OP_ALLOC, c.thread, id, size.max(1), flags | api)
                }
                Event::Free { id } => {
                    let slot = self.live.get_mut(id as usize).and_then(Option::take);
                    ensure!(
                        slot.is_some(),
                        "event {n}: free of id {id}, which is not live"
                    );
                    let api = api_bits(c, self.narenas, &mut self.manual)?;
                    op(OP_FREE, c.thread, id, 0, api)
                }
                Event::Realloc { id, size } => {
                    let flags = self.live.get(id as usize).copied().flatten();
                    let flags = flags.with_context(|| {
                        format!("event {n}: realloc of id {id}, which is not live")
                    })?;
                    let api = api_bits(c, self.narenas, &mut self.manual)?;
                    op(OP_REALLOC, c.thread, id, size.max(1), flags | api)
                }
            },
        };
        self.records = n;
        Ok(Some(op))
    }
}

/// What the scan found: the threads (one worker each), the object ids (one pointer slot
/// each) and whether any record has a time.
pub(super) struct Scan {
    pub threads: usize,
    pub ids: usize,
    pub timed: bool,
}

/// Reads the records once, checking every call as the replay will run it.
pub(super) fn scan(records: impl Iterator<Item = Result<Record, TraceError>>) -> Result<Scan> {
    let mut maker = OpMaker::with_ids(0, u32::MAX);
    let (mut threads, mut timed) = (0, false);
    for r in records {
        let r = r?;
        timed |= super::clocked_child::stamp(&r).is_some();
        if let Some(op) = maker.op(&r)? {
            threads = threads.max(op.thread as usize + 1);
        }
    }
    Ok(Scan {
        threads,
        ids: maker.live.len(),
        timed,
    })
}

/// What the workers share: the window's calls (per call its size, and its id, kind and
/// alignment packed) and one pointer per object id, read by whichever worker runs the next
/// call. The replayer writes the window only while every worker is parked: the baton's
/// hand-over (release, then acquire) orders those writes before the calls that read them.
pub(super) struct ProcessWork {
    api: Api,
    ops: Vec<[AtomicU64; 3]>,
    ptrs: Vec<AtomicU64>,
    /// The child's index of the trace's `k`-th manual arena (0: not made yet). Ops run one
    /// at a time (the baton), so a plain load and store suffice.
    manual: Vec<AtomicU32>,
    /// The child's index + 1 of the trace's explicit cache `c` (0: none made).
    explicit: Vec<AtomicU32>,
    /// The MIBs of the `mallctl` writes a trace can hold (looked up before the workers start:
    /// a worker's call must not allocate).
    ctl: ControlMibs,
}

/// MIBs of `thread.tcache.flush`, `arena.0.purge`, `arena.0.decay`, `thread.arena` and
/// `thread.tcache.enabled`.
struct ControlMibs {
    flush: Vec<usize>,
    purge: Vec<usize>,
    decay: Vec<usize>,
    bind: Vec<usize>,
    enabled: Vec<usize>,
    create: Vec<usize>,
    cache_flush: Vec<usize>,
    cache_destroy: Vec<usize>,
}

impl ProcessWork {
    /// The shared tables for `ids` object ids, allocated once before the workers start.
    pub(super) fn new(api: Api, ids: usize) -> Result<Self> {
        let ctl = ControlMibs {
            flush: mib(&api, "thread.tcache.flush")?,
            purge: mib(&api, "arena.0.purge")?,
            decay: mib(&api, "arena.0.decay")?,
            bind: mib(&api, "thread.arena")?,
            enabled: mib(&api, "thread.tcache.enabled")?,
            create: mib(&api, "tcache.create")?,
            cache_flush: mib(&api, "tcache.flush")?,
            cache_destroy: mib(&api, "tcache.destroy")?,
        };
        Ok(ProcessWork {
            api,
            ctl,
            ops: (0..WINDOW)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
            ptrs: (0..ids).map(|_| AtomicU64::new(0)).collect(),
            manual: (0..MAX_MANUAL).map(|_| AtomicU32::new(0)).collect(),
            explicit: (0..MAX_EXPLICIT).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    /// The address of a table made before the workers (the clock line's heap address).
    pub(super) fn table_address(&self) -> u64 {
        self.ops.as_ptr() as u64
    }
}

impl ProcessWork {
    /// jemalloc's flags for an op's `bits`: its alignment, `MALLOCX_TCACHE_NONE`, and
    /// `MALLOCX_ARENA` (a manual arena made with `arenas.create` the first time; `None` if
    /// that fails).
    fn mallocx_flags(&self, bits: u32) -> Option<i32> {
        let mut flags = (bits & 0x3f) as i32;
        if bits & OP_TCACHE_NONE != 0 {
            flags |= 1 << 8;
        }
        let named = bits >> 8;
        if named != 0 {
            let arena = match bits & OP_MANUAL != 0 {
                false => named - 1,
                true => {
                    let slot = &self.manual[(named - 1) as usize];
                    match slot.load(Ordering::Relaxed) {
                        0 => {
                            // A static name: `Api::read` would allocate on this worker.
                            let (mut made, mut len) = (0u32, std::mem::size_of::<u32>());
                            // SAFETY: arenas.create writes an unsigned.
                            let err = unsafe {
                                (self.api.mallctl)(
                                    c"arenas.create".as_ptr(),
                                    (&mut made as *mut u32).cast(),
                                    &mut len,
                                    std::ptr::null_mut(),
                                    0,
                                )
                            };
                            if err != 0 {
                                return None;
                            }
                            slot.store(made, Ordering::Relaxed);
                            made
                        }
                        made => made,
                    }
                }
            };
            flags |= ((arena + 1) << 20) as i32;
        }
        Some(flags)
    }
}

impl ProcessWork {
    /// Runs a [`OP_CONTROL`] op on this worker's thread; false if jemalloc refused it (or a
    /// manual arena could not be made).
    fn control(&self, code: u32, size: u64, bits: u32) -> bool {
        let by_mib = |mib: &[usize], new: *mut c_void, len: usize| {
            // SAFETY: a MIB looked up from its name, with the value type its name takes.
            unsafe {
                (self.api.bymib)(
                    mib.as_ptr(),
                    mib.len(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    new,
                    len,
                ) == 0
            }
        };
        let arena = || {
            self.mallocx_flags(bits)
                .map(|flags| ((flags as u32) >> 20).wrapping_sub(1))
        };
        match code {
            0 => by_mib(&self.ctl.flush, std::ptr::null_mut(), 0),
            1 | 2 => {
                let index = match size {
                    // An index no arena has: jemalloc refuses it, after starting the thread
                    // (`tsd_fetch`), as the model does.
                    CTL_NONE => 1 << 20,
                    CTL_ALL => ALL_ARENAS,
                    _ => match arena() {
                        Some(a) => a,
                        None => return false,
                    },
                };
                let mut mib = [0usize; 3];
                let base = if code == 1 {
                    &self.ctl.purge
                } else {
                    &self.ctl.decay
                };
                mib.copy_from_slice(base);
                mib[1] = index as usize;
                by_mib(&mib, std::ptr::null_mut(), 0)
            }
            3 => {
                let Some(mut a) = arena() else { return false };
                let len = std::mem::size_of::<u32>();
                by_mib(&self.ctl.bind, (&mut a as *mut u32).cast(), len)
            }
            5..=7 => self.explicit_control(code, size as usize),
            // `background_thread`: left out. The child's own threads would allocate (glibc's
            // `pthread_create`) beside the recorded calls made inside that write, which the
            // child replays; the model applies it.
            8 => true,
            _ => {
                let mut on = size == 1;
                let len = std::mem::size_of::<bool>();
                by_mib(&self.ctl.enabled, (&mut on as *mut bool).cast(), len)
            }
        }
    }
}

impl ProcessWork {
    /// `tcache.create` (code 5: the child's index kept for the trace's cache `cache`),
    /// `tcache.flush` (6) or `tcache.destroy` (7: the index forgotten) of the trace's cache.
    fn explicit_control(&self, code: u32, cache: usize) -> bool {
        let slot = &self.explicit[cache];
        let (mut c, mut len) = (0u32, std::mem::size_of::<u32>());
        let (mib, old, new) = match code {
            5 => (&self.ctl.create, &mut c as *mut u32, std::ptr::null_mut()),
            _ => {
                let Some(made) = slot.load(Ordering::Relaxed).checked_sub(1) else {
                    return false;
                };
                c = made;
                let mib = if code == 6 {
                    &self.ctl.cache_flush
                } else {
                    &self.ctl.cache_destroy
                };
                (mib, std::ptr::null_mut(), &mut c as *mut u32)
            }
        };
        let (old_len, new_len) = match code {
            5 => (&mut len as *mut usize, 0),
            _ => (std::ptr::null_mut(), len),
        };
        // SAFETY: the three names read or write an unsigned, as `old` / `new` say.
        let ok = unsafe {
            (self.api.bymib)(
                mib.as_ptr(),
                mib.len(),
                old.cast(),
                old_len,
                new.cast(),
                new_len,
            ) == 0
        };
        match code {
            5 if ok => slot.store(c + 1, Ordering::Relaxed),
            7 if ok => slot.store(0, Ordering::Relaxed),
            _ => {}
        }
        ok
    }
}

impl Work for ProcessWork {
    fn run(&self, i: usize) -> bool {
        let [size, packed, cache] = &self.ops[i];
        let (size, packed, cache) = (
            size.load(Ordering::Relaxed) as usize,
            packed.load(Ordering::Relaxed),
            cache.load(Ordering::Relaxed) as usize,
        );
        let (id, kind, bits) = (
            packed as u32 as usize,
            (packed >> 32) & 0xff,
            (packed >> 40) as u32,
        );
        if kind == OP_CONTROL {
            // A write jemalloc refuses (a cache flush without a cache: EFAULT) changes nothing,
            // as in the model; a recording holds only those that succeeded.
            self.control(id as u32, size as u64, bits);
            return true;
        }
        let Some(mut flags) = self.mallocx_flags(bits) else {
            return false;
        };
        if cache > 0 {
            // MALLOCX_TCACHE(c) = (c + 2) << 8, with the child's index of the trace's cache.
            match self.explicit[cache - 1].load(Ordering::Relaxed) {
                0 => return false,
                made => flags |= ((made + 1) << 8) as i32,
            }
        }
        let slot = &self.ptrs[id];
        // SAFETY: pointers in `ptrs` came from this jemalloc and are live (every call was
        // checked against the live objects before it reached the window).
        unsafe {
            match kind {
                OP_ALLOC => {
                    let p = (self.api.mallocx)(size, flags);
                    slot.store(p as u64, Ordering::Relaxed);
                    !p.is_null()
                }
                OP_FREE => {
                    (self.api.dallocx)(slot.load(Ordering::Relaxed) as *mut c_void, flags);
                    true
                }
                _ => {
                    let old = slot.load(Ordering::Relaxed) as *mut c_void;
                    let p = (self.api.rallocx)(old, size, flags);
                    if !p.is_null() {
                        slot.store(p as u64, Ordering::Relaxed);
                    }
                    !p.is_null()
                }
            }
        }
    }
}

/// The replayer's side of the window: each call's thread (the baton's step) and time (ns
/// from the trace's first time stamp, never going back: `super::clocked_child::relative_times`),
/// and the liveness check that made them.
pub(super) struct Window {
    pub steps: Vec<Step>,
    pub times: Vec<u64>,
    maker: OpMaker,
    threads: usize,
    first_time: Option<u64>,
    last_time: u64,
}

impl Window {
    /// An empty window for the trace `scan` read (allocated before the workers start, so
    /// the replay itself allocates nothing).
    pub(super) fn new(scan: &Scan, narenas: u32) -> Self {
        Window {
            steps: Vec::with_capacity(WINDOW),
            times: Vec::with_capacity(WINDOW),
            maker: OpMaker::with_ids(scan.ids, narenas),
            threads: scan.threads,
            first_time: None,
            last_time: 0,
        }
    }

    /// Refills the window with the next calls of `records`, at most `max` (and the window's
    /// size); returns how many (0: the trace is over).
    pub(super) fn fill(
        &mut self,
        work: &ProcessWork,
        records: &mut impl Iterator<Item = Result<Record, TraceError>>,
        max: u64,
    ) -> Result<usize> {
        self.steps.clear();
        self.times.clear();
        let max = max.min(WINDOW as u64) as usize;
        while self.steps.len() < max {
            let Some(r) = records.next() else { break };
            let r = r?;
            let Some(op) = self.maker.op(&r)? else {
                continue;
            };
            let exit = op.kind == OP_EXIT;
            let no_object = exit || op.kind == OP_CONTROL;
            ensure!(
                (no_object || (op.id as usize) < work.ptrs.len())
                    && (op.thread as usize) < self.threads,
                "event {}: the trace changed since the child scanned it",
                self.maker.records
            );
            let [size, packed, cache] = &work.ops[self.steps.len()];
            size.store(op.size, Ordering::Relaxed);
            let p = u64::from(op.id) | op.kind << 32 | u64::from(op.flags) << 40;
            packed.store(p, Ordering::Relaxed);
            cache.store(u64::from(op.cache), Ordering::Relaxed);
            self.steps.push(Step {
                thread: op.thread as usize,
                exit,
            });
            if let Some(t) = super::clocked_child::stamp(&r) {
                let first = *self.first_time.get_or_insert(t);
                self.last_time = self.last_time.max(t.saturating_sub(first));
            }
            self.times.push(self.last_time);
        }
        Ok(self.steps.len())
    }
}
