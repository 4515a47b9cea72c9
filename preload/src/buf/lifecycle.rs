//! The buffer table's whole-process moments: the final flush, a thread's exit (the key
//! destructor) and a fork child forgetting the parent's other threads.

use super::{
    begin, end, flush_locked, register_membarrier, resume_owners, stop_owners, Buf, Ctx, Tls,
    DESTRUCTOR_ROUNDS, MAX_SLOTS, NSLOTS, SLOTS, TLS,
};
use crate::state::{self, KEY};
use libc::c_void;
use std::ptr::null_mut;
use std::sync::atomic::Ordering;

/// Writes every thread's buffer. A thread caught inside a hook by a signal still has only
/// complete events in its buffer, so its own buffer is written without its lock; other
/// threads get a bounded wait.
pub unsafe fn flush_all() {
    // A fatal signal's handler that interrupted this thread's own `flush_locked`: that chunk
    // is in the file already (or, if the signal came before its write, lost: a few
    // instructions' window); writing the buffer again would put its events in twice, out
    // of order (seen under load: "event key 157240 after key 209657").
    let own_interrupted = TLS.with(|t| t.flushing.get());
    stop_owners();
    // Every stack in the buffers was taken before: its objects are in these maps.
    state::write_maps();
    let own = TLS.with(|t| t.buf.get());
    let n = NSLOTS.load(Ordering::Acquire).min(MAX_SLOTS);
    for slot in &SLOTS[..n] {
        let b = slot.load(Ordering::Acquire);
        if b.is_null() || (*b).free.load(Ordering::Acquire) == 1 {
            continue;
        }
        if b == own {
            if !own_interrupted {
                flush_locked(b, true);
            }
            continue;
        }
        let mut spins = 0u32;
        while (*b).active.load(Ordering::Acquire) != 0 && spins < 1_000_000 {
            spins += 1;
            std::hint::spin_loop();
        }
        flush_locked(b, true);
    }
}

/// pthread key destructor: re-armed for the first rounds so that calls from other keys'
/// destructors are still recorded, then writes the thread's exit and frees the buffer.
pub unsafe extern "C" fn thread_exit(p: *mut c_void) {
    let b = p as *mut Buf;
    if state::STATE.load(Ordering::Acquire) != state::ON {
        return;
    }
    (*b).exit_rounds += 1;
    if (*b).exit_rounds < DESTRUCTOR_ROUNDS {
        libc::pthread_setspecific(KEY.load(Ordering::Acquire), p);
        return;
    }
    TLS.with(|t| t.busy.set(true));
    let ctx = Ctx {
        b,
        tls: TLS.with(|t| t as *const Tls),
        mark: 0,
        inside_recorded: false,
    };
    (*b).in_call.store(1, Ordering::Relaxed);
    if begin(b) {
        let (seq, stamp) = ctx.seq_stamped();
        ctx.push_locked(&[crate::wire::E_EXIT | seq << 8, stamp]);
        flush_locked(b, false);
        end(b);
    }
    drop(ctx);
    TLS.with(|t| {
        t.buf.set(null_mut());
        t.exited.set(true);
    });
    (*b).free.store(1, Ordering::Release);
}

/// In a fork child: the other threads do not exist here, their buffers become free; this
/// thread's buffer held the parent's events (the parent writes them).
pub unsafe fn forget_other_threads() {
    resume_owners();
    register_membarrier();
    let own = TLS.with(|t| t.buf.get());
    let n = NSLOTS.load(Ordering::Acquire).min(MAX_SLOTS);
    for slot in &SLOTS[..n] {
        let b = slot.load(Ordering::Acquire);
        if b.is_null() {
            continue;
        }
        (*b).len.store(0, Ordering::Release);
        (*b).active.store(0, Ordering::Release);
        (*b).first_seq.store(u64::MAX, Ordering::Release);
        (*b).last_stamp.store(u64::MAX, Ordering::Relaxed);
        if !(*b).stacks.is_null() {
            crate::stack::clear((*b).stacks);
        }
        if b != own {
            (*b).free.store(1, Ordering::Release);
        }
    }
}
