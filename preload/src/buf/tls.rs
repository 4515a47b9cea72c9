//! The thread's recording state, in static TLS on x86-64.
//!
//! `thread_local!` in a shared library uses the general-dynamic model: a call to
//! `__tls_get_addr` on every interposed call (11 of the recorder's ~140 instructions an event,
//! under callgrind). The recorder is loaded with `LD_PRELOAD`, at start-up, where the
//! initial-exec model is valid (the loader sizes the static TLS block for it; a later
//! `dlopen` works while glibc's spare static TLS lasts, else fails with an error), so on x86-64 the block
//! is declared in assembly and reached as `%fs:0 + offset` (stable Rust has no attribute for
//! the model). Elsewhere, `thread_local!`.

use super::Buf;
use std::cell::Cell;

/// What each thread keeps. All-zero is the initial state (the assembly block is `.tbss`).
#[repr(C)]
pub struct Tls {
    pub buf: Cell<*mut Buf>,
    /// Inside the recorder's own work (a hook outside its real function, init): allocations
    /// come unrecorded from its own heap.
    pub busy: Cell<bool>,
    /// The thread's exit is written: its later calls are not recorded.
    pub exited: Cell<bool>,
    /// Allocator calls of this thread in progress (a recorded call's real function, an
    /// interposed `mallctl`): a call made meanwhile is reentrant.
    pub in_alloc: Cell<u8>,
    /// Inside `flush_locked`, writing a chunk: a fatal signal's handler on this thread must
    /// not write the same buffer again (its events would be in the file twice).
    pub flushing: Cell<bool>,
    /// jemalloc's own thread (its background thread, by name): every call it makes is
    /// reentrant (jemalloc runs it on internal state, `tsd_internal_fetch`).
    pub internal: Cell<bool>,
}

/// The handle: `TLS.with(|t| ...)`, as with `thread_local!`.
pub struct Key;
pub static TLS: Key = Key;

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".section .tbss,\"awT\",@nobits",
    ".p2align 3",
    // Global for the other codegen units' references, hidden: not exported from the library.
    ".globl fragsim_preload_tls",
    ".hidden fragsim_preload_tls",
    ".type fragsim_preload_tls, @object",
    ".size fragsim_preload_tls, 16",
    "fragsim_preload_tls:",
    ".skip 16",
    ".text",
);

// The assembly block's size above.
const _: () = assert!(std::mem::size_of::<Tls>() == 16);

impl Key {
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn with<R>(&'static self, f: impl FnOnce(&Tls) -> R) -> R {
        let p: *const Tls;
        // SAFETY: `%fs:0` is the thread pointer (x86-64 TLS ABI); the GOT entry holds the
        // block's offset from it (R_X86_64_TPOFF64, resolved at load). The block is the
        // thread's own, zero-initialised, valid as long as the thread runs.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                "add {p}, qword ptr [rip + fragsim_preload_tls@GOTTPOFF]",
                p = out(reg) p,
                options(pure, readonly, nostack, preserves_flags),
            );
            f(&*p)
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub fn with<R>(&'static self, f: impl FnOnce(&Tls) -> R) -> R {
        thread_local! {
            static BLOCK: Tls = const {
                Tls {
                    buf: Cell::new(std::ptr::null_mut()),
                    busy: Cell::new(false),
                    exited: Cell::new(false),
                    in_alloc: Cell::new(0),
                    flushing: Cell::new(false),
                    internal: Cell::new(false),
                }
            };
        }
        BLOCK.with(f)
    }
}
