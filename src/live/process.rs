//! Live baton replay of a whole process: one real thread per trace thread, all created
//! before the first event, each call run on its thread strictly in trace order, in a child
//! process (`fragsim __process-live-child`) whose jemalloc runs with thread caches on and
//! decay off. The child prints the statistics every K events; the parent runs the
//! [`crate::process::Process`] model beside it and compares.
//!
//! Keeping the replayer out of the comparison: before Rust's `main` (an `.init_array`
//! constructor, when `FRAGSIM_PROCESS_CHILD` is set) the child's main thread creates a
//! manual arena, turns its own cache off and moves to that arena (design note). Its
//! start-up, its tables, `pthread_create`'s allocations and its output then touch no
//! automatic arena; the cache block jemalloc allocated for it in arena 0 at that first call
//! is freed, and moving away leaves arena 0 with no thread, which purges it to retained
//! (`arena_migrate`), so arena 0 is as a fresh one. Workers are raw pthreads that allocate
//! nothing but the trace's calls. `stats.allocated`/`stats.active` are read and the manual
//! arena's share subtracted.

use super::replay::{mib, parse_config, read_mib, Api};
use crate::process::{
    compare_snapshots, to_text, ArenaSnapshot, Process, ProcessOptions, ProcessSnapshot,
};
use crate::sim::{BinStats, Comparison};
use crate::trace::{Event, Record};
use anyhow::{bail, ensure, Context, Result};
use std::ffi::c_void;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Set by the constructor: the manual arena's index + 1 (0: not run), or a negative error.
static MANUAL_ARENA: AtomicI32 = AtomicI32::new(0);

extern "C" fn child_constructor() {
    // SAFETY: getenv and the ctls take NUL-terminated names; nothing here allocates in Rust.
    unsafe {
        let which = libc::getenv(c"FRAGSIM_PROCESS_CHILD".as_ptr());
        if which.is_null() {
            return;
        }
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

fn parse_snapshot(line: &str) -> Result<ProcessSnapshot> {
    if let Some(err) = line.strip_prefix("error ") {
        bail!("live process replay: {err}");
    }
    let mut it = line
        .strip_prefix("s ")
        .with_context(|| format!("bad snapshot line from the child: '{line}'"))?
        .split(' ')
        .map(|t| t.parse::<u64>().context("bad number from the child"));
    let mut next = || it.next().context("short snapshot line")?;
    let mut s = ProcessSnapshot {
        event: next()?,
        allocated_bytes: next()?,
        active_bytes: next()?,
        arenas: Vec::new(),
    };
    for _ in 0..next()? {
        let mut a = ArenaSnapshot {
            index: next()? as u32,
            allocated_bytes: next()?,
            active_bytes: next()?,
            tcache_bytes: next()?,
            bins: Vec::new(),
        };
        for _ in 0..next()? {
            a.bins.push(BinStats {
                curregs: next()?,
                curslabs: next()?,
                nonfull_slabs: next()?,
            });
        }
        s.arenas.push(a);
    }
    Ok(s)
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
pub fn serve_process_child(text: &str, every: u64, api: Api, out: &mut impl Write) -> Result<()> {
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
    let last = shared.ops.len() as u64;
    for (i, op) in shared.ops.iter().enumerate() {
        let t = op.thread as usize;
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
        }
    }
    out.flush()?;
    Ok(())
}

/// Which jemalloc a live process replay drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessAllocator {
    /// The linked 5.3.1, in a child with `experimental_tcache_gc:false` and decay off.
    Linked,
    /// A system jemalloc (e.g. Debian's 5.3.0), preloaded into the child.
    System(std::path::PathBuf),
}

/// A model-versus-live process run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProcessLiveComparison {
    pub version: String,
    pub narenas: u32,
    pub threads: usize,
    pub events: u64,
    pub comparison: Comparison,
}

/// Replays `records` through the process model and a live child side by side, comparing
/// every `every` events and after the last. `exe` is the fragsim executable.
pub fn compare_process_live(
    exe: &Path,
    allocator: &ProcessAllocator,
    records: &[Record],
    options: &ProcessOptions,
    every: u64,
    keep: usize,
) -> Result<ProcessLiveComparison> {
    let mut input = tempfile::NamedTempFile::new().context("temporary record file")?;
    input.write_all(to_text(records).as_bytes())?;
    input.flush()?;
    let mut command = Command::new(exe);
    command
        .args(["__process-live-child", "--every", &every.max(1).to_string()])
        .arg(input.path());
    match allocator {
        ProcessAllocator::Linked => {
            command.env("FRAGSIM_PROCESS_CHILD", "linked").env(
                "_RJEM_MALLOC_CONF",
                options.to_conf(crate::sizeclass::JemallocVersion::V5_3_1),
            );
        }
        ProcessAllocator::System(lib) => {
            ensure!(lib.is_file(), "no jemalloc library at '{}'", lib.display());
            command
                .arg("--system")
                .env("FRAGSIM_PROCESS_CHILD", "system")
                .env("LD_PRELOAD", lib)
                .env(
                    "MALLOC_CONF",
                    options.to_conf(crate::sizeclass::JemallocVersion::V5_3_0),
                );
        }
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start '{}'", exe.display()))?;
    let _registration = crate::cleanup::stop_on_interrupt(child.id());
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut header = || -> Result<String> {
        match lines.next() {
            Some(l) => Ok(l?),
            None => bail!("the live process child printed nothing"),
        }
    };
    let first = header();
    let second = header();
    let third = header();
    let (first, second, third) = match (first, second, third) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (a, b, c) => {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.wait();
            let e = a.err().or(b.err()).or(c.err());
            bail!(
                "{}: {}",
                e.map_or(String::new(), |e| e.to_string()),
                err.trim()
            );
        }
    };
    if let Some(err) = first.strip_prefix("error ") {
        bail!("live process replay: {err}");
    }
    let config = parse_config(&first)?;
    let narenas: u32 = second
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("bad child header '{second}'"))?;
    let mut model_options = options.clone();
    model_options.narenas = Some(narenas);
    model_options.experimental_tcache_gc = Some(false);
    let base: Vec<u64> = third
        .split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse().ok())
        .collect();
    let [residue, small] = base[..] else {
        bail!("bad child header '{third}'")
    };
    ensure!(
        small == 0,
        "the live child's start-up left {small} small bytes in arena 0 (not modelled)"
    );
    let mut model = Process::new(config, model_options, 1)?;
    model.replayer_start(residue)?;
    let mut comparison = Comparison::default();
    let calls: Vec<&Record> = records
        .iter()
        .filter(|r| !matches!(r, Record::Site { .. }))
        .collect();
    let last = calls.len() as u64;
    let mut threads = 0;
    for (i, r) in calls.iter().enumerate() {
        if let Record::Call(c) = r {
            threads = threads.max(c.thread as usize + 1);
        }
        model.apply(r)?;
        let n = i as u64 + 1;
        if n.is_multiple_of(every.max(1)) || n == last {
            let line = lines
                .next()
                .context("the live process child stopped early")??;
            compare_snapshots(
                &model.snapshot(),
                &parse_snapshot(&line)?,
                keep,
                &mut comparison,
            );
        }
    }
    let status = child.wait()?;
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        bail!("the live process child failed: {}", err.trim());
    }
    Ok(ProcessLiveComparison {
        version: config.version.as_str().to_string(),
        narenas,
        threads,
        events: last,
        comparison,
    })
}

/// Writes the child's output to stdout (buffered) and leaves at once: workers still
/// parked are not woken (their caches would flush at exit, after the comparison).
pub fn run_process_child(path: &Path, every: u64, system: bool) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let api = if system {
        Api::system()?
    } else {
        Api::linked()
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if let Err(e) = serve_process_child(&text, every, api, &mut out) {
        writeln!(out, "error {e:#}")?;
    }
    out.flush()?;
    // SAFETY: _exit ends the process without running destructors (workers are parked).
    unsafe { libc::_exit(0) }
}
