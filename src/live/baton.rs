//! The child side of the live process replay (`fragsim __process-live-child`): the
//! start-up constructor that moves the main thread to a manual arena, one raw pthread per
//! trace thread driven by futexes in trace order (a baton), and the statistics reader.
//! See [`crate::live::process`] for why it is built this way.

use super::replay::{mib, read_mib, Api};
use crate::process::{ArenaSnapshot, ProcessSnapshot};
use crate::sim::BinStats;
use crate::trace::{Event, Record};
use anyhow::{ensure, Context, Result};
use std::ffi::c_void;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Set by the constructor: the manual arena's index + 1 (0: not run), or a negative error.
static MANUAL_ARENA: AtomicI32 = AtomicI32::new(0);
/// `CLOCK_MONOTONIC` at the constructor's start (about when jemalloc made arena 0 and its
/// decay epoch): the clock-honouring replay reports its start against it.
pub(super) static CONSTRUCTOR_NS: AtomicU64 = AtomicU64::new(0);

/// `CLOCK_MONOTONIC` now, in ns.
pub(super) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

extern "C" fn child_constructor() {
    // SAFETY: getenv and the ctls take NUL-terminated names; nothing here allocates in Rust.
    unsafe {
        let which = libc::getenv(c"FRAGSIM_PROCESS_CHILD".as_ptr());
        if which.is_null() {
            return;
        }
        CONSTRUCTOR_NS.store(monotonic_ns(), Ordering::SeqCst);
        let mallctl: super::replay::MallctlFn = if *which == b's' as libc::c_char {
            let p = libc::dlsym(libc::RTLD_DEFAULT, c"mallctl".as_ptr());
            if p.is_null() {
                MANUAL_ARENA.store(-1, Ordering::SeqCst);
                return;
            }
            std::mem::transmute::<*mut c_void, super::replay::MallctlFn>(p)
        } else {
            tikv_jemalloc_sys::mallctl
        };
        let mut arena: u32 = 0;
        let mut len = std::mem::size_of::<u32>();
        let null = std::ptr::null_mut();
        if mallctl(
            c"arenas.create".as_ptr(),
            (&mut arena as *mut u32).cast(),
            &mut len,
            null,
            0,
        ) != 0
        {
            MANUAL_ARENA.store(-2, Ordering::SeqCst);
            return;
        }
        let mut off = false;
        if mallctl(
            c"thread.tcache.enabled".as_ptr(),
            null,
            std::ptr::null_mut(),
            (&mut off as *mut bool).cast(),
            1,
        ) != 0
        {
            MANUAL_ARENA.store(-3, Ordering::SeqCst);
            return;
        }
        if mallctl(
            c"thread.arena".as_ptr(),
            null,
            std::ptr::null_mut(),
            (&mut arena as *mut u32).cast(),
            4,
        ) != 0
        {
            MANUAL_ARENA.store(-4, Ordering::SeqCst);
            return;
        }
        MANUAL_ARENA.store(arena as i32 + 1, Ordering::SeqCst);
    }
}

#[used]
#[link_section = ".init_array"]
static CHILD_CONSTRUCTOR: extern "C" fn() = child_constructor;

/// One call as a worker runs it.
#[derive(Clone, Copy)]
struct Op {
    kind: u8,
    thread: u32,
    id: u32,
    size: usize,
    flags: i32,
}

const OP_ALLOC: u8 = 0;
const OP_FREE: u8 = 1;
const OP_REALLOC: u8 = 2;
const OP_EXIT: u8 = 3;
const JOB_NONE: u64 = 0;

/// What the workers share (read-only but for `ptrs` and the futex words).
struct Shared {
    api: Api,
    ops: Vec<Op>,
    ptrs: Vec<AtomicU64>,
    jobs: Vec<AtomicU64>,
    done: AtomicU32,
    failed: AtomicU64,
}

/// `FUTEX_WAIT | FUTEX_PRIVATE_FLAG` and `FUTEX_WAKE | FUTEX_PRIVATE_FLAG` (linux/futex.h).
const FUTEX_WAIT_PRIVATE: libc::c_int = 128;
const FUTEX_WAKE_PRIVATE: libc::c_int = 129;

fn futex_wait(word: &AtomicU32, val: u32) {
    // SAFETY: FUTEX_WAIT on a valid aligned u32; spurious wake-ups are handled by callers.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            FUTEX_WAIT_PRIVATE,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid aligned u32.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), FUTEX_WAKE_PRIVATE, i32::MAX);
    }
}

/// The low half of a job word is its futex (the job index + 1); waiting reads it.
fn job_word(job: &AtomicU64) -> &AtomicU32 {
    // SAFETY: little-endian x86-64: the first 4 bytes of the u64 are its low half.
    unsafe { &*(job as *const AtomicU64).cast::<AtomicU32>() }
}

struct WorkerArg {
    shared: *const Shared,
    thread: usize,
}

extern "C" fn worker(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is a WorkerArg that outlives the thread; Shared lives until exit.
    let (shared, t) = unsafe {
        let a = &*(arg as *const WorkerArg);
        (&*a.shared, a.thread)
    };
    let job = &shared.jobs[t];
    loop {
        let j = job.load(Ordering::Acquire);
        if j == JOB_NONE {
            futex_wait(job_word(job), 0);
            continue;
        }
        let op = shared.ops[(j - 1) as usize];
        if op.kind == OP_EXIT {
            job.store(JOB_NONE, Ordering::Release);
            return std::ptr::null_mut();
        }
        let slot = &shared.ptrs[op.id as usize];
        // SAFETY: pointers in `ptrs` came from this jemalloc and are live (checked by the
        // parent's model and the child's liveness table before the run).
        unsafe {
            match op.kind {
                OP_ALLOC => {
                    let p = (shared.api.mallocx)(op.size, op.flags);
                    if p.is_null() {
                        shared.failed.store(j, Ordering::SeqCst);
                    }
                    slot.store(p as u64, Ordering::Relaxed);
                }
                OP_FREE => (shared.api.dallocx)(slot.load(Ordering::Relaxed) as *mut c_void, 0),
                _ => {
                    let old = slot.load(Ordering::Relaxed) as *mut c_void;
                    let p = (shared.api.rallocx)(old, op.size, op.flags);
                    if p.is_null() {
                        shared.failed.store(j, Ordering::SeqCst);
                    } else {
                        slot.store(p as u64, Ordering::Relaxed);
                    }
                }
            }
        }
        job.store(JOB_NONE, Ordering::Release);
        shared.done.store(1, Ordering::Release);
        futex_wake(&shared.done);
    }
}

/// The MIBs of one arena's statistics.
struct ArenaMibs {
    initialized: Vec<usize>,
    small: Vec<usize>,
    large: Vec<usize>,
    pactive: Vec<usize>,
    tcache: Vec<usize>,
    bins: Vec<[Vec<usize>; 3]>,
}

fn arena_mibs(api: &Api, i: usize, nbins: usize) -> Result<ArenaMibs> {
    let at = |name: &str, pos: usize| -> Result<Vec<usize>> {
        let mut m = mib(api, name)?;
        m[pos] = i;
        Ok(m)
    };
    let bins = (0..nbins)
        .map(|j| {
            let f = |field: &str| -> Result<Vec<usize>> {
                let mut m = at(&format!("stats.arenas.0.bins.0.{field}"), 2)?;
                m[4] = j;
                Ok(m)
            };
            Ok([f("curregs")?, f("curslabs")?, f("nonfull_slabs")?])
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ArenaMibs {
        initialized: at("arena.0.initialized", 1)?,
        small: at("stats.arenas.0.small.allocated", 2)?,
        large: at("stats.arenas.0.large.allocated", 2)?,
        pactive: at("stats.arenas.0.pactive", 2)?,
        tcache: at("stats.arenas.0.tcache_bytes", 2)?,
        bins,
    })
}

fn read_bool_mib(api: &Api, m: &[usize]) -> bool {
    let mut v = false;
    let mut len = 1usize;
    // SAFETY: arena.<i>.initialized is a bool.
    let err = unsafe {
        (api.bymib)(
            m.as_ptr(),
            m.len(),
            (&mut v as *mut bool).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    err == 0 && v
}

struct Reader {
    api: Api,
    epoch: Vec<usize>,
    allocated: Vec<usize>,
    active: Vec<usize>,
    arenas: Vec<(u32, ArenaMibs)>,
    manual: ArenaMibs,
    page: u64,
}

impl Reader {
    fn arena(&self, i: u32, m: &ArenaMibs) -> Result<ArenaSnapshot> {
        let api = &self.api;
        Ok(ArenaSnapshot {
            index: i,
            allocated_bytes: read_mib(api, &m.small)? + read_mib(api, &m.large)?,
            active_bytes: read_mib(api, &m.pactive)? * self.page,
            tcache_bytes: read_mib(api, &m.tcache)?,
            bins: m
                .bins
                .iter()
                .map(|[r, s, n]| {
                    Ok(BinStats {
                        curregs: read_mib(api, r)?,
                        curslabs: read_mib(api, s)?,
                        nonfull_slabs: read_mib(api, n)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        })
    }

    fn snapshot(&self, event: u64) -> Result<ProcessSnapshot> {
        let mut one: u64 = 1;
        // SAFETY: writing epoch takes a uint64_t.
        let err = unsafe {
            (self.api.bymib)(
                self.epoch.as_ptr(),
                self.epoch.len(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&mut one as *mut u64).cast(),
                8,
            )
        };
        ensure!(err == 0, "mallctl epoch: error {err}");
        let manual = self.arena(0, &self.manual)?;
        let mut s = ProcessSnapshot {
            event,
            allocated_bytes: read_mib(&self.api, &self.allocated)? - manual.allocated_bytes,
            active_bytes: read_mib(&self.api, &self.active)? - manual.active_bytes,
            arenas: Vec::new(),
        };
        for (i, m) in &self.arenas {
            if read_bool_mib(&self.api, &m.initialized) {
                s.arenas.push(self.arena(*i, m)?);
            }
        }
        Ok(s)
    }
}

fn write_snapshot(out: &mut impl Write, s: &ProcessSnapshot) -> std::io::Result<()> {
    write!(
        out,
        "s {} {} {} {}",
        s.event,
        s.allocated_bytes,
        s.active_bytes,
        s.arenas.len()
    )?;
    for a in &s.arenas {
        write!(
            out,
            " {} {} {} {} {}",
            a.index,
            a.allocated_bytes,
            a.active_bytes,
            a.tcache_bytes,
            a.bins.len()
        )?;
        for b in &a.bins {
            write!(out, " {} {} {}", b.curregs, b.curslabs, b.nonfull_slabs)?;
        }
    }
    writeln!(out)
}

/// Turns records into worker ops, checking liveness (so workers never see a bad pointer).
fn ops_of(records: &[Record]) -> Result<(Vec<Op>, usize, usize)> {
    let mut ops = Vec::with_capacity(records.len());
    let mut live: Vec<Option<i32>> = Vec::new();
    let mut threads = 0usize;
    for (n, r) in records.iter().enumerate() {
        let n = n + 1;
        let (thread, kind, id, size, flags) = match r {
            Record::Site { .. } => continue,
            Record::ThreadExit { thread, .. } => (*thread, OP_EXIT, 0, 0, 0),
            Record::Call(c) => match c.event {
                Event::Alloc { id, size, align } => {
                    let i = id as usize;
                    if i >= live.len() {
                        live.resize(i + 1, None);
                    }
                    ensure!(
                        live[i].is_none(),
                        "event {n}: alloc of id {id}, which is already live"
                    );
                    ensure!(
                        align <= 1 || align.is_power_of_two(),
                        "event {n}: alignment {align} is not a power of two"
                    );
                    let flags = if align > 1 {
                        align.trailing_zeros() as i32
                    } else {
                        0
                    };
                    live[i] = Some(flags);
                    (c.thread, OP_ALLOC, id, size.max(1) as usize, flags)
                }
                Event::Free { id } => {
                    let slot = live.get_mut(id as usize).and_then(Option::take);
                    ensure!(
                        slot.is_some(),
                        "event {n}: free of id {id}, which is not live"
                    );
                    (c.thread, OP_FREE, id, 0, 0)
                }
                Event::Realloc { id, size } => {
                    let flags = live.get(id as usize).copied().flatten();
                    let flags = flags.with_context(|| {
                        format!("event {n}: realloc of id {id}, which is not live")
                    })?;
                    (c.thread, OP_REALLOC, id, size.max(1) as usize, flags)
                }
            },
        };
        threads = threads.max(thread as usize + 1);
        ops.push(Op {
            kind,
            thread,
            id,
            size,
            flags,
        });
    }
    Ok((ops, live.len(), threads))
}

/// The child's side: replays `records` (text form) on one pthread per trace thread and
/// prints a header (the build as JSON, then `narenas N`) and a snapshot every `every` events.
/// With `times` (one per op, ns from the first), each op waits for its time and every
/// snapshot line is followed by a decay line (`crate::live::decay`).
pub fn serve_process_child(
    text: &str,
    every: u64,
    api: Api,
    times: Option<&[u64]>,
    out: &mut impl Write,
) -> Result<()> {
    let manual = MANUAL_ARENA.load(Ordering::SeqCst);
    ensure!(manual > 0, "the child's start-up did not move its main thread to a manual arena (code {manual}): is FRAGSIM_PROCESS_CHILD set?");
    let manual = (manual - 1) as usize;
    let config = api.config()?;
    // SAFETY: documented types (unsigned, size_t).
    let (narenas, nbins, oversize) = unsafe {
        (
            api.read::<u32>("opt.narenas")?,
            api.read::<u32>("arenas.nbins")? as usize,
            api.read::<usize>("opt.oversize_threshold")? as u64,
        )
    };
    writeln!(out, "{}", serde_json::to_string(&config)?)?;
    writeln!(out, "narenas {narenas} oversize {oversize}")?;
    // What start-up left live in arena 0 (the model starts from it).
    {
        let a0 = arena_mibs(&api, 0, 0)?;
        // SAFETY: writing epoch takes a uint64_t.
        unsafe { api.write("epoch", 1u64)? };
        writeln!(
            out,
            "baseline {} {}",
            read_mib(&api, &a0.large)?,
            read_mib(&api, &a0.small)?
        )?;
    }
    let records = crate::process::records_from_text(text)?;
    let (ops, nids, nthreads) = ops_of(&records)?;
    // Automatic arenas and the huge one (index narenas).
    // (Without a huge arena the manual one takes index narenas: skip it.)
    let arenas = (0..=narenas)
        .filter(|&i| i as usize != manual)
        .map(|i| Ok((i, arena_mibs(&api, i as usize, nbins)?)))
        .collect::<Result<Vec<_>>>()?;
    let reader = Reader {
        api,
        epoch: mib(&api, "epoch")?,
        allocated: mib(&api, "stats.allocated")?,
        active: mib(&api, "stats.active")?,
        arenas,
        manual: arena_mibs(&api, manual, nbins)?,
        page: config.page(),
    };
    let shared = Box::new(Shared {
        api,
        ops,
        ptrs: (0..nids).map(|_| AtomicU64::new(0)).collect(),
        jobs: (0..nthreads).map(|_| AtomicU64::new(JOB_NONE)).collect(),
        done: AtomicU32::new(0),
        failed: AtomicU64::new(0),
    });
    let args: Vec<WorkerArg> = (0..nthreads)
        .map(|t| WorkerArg {
            shared: &*shared,
            thread: t,
        })
        .collect();
    let mut handles: Vec<libc::pthread_t> = Vec::with_capacity(nthreads);
    for arg in &args {
        let mut h: libc::pthread_t = 0;
        // SAFETY: `arg` and `shared` outlive every worker (the child exits without freeing).
        let err = unsafe {
            libc::pthread_create(
                &mut h,
                std::ptr::null(),
                worker,
                (arg as *const WorkerArg).cast_mut().cast(),
            )
        };
        ensure!(err == 0, "pthread_create failed: {err}");
        handles.push(h);
    }
    if let Some(times) = times {
        ensure!(
            times.len() == shared.ops.len(),
            "{} times for {} records",
            times.len(),
            shared.ops.len()
        );
    }
    let clock = match times {
        Some(_) => Some(super::decay::ClockReader::new(&api, manual, narenas)?),
        None => None,
    };
    let meta = match &clock {
        Some(c) => Some(c.header()?),
        None => None,
    };
    let start = monotonic_ns();
    if let Some((meta0, fresh)) = meta {
        let since = start.saturating_sub(CONSTRUCTOR_NS.load(Ordering::SeqCst));
        writeln!(out, "clock {since} {meta0} {fresh}")?;
    }
    let last = shared.ops.len() as u64;
    for (i, op) in shared.ops.iter().enumerate() {
        let t = op.thread as usize;
        if let Some(times) = times {
            super::decay::sleep_until(start + times[i]);
        }
        shared.done.store(0, Ordering::Release);
        shared.jobs[t].store(i as u64 + 1, Ordering::Release);
        futex_wake(job_word(&shared.jobs[t]));
        if op.kind == OP_EXIT {
            // SAFETY: the handle is this worker's, joined once.
            unsafe { libc::pthread_join(handles[t], std::ptr::null_mut()) };
        } else {
            while shared.done.load(Ordering::Acquire) == 0 {
                futex_wait(&shared.done, 0);
            }
        }
        let failed = shared.failed.load(Ordering::SeqCst);
        if failed != 0 {
            writeln!(out, "error event {failed}: the allocation failed")?;
            out.flush()?;
            return Ok(());
        }
        let n = i as u64 + 1;
        if n.is_multiple_of(every.max(1)) || n == last {
            write_snapshot(out, &reader.snapshot(n)?)?;
            if let Some(c) = &clock {
                c.write_line(out, monotonic_ns() - start)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Writes the child's output to stdout (buffered) and leaves at once: workers still
/// parked are not woken (their caches would flush at exit, after the comparison).
pub fn run_process_child(
    path: &Path,
    every: u64,
    system: bool,
    times: Option<&Path>,
) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let times = match times {
        Some(p) => Some(super::decay::read_times(p)?),
        None => None,
    };
    let api = if system {
        Api::system()?
    } else {
        Api::linked()
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if let Err(e) = serve_process_child(&text, every, api, times.as_deref(), &mut out) {
        writeln!(out, "error {e:#}")?;
    }
    out.flush()?;
    // SAFETY: _exit ends the process without running destructors (workers are parked).
    unsafe { libc::_exit(0) }
}
