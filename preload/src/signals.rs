//! The fatal signals: a handler of the recorder's writes what was recorded before the process
//! dies of one, where the program leaves the signal at its default action, and the program
//! never sees it there. `sigaction` and `signal` are interposed so that the program reads
//! the default action where the recorder's handler stands in for it, and sets it (the
//! handler stays), or sets its own (the handler goes). Before, the handler showed: CPython
//! installs its `KeyboardInterrupt` handler only where SIGINT is at its default, so a
//! recorded Python server stopped with Ctrl-C died of the signal instead of shutting down.

use crate::buf::{self, chunk};
use crate::hooks::ready;
use crate::real::{self, get};
use crate::state::{as_bytes, in_recording_process, K_SIGNAL, OFF, ON, STATE};
use libc::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

const FATAL: [c_int; 10] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGTRAP,
    libc::SIGSYS,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
];

/// Per fatal signal: the recorder's handler is installed, in place of the default action.
static OURS: [AtomicBool; 10] = [const { AtomicBool::new(false) }; 10];
/// Held while a `sigaction` call reads and changes `OURS` with the kernel's action.
static LOCK: AtomicBool = AtomicBool::new(false);

type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;

/// libc's `sigaction` (the recorder's own calls must not come back through the wrapper).
unsafe fn real_sigaction() -> Option<SigactionFn> {
    get(&real::SIGACTION).map(|f| std::mem::transmute::<usize, SigactionFn>(f))
}

fn fatal_index(sig: c_int) -> Option<usize> {
    FATAL.iter().position(|&s| s == sig)
}

/// The recorder's action: its handler, the other fatal signals held while it runs (one
/// handled inside it would re-raise itself with the default action and kill the process
/// mid-flush).
unsafe fn our_action() -> libc::sigaction {
    let mut act: libc::sigaction = std::mem::zeroed();
    act.sa_sigaction = on_fatal_signal as extern "C" fn(c_int) as usize;
    act.sa_flags = libc::SA_ONSTACK;
    libc::sigemptyset(&mut act.sa_mask);
    for &other in &FATAL {
        libc::sigaddset(&mut act.sa_mask, other);
    }
    act
}

/// At start: the recorder's handler where the program's signal is at its default action.
pub unsafe fn install() {
    let Some(real) = real_sigaction() else {
        return;
    };
    for (i, &sig) in FATAL.iter().enumerate() {
        let mut old: libc::sigaction = std::mem::zeroed();
        if real(sig, std::ptr::null(), &mut old) != 0 || old.sa_sigaction != libc::SIG_DFL {
            continue;
        }
        if real(sig, &our_action(), std::ptr::null_mut()) == 0 {
            OURS[i].store(true, Ordering::Release);
        }
    }
}

/// Writes what it can (async-signal-safe calls only), marks the image as killed and dies of
/// the same signal (re-raised with the default action: it is blocked in here, so it is
/// delivered, and kills, once the handler returns).
extern "C" fn on_fatal_signal(sig: c_int) {
    // SAFETY: write, open, read, mmap and sigaction are async-signal-safe.
    unsafe {
        if in_recording_process()
            && STATE
                .compare_exchange(ON, OFF, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            buf::flush_all();
            chunk(K_SIGNAL, 0, 0, as_bytes(&[sig as u64]));
        }
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_DFL;
        if let Some(real) = real_sigaction() {
            real(sig, &act, std::ptr::null_mut());
        }
        if let Some(i) = fatal_index(sig) {
            OURS[i].store(false, Ordering::Release);
        }
        libc::raise(sig);
    }
}

/// The default action as the kernel reports it (no handler, no flags, no mask).
unsafe fn default_action() -> libc::sigaction {
    let mut act: libc::sigaction = std::mem::zeroed();
    act.sa_sigaction = libc::SIG_DFL;
    libc::sigemptyset(&mut act.sa_mask);
    act
}

#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    if !ready(&real::SIGACTION) {
        *libc::__errno_location() = libc::ENOSYS;
        return -1;
    }
    let Some(real) = real_sigaction() else {
        *libc::__errno_location() = libc::ENOSYS;
        return -1;
    };
    let Some(i) = fatal_index(sig) else {
        return real(sig, act, old);
    };
    // Every signal held on this thread while the lock is: a handler of the program's that
    // called `sigaction` inside would wait for it forever.
    let mut mask: libc::sigset_t = std::mem::zeroed();
    let mut all: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut mask);
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let wants_default = !act.is_null() && (*act).sa_sigaction == libc::SIG_DFL;
    let r = if OURS[i].load(Ordering::Acquire) {
        // The program sees the default action it left there.
        if !old.is_null() {
            *old = default_action();
        }
        if act.is_null() || wants_default {
            0
        } else {
            let r = real(sig, act, std::ptr::null_mut());
            if r == 0 {
                OURS[i].store(false, Ordering::Release);
            }
            r
        }
    } else if wants_default && STATE.load(Ordering::Acquire) == ON && in_recording_process() {
        // Back to the default action (CPython does so before dying of SIGINT): the
        // recorder's handler stands in for it again.
        let r = real(sig, &our_action(), old);
        if r == 0 {
            OURS[i].store(true, Ordering::Release);
        }
        r
    } else {
        real(sig, act, old)
    };
    LOCK.store(false, Ordering::Release);
    libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
    r
}

/// In a fork child: a lock another thread of the parent held is free (that thread is gone).
pub fn after_fork_child() {
    LOCK.store(false, Ordering::Release);
}

/// glibc's `signal` (BSD semantics: the signal held while its handler runs, interrupted calls
/// restarted), through the `sigaction` above.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    if handler == libc::SIG_ERR {
        *libc::__errno_location() = libc::EINVAL;
        return libc::SIG_ERR;
    }
    let mut act: libc::sigaction = std::mem::zeroed();
    act.sa_sigaction = handler;
    libc::sigemptyset(&mut act.sa_mask);
    libc::sigaddset(&mut act.sa_mask, sig);
    act.sa_flags = libc::SA_RESTART;
    let mut old: libc::sigaction = std::mem::zeroed();
    if sigaction(sig, &act, &mut old) < 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}
