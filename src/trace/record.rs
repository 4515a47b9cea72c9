//! Recording a Rust program's own allocations in-process.
//!
//! [`RecordingAllocator`] wraps any `GlobalAlloc`. While idle it costs one relaxed atomic load
//! per call. While recording, each successful call is appended, under a spin lock held across
//! the inner call (so the order of calls is the order the allocator saw them), to a buffer of
//! address-level calls that was allocated up front from the inner allocator: recording never
//! allocates, so it never recurses into itself. A full buffer counts the calls it dropped and
//! [`Recording::events`] then refuses to pretend the trace is complete. Addresses become ids
//! (lowest free first) only after [`RecordingAllocator::stop`], through the same importer as
//! valgrind logs.

use super::addr::{AddressImporter, IssueCounts};
use super::{Event, TraceError, TraceHeader};
use std::alloc::{GlobalAlloc, Layout};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// One allocator call as the wrapper saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawCall {
    Alloc {
        addr: usize,
        size: usize,
        align: usize,
    },
    Free {
        addr: usize,
    },
    Realloc {
        old: usize,
        new: usize,
        size: usize,
    },
}

/// Whose calls a recording keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordScope {
    /// Only the thread that called `start` (what tests want: the harness's threads are
    /// left out).
    ThisThread,
    AllThreads,
}

const IDLE: u8 = 0;
const RECORDING: u8 = 1;

thread_local! {
    // Its address identifies the thread; const-initialised and without a destructor, so
    // reading it never allocates.
    static THREAD_MARK: u8 = const { 0 };
}

fn thread_token() -> usize {
    THREAD_MARK.with(|m| m as *const u8 as usize)
}

/// A `GlobalAlloc` wrapper that can record the calls it forwards. Install it with
/// `#[global_allocator] static A: RecordingAllocator<Jemalloc> = RecordingAllocator::new(Jemalloc);`
/// then `A.start(..)`, run the code of interest, `A.stop()`.
pub struct RecordingAllocator<A> {
    inner: A,
    state: AtomicU8,
    lock: AtomicBool,
    buf: AtomicPtr<RawCall>,
    cap: AtomicUsize,
    len: AtomicUsize,
    dropped: AtomicU64,
    /// `thread_token()` of the recording thread, 0 for all threads.
    thread: AtomicUsize,
}

/// What [`RecordingAllocator::stop`] hands back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    pub calls: Vec<RawCall>,
    /// Calls that did not fit in the buffer.
    pub dropped: u64,
}

impl<A> RecordingAllocator<A> {
    pub const fn new(inner: A) -> Self {
        RecordingAllocator {
            inner,
            state: AtomicU8::new(IDLE),
            lock: AtomicBool::new(false),
            buf: AtomicPtr::new(std::ptr::null_mut()),
            cap: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            thread: AtomicUsize::new(0),
        }
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    fn acquire(&self) {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
    }

    fn release(&self) {
        self.lock.store(false, Ordering::Release);
    }

    /// True if this call should be recorded (checked again under the lock).
    #[inline(always)]
    fn wants(&self) -> bool {
        if self.state.load(Ordering::Relaxed) != RECORDING {
            return false;
        }
        let thread = self.thread.load(Ordering::Relaxed);
        thread == 0 || thread == thread_token()
    }

    /// Appends under the lock; the caller holds it.
    fn push_locked(&self, call: RawCall) {
        if self.state.load(Ordering::Relaxed) != RECORDING {
            return;
        }
        let len = self.len.load(Ordering::Relaxed);
        if len < self.cap.load(Ordering::Relaxed) {
            // SAFETY: `buf` holds `cap` slots while recording; `len < cap`; we hold the lock.
            unsafe { self.buf.load(Ordering::Relaxed).add(len).write(call) };
            self.len.store(len + 1, Ordering::Relaxed);
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<A: GlobalAlloc> RecordingAllocator<A> {
    /// Starts recording into a buffer of `capacity` calls. Fails if already recording or the
    /// buffer cannot be allocated.
    pub fn start(&self, capacity: usize, scope: RecordScope) -> Result<(), TraceError> {
        let layout = Layout::array::<RawCall>(capacity.max(1)).map_err(|_| TraceError::Input {
            file: "<recording>".into(),
            what: format!("a buffer of {capacity} calls is too large"),
        })?;
        self.acquire();
        if self.state.load(Ordering::Relaxed) == RECORDING {
            self.release();
            return Err(TraceError::Input {
                file: "<recording>".into(),
                what: "already recording".into(),
            });
        }
        // SAFETY: the layout has a non-zero size.
        let buf = unsafe { self.inner.alloc(layout) } as *mut RawCall;
        if buf.is_null() {
            self.release();
            return Err(TraceError::Input {
                file: "<recording>".into(),
                what: format!("cannot allocate a buffer of {capacity} calls"),
            });
        }
        self.buf.store(buf, Ordering::Relaxed);
        self.cap.store(capacity, Ordering::Relaxed);
        self.len.store(0, Ordering::Relaxed);
        self.dropped.store(0, Ordering::Relaxed);
        let thread = match scope {
            RecordScope::ThisThread => thread_token(),
            RecordScope::AllThreads => 0,
        };
        self.thread.store(thread, Ordering::Relaxed);
        self.state.store(RECORDING, Ordering::Relaxed);
        self.release();
        Ok(())
    }

    /// Stops recording and returns the calls (an empty recording if none was running).
    pub fn stop(&self) -> Recording {
        self.acquire();
        self.state.store(IDLE, Ordering::Relaxed);
        let buf = self.buf.swap(std::ptr::null_mut(), Ordering::Relaxed);
        let cap = self.cap.swap(0, Ordering::Relaxed);
        let len = self.len.swap(0, Ordering::Relaxed);
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        self.release();
        let mut calls = Vec::new();
        if !buf.is_null() {
            // SAFETY: `buf` held `len` initialised calls; nobody writes it after the state
            // went idle under the lock; it was allocated with this layout.
            unsafe {
                calls.extend_from_slice(std::slice::from_raw_parts(buf, len));
                self.inner.dealloc(
                    buf as *mut u8,
                    Layout::array::<RawCall>(cap.max(1)).expect("layout was valid at start"),
                );
            }
        }
        Recording { calls, dropped }
    }

    /// An allocation of `layout` by `alloc`, recorded when it succeeds.
    #[inline(always)]
    fn recorded_alloc(&self, layout: Layout, alloc: impl FnOnce() -> *mut u8) -> *mut u8 {
        self.recorded(|| {
            let p = alloc();
            let raw = (!p.is_null()).then_some(RawCall::Alloc {
                addr: p as usize,
                size: layout.size(),
                align: layout.align(),
            });
            (p, raw)
        })
    }

    #[inline(always)]
    fn recorded<T>(&self, call: impl FnOnce() -> (T, Option<RawCall>)) -> T {
        if !self.wants() {
            return call().0;
        }
        self.acquire();
        let (result, raw) = call();
        if let Some(raw) = raw {
            self.push_locked(raw);
        }
        self.release();
        result
    }
}

// SAFETY: every method forwards to `inner` with the same arguments and returns its result;
// recording only reads the arguments and results.
unsafe impl<A: GlobalAlloc> GlobalAlloc for RecordingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.recorded_alloc(layout, || self.inner.alloc(layout))
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.recorded_alloc(layout, || self.inner.alloc_zeroed(layout))
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.recorded(|| {
            self.inner.dealloc(ptr, layout);
            ((), Some(RawCall::Free { addr: ptr as usize }))
        })
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.recorded(|| {
            let p = self.inner.realloc(ptr, layout, new_size);
            let raw = (!p.is_null()).then_some(RawCall::Realloc {
                old: ptr as usize,
                new: p as usize,
                size: new_size,
            });
            (p, raw)
        })
    }
}

/// The events of a recording, and what had to be repaired to get them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedEvents {
    pub events: Vec<Event>,
    /// Mostly frees and reallocs of memory allocated before `start`.
    pub issues: IssueCounts,
}

impl Recording {
    /// Turns the calls into id events (lowest free id first). Alignments are kept as Rust
    /// asked for them (e.g. 8 for a `Vec<u64>`). Fails if calls were dropped.
    pub fn events(&self) -> Result<RecordedEvents, TraceError> {
        if self.dropped > 0 {
            return Err(TraceError::Input {
                file: "<recording>".into(),
                what: format!(
                    "{} call(s) did not fit in the buffer of {}: start with a larger capacity",
                    self.dropped,
                    self.calls.len()
                ),
            });
        }
        let mut importer = AddressImporter::new();
        let mut events = Vec::with_capacity(self.calls.len());
        let exhausted = |_| TraceError::Input {
            file: "<recording>".into(),
            what: "more than 2^32 live objects".into(),
        };
        for call in &self.calls {
            match *call {
                RawCall::Alloc { addr, size, align } => {
                    importer
                        .alloc(addr as u64, size as u64, align as u64, &mut events)
                        .map_err(exhausted)?;
                }
                RawCall::Free { addr } => {
                    importer.free(addr as u64, &mut events);
                }
                RawCall::Realloc { old, new, size } => {
                    importer
                        .realloc(old as u64, new as u64, size as u64, &mut events)
                        .map_err(exhausted)?;
                }
            }
        }
        Ok(RecordedEvents {
            events,
            issues: importer.issues,
        })
    }

    /// Writes the recording as a trace file (atomically).
    pub fn write_trace(&self, path: &Path) -> Result<TraceHeader, TraceError> {
        let recorded = self.events()?;
        super::write_trace(path, recorded.events.into_iter().map(Ok))
    }
}
