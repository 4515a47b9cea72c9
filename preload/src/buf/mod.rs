//! Per-thread event buffers (from `mmap`), the table of all of them (for the final flush) and
//! raw chunk output.
//!
//! Chunks are written in `out.rs`; the final flush, a thread's exit and a fork child's
//! reset of the table are in `lifecycle.rs`.

mod lifecycle;
mod order;
mod out;
mod tls;

pub use lifecycle::{flush_all, forget_other_threads, thread_exit};
use order::mark;
pub use order::{now_key, set_order, KeyOrder};
use out::write_all;
pub use out::{adopt_raw_fd, chunk, close_raw_fd};
use tls::{Tls, TLS};

use crate::stack::StackTable;
use crate::state::{self, KEY, LATE_CALLS, STACKS};
use libc::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{
    compiler_fence, fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

const BUF_BYTES: usize = 1 << 20;
/// The chunk header sits right before the data, so a flush is one `write`.
const HDR: usize = CHUNK_HEADER;
const DATA_AT: usize = 128;
const DATA_CAP: usize = BUF_BYTES - DATA_AT;
pub const MAX_SLOTS: usize = 4096;
use crate::wire::K_EVENTS;
use crate::wire::{CHUNK_HEADER, E_FLAGS, E_MAP, E_REALLOC, E_STACK, E_UNMAP, MAGIC, SAME_STAMP};

#[repr(C)]
pub struct Buf {
    /// 1 while the owning thread appends or writes (see [`begin`]).
    active: AtomicU32,
    /// 1: the thread exited and the buffer waits for a new thread.
    free: AtomicU32,
    slot: u32,
    tid: u32,
    /// Bytes of complete events in the data area.
    len: AtomicUsize,
    /// Rounds of pthread key destructors seen (the exit is written on the last).
    exit_rounds: u32,
    pub stacks: *mut StackTable,
    /// For the progress mark (see [`mark`]), read by other threads when they flush: 1 while
    /// the owner is inside a recorded call (from before it takes a sequence number until its
    /// event is in the buffer).
    in_call: AtomicU32,
    /// The sequence number of the first event in the buffer (`u64::MAX`: none).
    first_seq: AtomicU64,
    /// The stamp of the buffer's last event (`u64::MAX`: none yet, the next one writes its
    /// own): an event with the same stamp leaves it out (`SAME_STAMP`).
    last_stamp: AtomicU64,
    /// One past the last sequence number of the events the owner has put in its buffer: any
    /// number it takes later is at least this.
    floor: AtomicU64,
    /// The owner's last order key with `--order tsc` (its next one is above it: each thread's
    /// keys strictly increase); only the owner touches it.
    last_key: u64,
}

static SLOTS: [AtomicPtr<Buf>; MAX_SLOTS] = [const { AtomicPtr::new(null_mut()) }; MAX_SLOTS];
static NSLOTS: AtomicUsize = AtomicUsize::new(0);
static NEXT_TID: AtomicU32 = AtomicU32::new(0);
/// glibc's PTHREAD_DESTRUCTOR_ITERATIONS.
const DESTRUCTOR_ROUNDS: u32 = 4;
pub static DROPPED_THREADS: AtomicU64 = AtomicU64::new(0);
/// Set by a thread that writes every buffer (the end, exec, a fatal signal): owners do not
/// start appending while it is set.
static STOPPING: AtomicBool = AtomicBool::new(false);
/// `membarrier(PRIVATE_EXPEDITED)` is registered: an owner's fast path needs no fence.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 8;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 16;

/// Registers this process for expedited membarriers (at start-up and in a fork child: the
/// registration is per address space).
pub unsafe fn register_membarrier() {
    let ok = libc::syscall(
        libc::SYS_membarrier,
        MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
        0,
    ) == 0;
    ASYMMETRIC.store(ok, Ordering::Release);
}

pub fn set_busy(b: bool) {
    TLS.with(|t| t.busy.set(b));
}

pub fn is_busy() -> bool {
    TLS.with(|t| t.busy.get())
}

/// Inside the real function of one of this thread's allocator calls (not the recorder's
/// own work): what the allocator does now is the program's.
#[inline(always)]
pub fn in_allocator_call() -> bool {
    TLS.with(|t| t.in_alloc.get() > 0 && !t.busy.get())
}

pub fn current_tid() -> u32 {
    TLS.with(|t| {
        let b = t.buf.get();
        if b.is_null() {
            u32::MAX
        } else {
            // SAFETY: a thread's buffer lives as long as the process.
            unsafe { (*b).tid }
        }
    })
}

unsafe fn data(b: *mut Buf) -> *mut u8 {
    (b as *mut u8).add(DATA_AT)
}

/// A recording call in progress on this thread: its buffer, marked busy.
pub struct Ctx {
    pub b: *mut Buf,
    /// This thread's TLS block (one `__tls_get_addr` per call, not two).
    tls: *const Tls,
    /// `REENTRANT` for a call made inside another allocator call of this thread (its event
    /// heads carry it), else 0.
    pub mark: u64,
    /// A recorded call of this thread is in progress around this one: its `in_call` mark
    /// stays when this one ends.
    inside_recorded: bool,
}

/// Starts recording a call, or `None` (not recording, nested, no buffer): forward only.
#[inline(always)]
pub unsafe fn enter() -> Option<Ctx> {
    let s = state::STATE.load(Ordering::Acquire);
    if s != state::ON {
        if s != state::UNINIT {
            return None;
        }
        state::init();
        if state::STATE.load(Ordering::Acquire) != state::ON {
            return None;
        }
    }
    TLS.with(|t| {
        if t.busy.get() {
            return None;
        }
        let mut b = t.buf.get();
        if b.is_null() {
            if t.exited.get() {
                LATE_CALLS.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            // Busy also while the key is set: glibc allocates a slot block for a key past
            // its first 32, from the recorder's own heap then.
            t.busy.set(true);
            b = new_thread_buf();
            if b.is_null() {
                t.busy.set(false);
                return None;
            }
            t.buf.set(b);
            libc::pthread_setspecific(KEY.load(Ordering::Acquire), b as *const c_void);
            t.internal.set(is_allocator_thread());
        }
        t.busy.set(true);
        // Before any order key is taken (the counter's `fetch_add`, or with TSC keys the
        // reader's `membarrier`, orders it for [`mark`]). A reentrant call may find it set by
        // the recorded call it is inside.
        let (mark, inside_recorded) = if t.in_alloc.get() > 0 {
            let inside = (*b).in_call.load(Ordering::Relaxed) == 1;
            (crate::wire::REENTRANT, inside)
        } else if t.internal.get() {
            (crate::wire::REENTRANT, false)
        } else {
            (0, false)
        };
        (*b).in_call.store(1, Ordering::Relaxed);
        Some(Ctx {
            b,
            tls: t,
            mark,
            inside_recorded,
        })
    })
}

impl Ctx {
    /// The call's stack id (when recording stacks), captured before the lock is taken.
    #[inline(always)]
    pub unsafe fn site(&self) -> Option<u64> {
        if STACKS.load(Ordering::Relaxed) {
            Some(crate::stack::capture(self))
        } else {
            None
        }
    }

    /// Appends one event of `words` (its site, if any, last).
    #[inline(always)]
    pub unsafe fn push(&self, words: &[u64]) {
        if begin(self.b) {
            self.push_locked(words);
            end(self.b);
        }
    }

    /// Inlined, with the event's words stored one by one: a call's few words were a
    /// `memmove` call each. A call's event (not a `STACK` one) has its stamp in `words[1]`:
    /// left out when it is the last event's (the coarse clock moves every few ms, so most
    /// events leave it out: a fifth to a third fewer bytes to write and convert).
    #[inline(always)]
    pub unsafe fn push_locked(&self, words: &[u64]) {
        let b = self.b;
        let len = (*b).len.load(Ordering::Relaxed);
        let len = if len + words.len() * 8 > DATA_CAP {
            flush_locked(b, false);
            0
        } else {
            len
        };
        // The data area and every event are whole words.
        let dst = data(b).add(len) as *mut u64;
        let head = words[0];
        let kind = head & 0x1f;
        let same = kind != E_STACK && words[1] == (*b).last_stamp.load(Ordering::Relaxed);
        let bytes = if same {
            dst.write(head | SAME_STAMP);
            for (i, &w) in words[2..].iter().enumerate() {
                dst.add(1 + i).write(w);
            }
            (words.len() - 1) * 8
        } else {
            for (i, &w) in words.iter().enumerate() {
                dst.add(i).write(w);
            }
            if kind != E_STACK {
                (*b).last_stamp.store(words[1], Ordering::Relaxed);
            }
            words.len() * 8
        };
        (*b).len.store(len + bytes, Ordering::Release);
        // The progress mark's view of this buffer (`STACK`, `MAP`, `UNMAP` and `FLAGS` events
        // have no number).
        if kind != E_STACK && kind != E_MAP && kind != E_UNMAP && kind != E_FLAGS {
            let seq = head >> 8;
            if (*b).first_seq.load(Ordering::Relaxed) == u64::MAX {
                (*b).first_seq.store(seq, Ordering::Release);
            }
            let last = if kind == E_REALLOC { words[5] } else { seq };
            (*b).floor.store(last + 1, Ordering::Relaxed);
        }
    }
}

impl Ctx {
    /// Runs the real allocator function `f` with calls made inside it recorded as reentrant
    /// (jemalloc creating its background thread: glibc's `pthread_create` allocates).
    #[inline(always)]
    pub unsafe fn real<R>(&self, f: impl FnOnce() -> R) -> R {
        let t = &*self.tls;
        t.busy.set(false);
        t.in_alloc.set(t.in_alloc.get() + 1);
        let r = f();
        t.in_alloc.set(t.in_alloc.get() - 1);
        t.busy.set(true);
        r
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the thread's own buffer and TLS block, alive while the thread runs.
        unsafe {
            // The recorded call around a reentrant one is still in progress, its event due.
            if !self.inside_recorded {
                (*self.b).in_call.store(0, Ordering::Release);
            }
            (*self.tls).busy.set(false)
        }
    }
}

/// Runs `f` (an interposed jemalloc entry point's real function) with the allocations made
/// inside it recorded as reentrant.
pub fn in_allocator<R>(f: impl FnOnce() -> R) -> R {
    TLS.with(|t| t.in_alloc.set(t.in_alloc.get() + 1));
    let r = f();
    TLS.with(|t| t.in_alloc.set(t.in_alloc.get() - 1));
    r
}

/// The owner starts appending to (or writing) its buffer; false: recording has ended, the
/// event is dropped.
///
/// No read-modify-write on the fast path (a locked instruction per call was a third of the
/// recorder's own time): the owner marks itself active with a plain store and then reads
/// `STOPPING`; a thread that writes every buffer sets `STOPPING`, then issues
/// `membarrier`, which runs a full barrier on every thread of the process, and only then
/// reads the owners' marks. So either the owner sees `STOPPING` and backs off, or the
/// writer sees the mark and waits (the asymmetric form of Dekker's exclusion). Without
/// `membarrier` the owner uses a full fence instead.
#[inline(always)]
pub unsafe fn begin(b: *mut Buf) -> bool {
    loop {
        (*b).active.store(1, Ordering::Relaxed);
        if ASYMMETRIC.load(Ordering::Relaxed) {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if !STOPPING.load(Ordering::Relaxed) {
            return true;
        }
        (*b).active.store(0, Ordering::Release);
        if !wait_while_stopping() {
            return false;
        }
    }
}

#[inline(always)]
pub unsafe fn end(b: *mut Buf) {
    (*b).active.store(0, Ordering::Release);
}

/// Another thread writes every buffer: wait until it is done; false if recording ended.
#[cold]
fn wait_while_stopping() -> bool {
    while STOPPING.load(Ordering::Acquire) && state::STATE.load(Ordering::Acquire) == state::ON {
        std::hint::spin_loop();
    }
    state::STATE.load(Ordering::Acquire) == state::ON
}

/// Stops the owners from appending (see [`begin`]) before every buffer is written.
unsafe fn stop_owners() {
    STOPPING.store(true, Ordering::SeqCst);
    if ASYMMETRIC.load(Ordering::Acquire)
        && libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0
    {
        // Not registered after all (cannot happen once registered): fall back to fences.
        ASYMMETRIC.store(false, Ordering::SeqCst);
    }
    fence(Ordering::SeqCst);
}

/// Lets the owners append again (an exec that failed: recording goes on).
pub fn resume_owners() {
    STOPPING.store(false, Ordering::SeqCst);
}

/// A buffer for the calling thread: one an exited thread left, else a new one.
/// Whether this thread is jemalloc's background thread (`background_thread_entry` names it
/// `jemalloc_bg_thd` before its first call): one `prctl` per thread, at its first call.
unsafe fn is_allocator_thread() -> bool {
    let mut name = [0u8; 16];
    libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) == 0 && name.starts_with(b"jemalloc_bg_thd")
}

unsafe fn new_thread_buf() -> *mut Buf {
    let tid = NEXT_TID.fetch_add(1, Ordering::Relaxed);
    if tid > 0 {
        // Before this thread's first key (`--order auto`).
        order::second_thread();
    }
    let n = NSLOTS.load(Ordering::Acquire).min(MAX_SLOTS);
    for slot in &SLOTS[..n] {
        let b = slot.load(Ordering::Acquire);
        if !b.is_null()
            && (*b)
                .free
                .compare_exchange(1, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            (*b).tid = tid;
            (*b).exit_rounds = 0;
            (*b).len.store(0, Ordering::Release);
            (*b).first_seq.store(u64::MAX, Ordering::Release);
            (*b).floor.store(0, Ordering::Release);
            (*b).last_stamp.store(u64::MAX, Ordering::Relaxed);
            return b;
        }
    }
    let i = NSLOTS.fetch_add(1, Ordering::AcqRel);
    if i >= MAX_SLOTS {
        DROPPED_THREADS.fetch_add(1, Ordering::Relaxed);
        return null_mut();
    }
    let mem = libc::mmap(
        null_mut(),
        BUF_BYTES,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
        -1,
        0,
    );
    if mem == libc::MAP_FAILED {
        DROPPED_THREADS.fetch_add(1, Ordering::Relaxed);
        return null_mut();
    }
    let b = mem as *mut Buf;
    b.write(Buf {
        active: AtomicU32::new(0),
        free: AtomicU32::new(0),
        slot: i as u32,
        tid,
        len: AtomicUsize::new(0),
        exit_rounds: 0,
        stacks: if STACKS.load(Ordering::Acquire) {
            crate::stack::new_table()
        } else {
            null_mut()
        },
        in_call: AtomicU32::new(0),
        first_seq: AtomicU64::new(u64::MAX),
        last_stamp: AtomicU64::new(u64::MAX),
        floor: AtomicU64::new(0),
        last_key: 0,
    });
    SLOTS[i].store(b, Ordering::Release);
    b
}

/// Writes the buffer's events as one chunk and empties it (owner active, or owners stopped).
/// The owner's own flushes carry a progress mark ([`mark`]); `final_flush` (every buffer
/// written at the end, exec or a signal, owners stopped) carries none.
#[cold]
#[inline(never)]
unsafe fn flush_locked(b: *mut Buf, final_flush: bool) {
    let len = (*b).len.load(Ordering::Acquire);
    if len == 0 {
        return;
    }
    let progress = if final_flush {
        0
    } else {
        state::maps_if_changed();
        mark(b)
    };
    TLS.with(|t| t.flushing.set(true));
    let hdr = data(b).sub(HDR);
    let words: [u32; 4] = [MAGIC, K_EVENTS, (*b).slot, (*b).tid];
    std::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, hdr, 16);
    let tail = [len as u64, state::tsc(), state::now_ns(), progress];
    std::ptr::copy_nonoverlapping(tail.as_ptr() as *const u8, hdr.add(16), 32);
    write_all(hdr, HDR + len);
    (*b).len.store(0, Ordering::Release);
    // A chunk's first event has its stamp.
    (*b).last_stamp.store(u64::MAX, Ordering::Relaxed);
    // After the write: a thread that sees the buffer empty finds its events in the file.
    (*b).first_seq.store(u64::MAX, Ordering::Release);
    TLS.with(|t| t.flushing.set(false));
}

/// Writes this thread's buffered events now (with a progress mark): a thread that goes on to
/// wait for a long time (a `join` after starting threads) would otherwise hold the mark back
/// until it exits.
pub unsafe fn flush_own() {
    let b = TLS.with(|t| {
        if t.busy.get() {
            null_mut()
        } else {
            t.buf.get()
        }
    });
    if b.is_null() || state::STATE.load(Ordering::Acquire) != state::ON {
        return;
    }
    TLS.with(|t| t.busy.set(true));
    if begin(b) {
        flush_locked(b, false);
        end(b);
    }
    TLS.with(|t| t.busy.set(false));
}
