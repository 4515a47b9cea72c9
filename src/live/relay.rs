//! The baton: one raw pthread per trace thread, all created before the first call, each
//! call run on its own thread strictly in the trace's global order. The caller's thread
//! hands a run of consecutive calls of one thread to that thread's worker and sleeps on a
//! futex until it is done, so exactly one worker runs at a time and every call happens after
//! the one before it. Shared by the process model's live child (`check/baton.rs`) and the
//! measuring child of other allocators ([`crate::measure::child`]); what a call does is the
//! caller's ([`Work`]).
//!
//! Workers allocate nothing themselves: the state they share is allocated once in
//! [`Baton::start`] (before any sample) and never freed, so a worker still parked when the
//! caller returns never sees freed memory (the children exit without waking them).

use anyhow::{ensure, Result};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// What the workers run: call `i` of the caller's list, on the calling worker thread.
pub trait Work: Sync {
    /// Runs call `i`; `false`: it failed (the run stops there).
    fn run(&self, i: usize) -> bool;
}

/// Which thread a call runs on, and whether it is that thread's exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub thread: usize,
    pub exit: bool,
}

const IDLE: u32 = 0;
const RUN: u32 = 1;
const EXIT: u32 = 2;

struct Shared<W> {
    work: *const W,
    /// Per worker: its futex word (IDLE, RUN or EXIT).
    jobs: Vec<AtomicU32>,
    /// The run handed out: calls `start..end` (one worker at a time reads them).
    start: AtomicUsize,
    end: AtomicUsize,
    done: AtomicU32,
    /// The first failed call + 1, or 0.
    failed: AtomicUsize,
    /// Nanoseconds spent running calls on their threads (handing runs over excluded).
    busy_ns: AtomicU64,
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

/// Runs calls `start..end` on this thread, timed; `Err(i)`: call `i` failed.
fn run_calls<W: Work>(shared: &Shared<W>, work: &W, start: usize, end: usize) -> Result<(), usize> {
    let t0 = Instant::now();
    let failed = (start..end).find(|&i| !work.run(i));
    let ns = t0.elapsed().as_nanos() as u64;
    shared.busy_ns.fetch_add(ns, Ordering::Relaxed);
    failed.map_or(Ok(()), Err)
}

struct WorkerArg<W> {
    shared: *const Shared<W>,
    thread: usize,
}

extern "C" fn worker<W: Work>(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is a leaked WorkerArg; its Shared is leaked too (never freed).
    let (shared, t) = unsafe {
        let a = &*(arg as *const WorkerArg<W>);
        (&*a.shared, a.thread)
    };
    let job = &shared.jobs[t];
    loop {
        match job.load(Ordering::Acquire) {
            IDLE => {
                futex_wait(job, IDLE);
                continue;
            }
            EXIT => return std::ptr::null_mut(),
            _ => {}
        }
        let (start, end) = (
            shared.start.load(Ordering::Acquire),
            shared.end.load(Ordering::Acquire),
        );
        // SAFETY: work is dereferenced only while the caller waits in `Baton::run`, which
        // borrows it for the baton's lifetime.
        let work = unsafe { &*shared.work };
        if let Err(i) = run_calls(shared, work, start, end) {
            shared.failed.store(i + 1, Ordering::SeqCst);
        }
        job.store(IDLE, Ordering::Release);
        shared.done.store(1, Ordering::Release);
        futex_wake(&shared.done);
    }
}

/// Workers started and waiting for their first run.
pub struct Baton<'w, W: Work> {
    shared: &'w Shared<W>,
    /// The trace thread the caller's own thread plays (no worker for it), if any.
    caller: Option<usize>,
    handles: Vec<Option<libc::pthread_t>>,
    _work: PhantomData<&'w W>,
}

impl<'w, W: Work> Baton<'w, W> {
    /// Starts `threads` workers (raw pthreads, default attributes) running `work`'s calls.
    pub fn start(work: &'w W, threads: usize) -> Result<Baton<'w, W>> {
        Self::start_with_caller(work, threads, None)
    }

    /// As [`Baton::start`], but trace thread `caller` runs on the caller's own thread (the
    /// process's main thread plays the trace's main thread: glibc gives it the main arena,
    /// mimalloc its main heap); its exit is a no-op.
    pub(crate) fn start_with_caller(
        work: &'w W,
        threads: usize,
        caller: Option<usize>,
    ) -> Result<Baton<'w, W>> {
        let shared: &'w Shared<W> = Box::leak(Box::new(Shared {
            work,
            jobs: (0..threads).map(|_| AtomicU32::new(IDLE)).collect(),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            done: AtomicU32::new(0),
            failed: AtomicUsize::new(0),
            busy_ns: AtomicU64::new(0),
        }));
        let args: &'w [WorkerArg<W>] = Vec::leak(
            (0..threads)
                .map(|thread| WorkerArg { shared, thread })
                .collect(),
        );
        let mut handles = Vec::with_capacity(threads);
        for arg in args {
            if Some(arg.thread) == caller {
                handles.push(None);
                continue;
            }
            let mut h: libc::pthread_t = 0;
            // SAFETY: `arg` and `shared` are leaked: they outlive every worker.
            let err = unsafe {
                libc::pthread_create(
                    &mut h,
                    std::ptr::null(),
                    worker::<W>,
                    (arg as *const WorkerArg<W>).cast_mut().cast(),
                )
            };
            ensure!(err == 0, "pthread_create failed: {err}");
            handles.push(Some(h));
        }
        Ok(Baton {
            shared,
            caller,
            handles,
            _work: PhantomData,
        })
    }

    /// Runs calls `from..to` on `thread`'s worker, in order, and waits for them; `Err(i)`:
    /// call `i` failed (the later ones did not run).
    pub fn run(&mut self, thread: usize, from: usize, to: usize) -> Result<(), usize> {
        let s = self.shared;
        if Some(thread) == self.caller {
            // SAFETY: as in `worker`: the work outlives the baton.
            let work = unsafe { &*s.work };
            return run_calls(s, work, from, to);
        }
        s.start.store(from, Ordering::Release);
        s.end.store(to, Ordering::Release);
        s.done.store(0, Ordering::Release);
        s.jobs[thread].store(RUN, Ordering::Release);
        futex_wake(&s.jobs[thread]);
        while s.done.load(Ordering::Acquire) == 0 {
            futex_wait(&s.done, 0);
        }
        match s.failed.load(Ordering::SeqCst) {
            0 => Ok(()),
            i => Err(i - 1),
        }
    }

    /// Nanoseconds spent in calls so far, on every thread (handing runs over excluded).
    /// The lowest address of the workers' stacks (`None` without workers): the process's
    /// mappings made after the workers start lie below it (Linux maps top-down), which is
    /// where the metadata model places the trace's extents (`crate::process::Metadata`).
    pub(crate) fn lowest_stack(&self) -> Option<u64> {
        self.handles
            .iter()
            .flatten()
            .filter_map(|&h| {
                let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::zeroed();
                let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
                // SAFETY: `h` is a live worker (joined only in `exit`/drop); the attributes
                // are destroyed after reading.
                unsafe {
                    if libc::pthread_getattr_np(h, attr.as_mut_ptr()) != 0 {
                        return None;
                    }
                    let err = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
                    libc::pthread_attr_destroy(attr.as_mut_ptr());
                    (err == 0).then_some(addr as u64)
                }
            })
            .min()
    }

    pub(crate) fn busy_ns(&self) -> u64 {
        self.shared.busy_ns.load(Ordering::Acquire)
    }

    /// Ends `thread` (its thread-local destructors run: the allocator's cache of that
    /// thread is flushed) and waits for it. Once only per thread.
    pub fn exit(&mut self, thread: usize) {
        if let Some(h) = self.handles[thread].take() {
            self.shared.jobs[thread].store(EXIT, Ordering::Release);
            futex_wake(&self.shared.jobs[thread]);
            // SAFETY: the handle is this worker's, joined once.
            unsafe { libc::pthread_join(h, std::ptr::null_mut()) };
        }
    }

    /// Runs calls `from..to` of the caller's list, each on its thread (`step`), in order:
    /// consecutive calls of one thread go to it as one run. `Err(i)`: call `i` failed.
    pub(crate) fn run_span(
        &mut self,
        from: usize,
        to: usize,
        step: impl Fn(usize) -> Step,
    ) -> Result<(), usize> {
        let mut i = from;
        while i < to {
            let s = step(i);
            if s.exit {
                self.exit(s.thread);
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < to && step(j) == s {
                j += 1;
            }
            self.run(s.thread, i, j)?;
            i = j;
        }
        Ok(())
    }
}
