//! The events' order keys and the progress mark.
//!
//! With `--order seq` an event's key is a global sequence number, one `fetch_add`
//! on a counter every thread shares: exact by construction, but on a multi-threaded program
//! the counter's cache line moves between cores on nearly every call (most of the
//! recorder's cost there). With `tscorder` in the flags (`--order tsc`, x86-64 with
//! `rdtscp`) the key is the TSC since the image started, read with `rdtscp`, raised where
//! needed to one above the thread's previous key: each thread's keys strictly increase and the fast
//! path writes no shared line. Keys of different threads may tie (the converter orders ties
//! by thread). The order across threads is then the TSC's: right as far as the CPUs' TSCs
//! are synchronised (`fragsim record` requires `constant_tsc`, `nonstop_tsc` and the kernel's
//! `tsc` clocksource, which it keeps only if the TSCs passed its synchronisation check).
//! With `autoorder` (`--order auto`, `fragsim record`'s default where the TSC can order) the
//! keys are sequence numbers while one thread records (an uncontended counter is cheaper
//! than `rdtscp`) and TSC keys from the second thread's first call on ([`second_thread`]).
//!
//! Why `rdtscp`: it reads the TSC only once every earlier instruction has executed and
//! every earlier load is globally visible (a plain `rdtsc` may run ahead of them). So an
//! allocation's key is read after the real call has seen the block free; a free's key is
//! read before the real free releases the block (its stores become visible only after the
//! older `rdtscp` has retired): a block freed on one CPU and handed out on another takes
//! keys in that order. (`lfence; rdtsc` would do the same, at 17 ns against 13 here.)

use super::{Buf, Ctx, ASYMMETRIC, MAX_SLOTS, MEMBARRIER_CMD_PRIVATE_EXPEDITED, NSLOTS, SLOTS};
use crate::state::SEQ;
use crate::wire::AUTO_TSC_KEYS;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How an image's events take their keys (the flags `tscorder`, `autoorder`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    Seq,
    Tsc,
    /// Sequence numbers while one thread records, TSC keys above [`AUTO_TSC_KEYS`] from the
    /// second thread's first call on ([`second_thread`]).
    Auto,
}

/// Whether keys come from the TSC now, what is added to them, whether the second thread
/// switches to them, and the TSC at start-up (keys are ticks since then, so they fit the 56
/// bits of `seq << 8` for about 200 days at 4 GHz, 100 above `AUTO_TSC_KEYS`). Set at init
/// (and `tsc` and `offset` once more by the switch), read on every call: on a line of their
/// own.
#[repr(C, align(64))]
struct Order {
    tsc: AtomicBool,
    auto: AtomicBool,
    offset: AtomicU64,
    base: AtomicU64,
}

static ORDER: Order = Order {
    tsc: AtomicBool::new(false),
    auto: AtomicBool::new(false),
    offset: AtomicU64::new(0),
    base: AtomicU64::new(0),
};

/// Chooses the keys (at init, before any event; a fork child inherits the choice, the base
/// and a switch made before the fork); false if TSC keys were asked for (now or for the
/// second thread) but the CPU has no `rdtscp` (sequence numbers then, throughout).
pub fn set_order(order: KeyOrder) -> bool {
    let wants_tsc = order != KeyOrder::Seq;
    let on_here = wants_tsc && has_rdtscp();
    if on_here {
        ORDER.base.store(fenced_tsc(), Ordering::Relaxed);
    }
    ORDER
        .auto
        .store(on_here && order == KeyOrder::Auto, Ordering::Relaxed);
    ORDER
        .tsc
        .store(on_here && order == KeyOrder::Tsc, Ordering::Release);
    on_here == wants_tsc
}

/// A second thread is about to take its first key: with `--order auto`, every key from now
/// on is a TSC key above [`AUTO_TSC_KEYS`], so above every sequence number.
///
/// Why the order stays one the allocator could have seen: a call takes its key reading
/// `tsc` (acquire) when it takes it, after the real call for an allocation, before it for a
/// free. A call that follows this store causally (its thread learnt of a block, a lock or a
/// pointer through a chain of releases and acquires starting after it; x86-64's stores are
/// seen in order by every CPU) reads `true` and takes a TSC key, ordered after the keys of
/// the calls it follows as with `--order tsc`. A call that reads `false` does not follow the
/// store, and its sequence number is below every TSC key: for it to precede a TSC call in the
/// order is right whenever the two are causally related, since the TSC call cannot precede
/// it. The progress mark ([`mark`]) covers such a late sequence number through `in_call`
/// and `floor`, as for any call in progress: its thread stored `in_call` before reading
/// `tsc`, so before any barrier the mark's reader issues after reading `true`.
pub fn second_thread() {
    if ORDER.auto.load(Ordering::Relaxed) && !ORDER.tsc.load(Ordering::Relaxed) {
        ORDER.offset.store(AUTO_TSC_KEYS, Ordering::Relaxed);
        ORDER.tsc.store(true, Ordering::Release);
    }
}

fn has_rdtscp() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // cpuid is always there on x86-64; leaf 0x8000_0001 exists when the highest extended
        // leaf (leaf 0x8000_0000's eax) is at least that.
        use std::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).edx & (1 << 27) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The TSC for an event's key: `rdtscp` (see the module's notes). An `asm!` block without
/// `nomem`: the compiler keeps memory accesses on their side of it too (`enter`'s `in_call`
/// store stays before it).
#[inline(always)]
fn key_tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let (lo, hi): (u32, u32);
        // SAFETY: only called once `has_rdtscp` said the CPU has it.
        unsafe {
            std::arch::asm!(
                "rdtscp",
                out("eax") lo,
                out("edx") hi,
                out("ecx") _,
                options(nostack, preserves_flags),
            );
        }
        (hi as u64) << 32 | lo as u64
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// The TSC read after every earlier instruction has completed and before any later one
/// starts (`lfence; rdtsc; lfence`): for the base and the mark's bound.
#[inline(always)]
fn fenced_tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let (lo, hi): (u32, u32);
        // SAFETY: lfence and rdtsc have no preconditions on x86-64.
        unsafe {
            std::arch::asm!(
                "lfence",
                "rdtsc",
                "lfence",
                out("eax") lo,
                out("edx") hi,
                options(nostack, preserves_flags),
            );
        }
        (hi as u64) << 32 | lo as u64
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// The key of a TSC reading: ticks since the base (0 if a CPU's TSC is behind the base: the
/// thread's clamp then keeps its keys increasing), plus the offset.
#[inline(always)]
fn since_base(tsc: u64) -> u64 {
    tsc.saturating_sub(ORDER.base.load(Ordering::Relaxed)) + ORDER.offset.load(Ordering::Relaxed)
}

/// The key the next event would take now (a fork child's header: `fork_seq`).
pub fn now_key() -> u64 {
    if ORDER.tsc.load(Ordering::Acquire) {
        since_base(fenced_tsc())
    } else {
        SEQ.0.load(Ordering::Relaxed)
    }
}

impl Ctx {
    /// The event's order key and its time stamp ([`crate::state::stamp`]). With TSC keys and
    /// TSC stamps (`--order tsc --precise-times`) one `rdtscp` gives both (a second read
    /// cost 6 ns a call here: `threads_map 100000` under the recorder, 283.8 -> 263.7 ms CPU).
    #[inline(always)]
    pub fn seq_stamped(&self) -> (u64, u64) {
        // Acquire: see [`second_thread`] (a plain load on x86-64, as Relaxed).
        if ORDER.tsc.load(Ordering::Acquire) {
            let t = key_tsc();
            // SAFETY: the thread's own buffer, alive while it runs; only its owner touches
            // `last_key`.
            let k = unsafe {
                let b = self.b;
                let k = since_base(t).max((*b).last_key + 1);
                (*b).last_key = k;
                k
            };
            let stamp = if crate::state::precise() {
                t
            } else {
                crate::state::coarse_ns()
            };
            (k, stamp)
        } else {
            // Release: a thread that reads the counter past this number also sees this
            // thread's `in_call` mark ([`mark`]); the same `lock xadd` on x86-64.
            let k = SEQ.0.fetch_add(1, Ordering::Release);
            (k, crate::state::stamp())
        }
    }
}

/// The progress mark of a chunk `own` is about to write: every event with a lower key is in
/// the file once this chunk is (in it or before it), so `fragsim record` can convert that
/// far while the program runs (0: no mark).
///
/// The bound is read first, then the threads' state. With sequence numbers the bound is the
/// counter: a thread that took a number below it marked `in_call` before (its `fetch_add` is
/// a release), so it is seen either in its call (its `floor` bounds the numbers it holds),
/// or with the event in its buffer (`first_seq`), or with the buffer written (`first_seq` is
/// reset after the write). An exited thread's events are all written before its buffer is
/// marked free. This thread's own buffer is this chunk; while it is in a call, its `floor`
/// bounds the number it holds.
///
/// With TSC keys nothing a thread does when it takes a key is seen by others, so the bound
/// comes from [`tsc_bound`]: it reaches the same conclusion, that a thread whose key is below
/// the bound has its `in_call` mark (and what it wrote before) visible here, by a
/// `membarrier` instead of the counter's release.
pub(super) unsafe fn mark(own: *mut Buf) -> u64 {
    let mut m = if ORDER.tsc.load(Ordering::Acquire) {
        match tsc_bound() {
            Some(t) => t,
            None => return 0,
        }
    } else {
        SEQ.0.load(Ordering::Acquire)
    };
    if (*own).in_call.load(Ordering::Relaxed) != 0 {
        m = m.min((*own).floor.load(Ordering::Relaxed));
    }
    let n = NSLOTS.load(Ordering::Acquire).min(MAX_SLOTS);
    for slot in &SLOTS[..n] {
        let b = slot.load(Ordering::Acquire);
        if b.is_null() || b == own || (*b).free.load(Ordering::Acquire) == 1 {
            continue;
        }
        if (*b).in_call.load(Ordering::Acquire) != 0 {
            m = m.min((*b).floor.load(Ordering::Acquire));
        }
        m = m.min((*b).first_seq.load(Ordering::Acquire));
    }
    m
}

/// The mark's bound with TSC keys: the TSC `t` read *before* a `membarrier`, which runs a
/// full barrier on every other thread of the process at a point P of its execution within
/// the call: a CPU running one of them when the kernel looks (after `t` was read: `rdtsc;
/// lfence` here, then the call) gets an IPI, and P is where the interrupt is taken; a thread
/// not running then is switched in later, after the scheduler has set it as its CPU's task
/// and issued the full barrier membarrier relies on, and P is where it resumes. Take any
/// other thread and an event of it with key `k < t`. Its key's read (`rdtscp`, after its
/// `in_call` store in program order) cannot be after P: `rdtscp` waits until every earlier
/// instruction has executed (the handler and its `iret`, or the switch and its barrier), so
/// it would run after the kernel looked, hence after `t` was read, and synchronised TSCs
/// would give it a raw value of at least `t`, so `k >= t`. So the read, and the `in_call`
/// store before it, are before P, and the barrier makes them (and every later store of that
/// thread before P) visible to this thread's reads after the call returns: the thread is seen
/// in its call (its `floor` bounds its keys), or with the event in its buffer, or with the
/// buffer written, as with sequence numbers. A thread that did not exist when the call began
/// reads its keys after `t`. A new thread's slot and a reused buffer's `free` are written
/// before its first key, so they are seen too. Without membarrier (not registered, or it
/// fails) there is no mark: the converter then converts the image once it has ended.
unsafe fn tsc_bound() -> Option<u64> {
    if !ASYMMETRIC.load(Ordering::Acquire) {
        return None;
    }
    let t = since_base(fenced_tsc());
    if libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0 {
        return None;
    }
    Some(t)
}
