//! The child process of a measurement: one allocator, one replay thread per trace thread
//! driven in the trace's global order by the baton ([`crate::live::relay`], as the process
//! model's live child does), all started before the baseline. Its own tables (the events, a
//! pointer and a size per object id, the samples) are mmap'd and written before the first
//! sample, so the baseline holds them and every later sample is the allocator's resident
//! memory over that baseline. Nothing in the replay loop allocates on the Rust heap.
//!
//! Under jemalloc the parent sets `FRAGSIM_PROCESS_CHILD`, so the main thread (the replayer
//! and sampler, no trace thread) runs on a manual arena without a cache from before `main`
//! ([`crate::check::manual_arena`]): the automatic arenas and their threads are the trace's
//! alone, as in the process model.

use super::events::{Mapping, ALLOC, EVENT_BYTES, FREE, HEADER_BYTES, REALLOC};
use super::probe::{object_of, version, Figures, Resident};
use super::{Allocator, ChildReport, Library, MeasureError};
use crate::live::relay::{Baton, Work};
use std::ffi::c_void;
use std::path::Path;
use std::sync::OnceLock;

/// Touch stride: one write per page faults every page of a block in.
const TOUCH: usize = 4096;

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type AlignedFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;

/// The C allocator the events go to.
#[derive(Clone, Copy)]
struct Heap {
    malloc: MallocFn,
    free: FreeFn,
    realloc: ReallocFn,
    aligned_alloc: AlignedFn,
}

impl Heap {
    /// libc's entry points: glibc's, or whatever `LD_PRELOAD` put in front of them.
    fn libc() -> Heap {
        Heap {
            malloc: libc::malloc,
            free: libc::free,
            realloc: libc::realloc,
            aligned_alloc: libc::aligned_alloc,
        }
    }

    /// The linked jemalloc 5.3.1 (`_rjem_malloc` & co.), which also serves Rust's heap here.
    fn linked_jemalloc() -> Heap {
        use tikv_jemalloc_sys as sys;
        Heap {
            malloc: sys::malloc,
            free: sys::free,
            realloc: sys::realloc,
            aligned_alloc: sys::aligned_alloc,
        }
    }
}

/// Which allocator answers, checked: a preload that did not take fails here, not silently.
fn setup(allocator: Allocator) -> Result<(Heap, Figures, String), MeasureError> {
    let malloc_from = object_of(symbol_malloc()).unwrap_or_else(|| "unknown".into());
    let missing = |what: &str| {
        MeasureError::child_input(&format!(
            "{} is not loaded in the child ({what} not found; malloc is {malloc_from})",
            allocator.name()
        ))
    };
    let (heap, figures) = match allocator {
        Allocator::Glibc => {
            if !malloc_from.contains("libc.so") {
                return Err(missing("glibc's malloc"));
            }
            (Heap::libc(), Figures::Glibc)
        }
        Allocator::Jemalloc => (
            Heap::libc(),
            Figures::jemalloc_preloaded().ok_or_else(|| missing("mallctl"))?,
        ),
        Allocator::Tcmalloc => (
            Heap::libc(),
            Figures::tcmalloc().ok_or_else(|| missing("MallocExtension_GetNumericProperty"))?,
        ),
        Allocator::Mimalloc => (
            Heap::libc(),
            Figures::mimalloc().ok_or_else(|| missing("mi_process_info"))?,
        ),
        Allocator::Jemalloc531 => (Heap::linked_jemalloc(), Figures::jemalloc_linked()),
    };
    let library = match allocator {
        Allocator::Jemalloc531 => object_of(tikv_jemalloc_sys::malloc as *const c_void)
            .map_or("linked".into(), |exe| {
                format!("{exe} (linked, _rjem_ prefix)")
            }),
        _ => malloc_from,
    };
    Ok((heap, figures, library))
}

fn symbol_malloc() -> *const c_void {
    super::probe::symbol(c"malloc")
}

/// One sample as the child keeps it: absolute values (the parent subtracts the baseline).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawSample {
    event: u64,
    resident: u64,
    in_use: u64,
    held: u64,
    active: u64,
}

const NONE: u64 = u64::MAX;

struct Sampler {
    resident: Resident,
    figures: Figures,
}

impl Sampler {
    fn take(&self, event: u64) -> Result<RawSample, MeasureError> {
        let (in_use, held) = self.figures.read();
        let active = self.figures.active();
        let resident = self
            .resident
            .read()
            .map_err(|e| MeasureError::io("/proc/self/smaps_rollup", e))?;
        Ok(RawSample {
            event,
            resident,
            in_use: in_use.unwrap_or(NONE),
            held: held.unwrap_or(NONE),
            active: active.unwrap_or(NONE),
        })
    }
}

/// The calls as the workers run them: one at a time, in the order the baton hands them out.
struct Calls<'a> {
    heap: Heap,
    file: &'a Mapping,
    ptrs: *mut *mut u8,
    sizes: *mut u64,
    ids: usize,
    failure: OnceLock<(usize, &'static str)>,
}

// SAFETY: the tables behind `ptrs` and `sizes` are touched by one worker at a time (the
// baton orders them: each run starts after the previous one's release).
unsafe impl Sync for Calls<'_> {}

impl Work for Calls<'_> {
    fn run(&self, i: usize) -> bool {
        let (size, id, kind, lg_align, _) = self.file.event(i);
        // SAFETY: the tables hold `ids` entries; only this worker touches them now; the
        // parent's model checked that every free and realloc names a live object.
        let result = unsafe {
            let ptrs = std::slice::from_raw_parts_mut(self.ptrs, self.ids);
            let sizes = std::slice::from_raw_parts_mut(self.sizes, self.ids);
            apply(&self.heap, ptrs, sizes, id, kind, lg_align, size)
        };
        match result {
            Ok(()) => true,
            Err(what) => {
                let _ = self.failure.set((i, what));
                false
            }
        }
    }
}

/// The end of the span that starts at entry `from`: after the call that completes the next
/// multiple of `every` calls, or the end of the file once no call is left (trailing thread
/// exits go with the last span). Also the calls in it.
fn span_end(
    file: &Mapping,
    from: usize,
    entries: usize,
    calls_before: u64,
    every: u64,
    last_call: usize,
) -> (usize, u64) {
    let mut calls = calls_before;
    let mut i = from;
    while i < entries {
        let exit = file.step(i).exit;
        i += 1;
        if !exit {
            calls += 1;
            if i >= last_call {
                return (entries, calls);
            }
            if calls.is_multiple_of(every) {
                return (i, calls);
            }
        }
    }
    (entries, calls)
}

/// Maps the event file at `events`; returns it with its entry and id counts (from its
/// header), refusing a file shorter than its entries.
fn open_events(events: &Path) -> Result<(Mapping, usize, usize), MeasureError> {
    let file = Mapping::file(events)?;
    let entries = file.u64_at(0) as usize;
    let ids = file.u64_at(8) as usize;
    if file.len < HEADER_BYTES + entries * EVENT_BYTES {
        return Err(MeasureError::child_input(
            "the event file is shorter than its event count",
        ));
    }
    Ok((file, entries, ids))
}

/// The trace's threads, its calls (entries that are not thread exits) and the index just
/// past its last call.
fn scan_events(file: &Mapping, entries: usize) -> (usize, usize, usize) {
    let mut threads = 0;
    let mut count = 0usize;
    let mut last_call = 0;
    for i in 0..entries {
        let s = file.step(i);
        threads = threads.max(s.thread + 1);
        if !s.exit {
            count += 1;
            last_call = i + 1;
        }
    }
    (threads, count, last_call)
}

/// One allocation kept live, so the allocator's start-up happens before the baseline.
fn warm_up(heap: &Heap) -> Result<(), MeasureError> {
    // SAFETY: a plain allocation, never freed.
    let warm = unsafe { (heap.malloc)(1) };
    if warm.is_null() {
        return Err(MeasureError::child_input("the warm-up malloc(1) failed"));
    }
    Ok(())
}

/// Replays the event file at `events` through `allocator`, sampling every `every` calls
/// (and at call 0, the baseline, and after the last).
pub fn replay(
    allocator: Allocator,
    events: &Path,
    every: u64,
) -> Result<ChildReport, MeasureError> {
    let every = every.max(1);
    let (heap, figures, library) = setup(allocator)?;
    let jemalloc = jemalloc_build(allocator)?;
    let (file, entries, ids) = open_events(events)?;
    let (threads, count, last_call) = scan_events(&file, entries);
    let samples_len = count / every as usize + 2;
    // One mapping for every table: pointer and size (with log2 alignment in the top byte)
    // per id, then the samples.
    let table_bytes = ids * 16 + samples_len * std::mem::size_of::<RawSample>();
    let tables = Mapping::anonymous(table_bytes)?;
    // SAFETY: the mapping is zeroed, large enough and page-aligned for each table.
    let samples = unsafe {
        std::slice::from_raw_parts_mut(tables.ptr.add(ids * 16).cast::<RawSample>(), samples_len)
    };
    let calls = Calls {
        heap,
        file: &file,
        ptrs: tables.ptr.cast::<*mut u8>(),
        // SAFETY: inside the mapping (ids * 8 bytes of pointers come first).
        sizes: unsafe { tables.ptr.add(ids * 8).cast::<u64>() },
        ids,
        failure: OnceLock::new(),
    };
    let sampler = Sampler {
        resident: Resident::open().map_err(|e| MeasureError::io("/proc/self/smaps_rollup", e))?,
        figures,
    };
    // Warm-up, kept live: the allocator's start-up (its first mapping) happens before the
    // baseline, and the statistics calls have run once. The workers start before it too
    // (their stacks and thread descriptors are in the baseline); each worker's own cache or
    // arena is made at its first call, as in the program.
    warm_up(&heap)?;
    // Trace thread 0 (the program's main thread) runs on this main thread, but under jemalloc,
    // where this thread has left the automatic arenas and a worker plays it (as in the
    // process model's live child).
    let caller = (jemalloc.is_none() && threads > 0).then_some(0);
    let mut baton = Baton::start_with_caller(&calls, threads, caller)
        .map_err(|e| MeasureError::child_input(&format!("{e:#}")))?;
    sampler.take(0)?;
    samples[0] = sampler.take(0)?;
    let mut taken = 1;
    let (mut from, mut done) = (0, 0u64);
    while from < entries {
        let (to, n) = span_end(&file, from, entries, done, every, last_call);
        if let Err(i) = baton.run_span(from, to, |i| file.step(i)) {
            let what = calls.failure.get().map_or("failed", |f| f.1);
            return Err(MeasureError::child_input(&format!(
                "entry {}: {what}",
                i + 1
            )));
        }
        if n > done || n == 0 {
            samples[taken] = sampler.take(n)?;
            taken += 1;
        }
        (from, done) = (to, n);
    }
    // An empty trace still gets a sample after its (no) events, to compare with the baseline.
    if count == 0 && taken == 1 {
        samples[taken] = sampler.take(0)?;
        taken += 1;
    }
    let mut report = report(
        allocator,
        library,
        &figures,
        tables.len,
        u128::from(baton.busy_ns()),
        &samples[..taken],
    );
    report.threads = threads as u64;
    (report.jemalloc_config, report.jemalloc_arena0_large) = jemalloc.unzip();
    Ok(report)
}

/// Under jemalloc: its build (as the process child prints it) and the large bytes start-up
/// left live in arena 0 (the process model starts from them), read before the baseline.
fn jemalloc_build(allocator: Allocator) -> Result<Option<(String, u64)>, MeasureError> {
    use crate::live::Api;
    let api = match allocator {
        Allocator::Jemalloc531 => Api::linked(),
        Allocator::Jemalloc => {
            Api::system().map_err(|e| MeasureError::child_input(&format!("{e:#}")))?
        }
        _ => return Ok(None),
    };
    if crate::check::manual_arena().is_none() {
        return Err(MeasureError::child_input(
            "the replayer's main thread was not moved to a manual arena (FRAGSIM_PROCESS_CHILD unset?)",
        ));
    }
    let fail = |e: anyhow::Error| MeasureError::child_input(&format!("{e:#}"));
    let config = api.config().map_err(fail)?;
    // SAFETY: writing epoch takes a uint64_t; large.allocated is a size_t.
    let residue = unsafe {
        api.write("epoch", 1u64).map_err(fail)?;
        api.read::<usize>("stats.arenas.0.large.allocated")
            .map_err(fail)? as u64
    };
    let json =
        serde_json::to_string(&config).map_err(|e| MeasureError::child_input(&e.to_string()))?;
    Ok(Some((json, residue)))
}

fn report(
    allocator: Allocator,
    library: String,
    figures: &Figures,
    tables_bytes: usize,
    replay_ns: u128,
    samples: &[RawSample],
) -> ChildReport {
    let sources = figures.sources();
    let opt = |v: u64| (v != NONE).then_some(v);
    ChildReport {
        allocator: allocator.name().to_string(),
        library: Library {
            library,
            version: version(figures),
            tables_bytes: tables_bytes as u64,
            in_use_source: sources.in_use.map(str::to_string),
            held_source: sources.held.map(str::to_string),
        },
        replay_ns: replay_ns as u64,
        threads: 1,
        jemalloc_config: None,
        jemalloc_arena0_large: None,
        samples: samples
            .iter()
            .map(|s| {
                (
                    s.event,
                    s.resident,
                    opt(s.in_use),
                    opt(s.held),
                    opt(s.active),
                )
            })
            .collect(),
    }
}

/// Writes one byte per page of `[from, to)` of the block at `p` (and its last byte), as a
/// program that fills what it allocates would: untouched pages are not resident.
///
/// # Safety
/// `p` points to at least `to` writable bytes.
unsafe fn touch(p: *mut u8, from: usize, to: usize) {
    let mut off = from;
    while off < to {
        unsafe { p.add(off).write_volatile(1) };
        off += TOUCH;
    }
    if to > from {
        unsafe { p.add(to - 1).write_volatile(1) };
    }
}

/// Applies one event. Sizes of 0 are asked as 1 (as the model does), so `realloc(p, 0)`
/// never frees.
///
/// # Safety
/// `id < ptrs.len()`; frees and reallocs name live objects.
unsafe fn apply(
    heap: &Heap,
    ptrs: &mut [*mut u8],
    sizes: &mut [u64],
    id: usize,
    kind: u8,
    lg_align: u8,
    size: usize,
) -> Result<(), &'static str> {
    const SIZE_MASK: u64 = (1 << 56) - 1;
    if id >= ptrs.len() {
        return Err("object id beyond the table");
    }
    match kind {
        ALLOC => {
            let p = unsafe {
                if lg_align > 0 {
                    (heap.aligned_alloc)(1 << lg_align, size.max(1))
                } else {
                    (heap.malloc)(size.max(1))
                }
            };
            if p.is_null() {
                return Err("malloc failed");
            }
            unsafe { touch(p.cast(), 0, size) };
            ptrs[id] = p.cast();
            sizes[id] = size as u64 | u64::from(lg_align) << 56;
        }
        FREE => {
            let p = std::mem::replace(&mut ptrs[id], std::ptr::null_mut());
            if p.is_null() {
                return Err("free of an object that is not live");
            }
            unsafe { (heap.free)(p.cast()) };
        }
        REALLOC => {
            let p = ptrs[id];
            if p.is_null() {
                return Err("realloc of an object that is not live");
            }
            let old = (sizes[id] & SIZE_MASK) as usize;
            let lg = (sizes[id] >> 56) as u8;
            // C's realloc does not keep an alignment above malloc's: an aligned block moves
            // as a program would move it (new aligned block, copy, free).
            let q = unsafe {
                if lg > 0 {
                    let q = (heap.aligned_alloc)(1 << lg, size.max(1));
                    if !q.is_null() {
                        std::ptr::copy_nonoverlapping(p, q.cast::<u8>(), old.min(size));
                        (heap.free)(p.cast());
                    }
                    q
                } else {
                    (heap.realloc)(p.cast(), size.max(1))
                }
            };
            if q.is_null() {
                return Err("realloc failed");
            }
            unsafe { touch(q.cast(), old.min(size), size) };
            ptrs[id] = q.cast();
            sizes[id] = size as u64 | u64::from(lg) << 56;
        }
        _ => return Err("bad event kind"),
    }
    Ok(())
}
