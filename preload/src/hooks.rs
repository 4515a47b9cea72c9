//! The interposed functions. libstdc++'s `operator new`/`delete` (plain, nothrow, sized,
//! aligned; checked in libstdc++.so.6 of GCC 12) all call `malloc`, `aligned_alloc` and `free`
//! through the PLT, so they are recorded here without being interposed themselves: aligned
//! `new` shows as `aligned_alloc(align, size rounded up to align)`, what the allocator sees.

use crate::buf::{enter, in_allocator, is_busy, Ctx};
use crate::real::{self, get};
use crate::{own, state};
use libc::{c_char, c_int, c_void, size_t};
use std::ptr::null_mut;

use crate::wire::{
    E_ALIGNED as ALIGNED, E_ALLOC as ALLOC, E_FLAGS, E_FREE as FREE, E_MAP, E_REALLOC as REALLOC,
    E_UNMAP, HAS_SITE, MALLOCX_KEPT,
};

macro_rules! call_real {
    ($slot:ident as fn($($t:ty),* $(,)?) -> $r:ty, $($a:expr),*) => {{
        let f: unsafe extern "C" fn($($t),*) -> $r = std::mem::transmute(get(&real::$slot).unwrap_unchecked());
        f($($a),*)
    }};
}

/// The real function is not known yet: this call comes from `dlsym` while it is looked up
/// (or from before initialisation on this thread).
#[inline(always)]
pub(crate) fn ready(slot: &std::sync::atomic::AtomicUsize) -> bool {
    if get(slot).is_some() {
        return true;
    }
    match state::STATE.load(std::sync::atomic::Ordering::Acquire) {
        // SAFETY: init runs once; nested calls from it see INITIALIZING.
        state::UNINIT => unsafe { state::init() },
        // Another thread is initialising (this one would be marked busy): wait for it.
        state::INITIALIZING if !crate::buf::is_busy() => {
            while state::STATE.load(std::sync::atomic::Ordering::Acquire) == state::INITIALIZING {
                std::hint::spin_loop();
            }
        }
        _ => {}
    }
    get(slot).is_some()
}

/// An allocation that is not recorded: made by the recorder's own work on this thread (the
/// thread is busy: loading libunwind, unwinding), from the recorder's own heap, so the
/// program's heap never holds a block its trace lacks; else (not recording) the real one.
#[cold]
unsafe fn unrecorded(
    size: usize,
    align: usize,
    zero: bool,
    real: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    if is_busy() {
        let p = own::alloc(size, align, zero);
        if !p.is_null() {
            return p;
        }
    }
    real()
}

/// An allocation: `ALLOC` (size, addr) for the default alignment, else `ALIGNED` (size,
/// align, addr); the site last.
unsafe fn record_alloc(ctx: &Ctx, size: usize, align: usize, p: *mut c_void) {
    let site = ctx.site();
    let (seq, stamp) = ctx.seq_stamped();
    let mut w = [0u64; 6];
    let mut n = if align == 0 {
        w[..4].copy_from_slice(&[ALLOC | ctx.mark | seq << 8, stamp, size as u64, p as u64]);
        4
    } else {
        w[..5].copy_from_slice(&[
            ALIGNED | ctx.mark | seq << 8,
            stamp,
            size as u64,
            align as u64,
            p as u64,
        ]);
        5
    };
    if let Some(s) = site {
        w[0] |= HAS_SITE;
        w[n] = s;
        n += 1;
    }
    ctx.push(&w[..n]);
}

#[no_mangle]
pub unsafe extern "C" fn malloc(size: size_t) -> *mut c_void {
    if !ready(&real::MALLOC) {
        return real::boot_alloc(size, 16);
    }
    let Some(ctx) = enter() else {
        return unrecorded(size, 16, false, || {
            call_real!(MALLOC as fn(size_t) -> *mut c_void, size)
        });
    };
    let p = ctx.real(|| call_real!(MALLOC as fn(size_t) -> *mut c_void, size));
    if !p.is_null() {
        record_alloc(&ctx, size, 0, p);
    }
    p
}

#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, size: size_t) -> *mut c_void {
    if !ready(&real::CALLOC) {
        return match n.checked_mul(size) {
            Some(total) => real::boot_alloc(total, 16),
            None => null_mut(),
        };
    }
    let Some(ctx) = enter() else {
        let real = || call_real!(CALLOC as fn(size_t, size_t) -> *mut c_void, n, size);
        return match n.checked_mul(size) {
            Some(total) => unrecorded(total, 16, true, real),
            None => real(),
        };
    };
    let p = ctx.real(|| call_real!(CALLOC as fn(size_t, size_t) -> *mut c_void, n, size));
    if !p.is_null() {
        record_alloc(&ctx, n.wrapping_mul(size), 0, p);
    }
    p
}

#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // A bootstrap block is never freed; without the real free (still being looked up) the
    // block is left alone too.
    if p.is_null() || real::is_boot(p) || !ready(&real::FREE) {
        return;
    }
    if own::contains(p) {
        return own::free(p);
    }
    let Some(ctx) = enter() else {
        return call_real!(FREE as fn(*mut c_void) -> (), p);
    };
    // Before the real free: no other thread can be handed `p` earlier in the order.
    let (seq, stamp) = ctx.seq_stamped();
    ctx.push(&[FREE | ctx.mark | seq << 8, stamp, p as u64]);
    ctx.real(|| call_real!(FREE as fn(*mut c_void) -> (), p))
}

/// realloc and reallocarray (and rallocx, with its `MALLOCX_` `flags`): `seq` before the real
/// call (the old block may be released inside it), a second one after (the new block exists
/// only from then on).
unsafe fn resize(
    p: *mut c_void,
    size: usize,
    flags: c_int,
    real: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let Some(ctx) = enter() else {
        if p.is_null() {
            return unrecorded(size, 16, false, real);
        }
        return real();
    };
    if p.is_null() {
        let q = real();
        if !q.is_null() {
            record_alloc(&ctx, size, 0, q);
        }
        return q;
    }
    let (before, t_before) = ctx.seq_stamped();
    let q = real();
    if q.is_null() {
        if size == 0 {
            // glibc frees the block and returns NULL.
            ctx.push(&[FREE | ctx.mark | before << 8, t_before, p as u64]);
        }
        return q;
    }
    push_realloc(&ctx, before, p, q, size, flags);
    q
}

/// The `REALLOC` event of a resize whose real call has returned `q` (after its `FLAGS`):
/// `before` was taken before the real call, the second key now.
unsafe fn push_realloc(
    ctx: &Ctx,
    before: u64,
    p: *mut c_void,
    q: *mut c_void,
    size: usize,
    flags: c_int,
) {
    let site = ctx.site();
    push_flags(ctx, flags);
    let (after, t_after) = ctx.seq_stamped();
    let mut w = [
        REALLOC | ctx.mark | before << 8,
        t_after,
        p as u64,
        q as u64,
        size as u64,
        after,
        0,
    ];
    match site {
        None => ctx.push(&w[..6]),
        Some(s) => {
            w[0] |= HAS_SITE;
            w[6] = s;
            ctx.push(&w);
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: size_t) -> *mut c_void {
    if real::is_boot(p) || !ready(&real::REALLOC) {
        let q = malloc(size);
        if !q.is_null() && !p.is_null() {
            let old = if real::is_boot(p) {
                real::boot_size(p)
            } else {
                0
            };
            std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(size));
        }
        return q;
    }
    if own::contains(p) {
        return own::realloc(p, size);
    }
    resize(p, size, 0, || {
        call_real!(REALLOC as fn(*mut c_void, size_t) -> *mut c_void, p, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: size_t, size: size_t) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        *libc::__errno_location() = libc::ENOMEM;
        return null_mut();
    };
    // As realloc: glibc's reallocarray calls realloc through the PLT, which would be a call
    // inside the real one (recorded twice, or its block taken for the recorder's own).
    realloc(p, total)
}

unsafe fn aligned(
    slot: &std::sync::atomic::AtomicUsize,
    align: usize,
    size: usize,
    real: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    if !ready(slot) {
        return real::boot_alloc(size, align);
    }
    let Some(ctx) = enter() else {
        return unrecorded(size, align, false, real);
    };
    let p = ctx.real(real);
    if !p.is_null() {
        record_alloc(&ctx, size, align, p);
    }
    p
}

#[no_mangle]
pub unsafe extern "C" fn memalign(align: size_t, size: size_t) -> *mut c_void {
    aligned(&real::MEMALIGN, align, size, || {
        call_real!(MEMALIGN as fn(size_t, size_t) -> *mut c_void, align, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void {
    aligned(&real::ALIGNED_ALLOC, align, size, || {
        call_real!(
            ALIGNED_ALLOC as fn(size_t, size_t) -> *mut c_void,
            align,
            size
        )
    })
}

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

#[no_mangle]
pub unsafe extern "C" fn valloc(size: size_t) -> *mut c_void {
    aligned(&real::VALLOC, page(), size, || {
        call_real!(VALLOC as fn(size_t) -> *mut c_void, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: size_t) -> *mut c_void {
    // pvalloc allocates whole pages: that is the request the allocator serves.
    let rounded = size.next_multiple_of(page());
    aligned(&real::PVALLOC, page(), rounded, || {
        call_real!(PVALLOC as fn(size_t) -> *mut c_void, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
) -> c_int {
    if !ready(&real::POSIX_MEMALIGN) {
        let p = real::boot_alloc(size, align);
        if p.is_null() {
            return libc::ENOMEM;
        }
        *out = p;
        return 0;
    }
    let Some(ctx) = enter() else {
        if is_busy() && align.is_power_of_two() && align >= std::mem::size_of::<usize>() {
            let p = own::alloc(size, align, false);
            if !p.is_null() {
                *out = p;
                return 0;
            }
        }
        return call_real!(
            POSIX_MEMALIGN as fn(*mut *mut c_void, size_t, size_t) -> c_int,
            out,
            align,
            size
        );
    };
    let r = ctx.real(|| {
        call_real!(
            POSIX_MEMALIGN as fn(*mut *mut c_void, size_t, size_t) -> c_int,
            out,
            align,
            size
        )
    });
    if r == 0 {
        record_alloc(&ctx, size, align, *out);
    }
    r
}

/// jemalloc's `mallctl` (where the program's allocator is jemalloc): the allocations made
/// inside it are reentrant (`background_thread` starts a thread, and glibc's `pthread_create`
/// allocates the thread's vector with `calloc` while jemalloc is inside `mallctl`: jemalloc
/// serves it from arena 0 without the thread cache). A write that changes the allocator's
/// state (`crate::ctl`) is recorded (`CTL`) when it succeeds, its order key taken before
/// the real call. Without a real one: `ENOENT`.
#[no_mangle]
pub unsafe extern "C" fn mallctl(
    name: *const c_char,
    old: *mut c_void,
    old_len: *mut size_t,
    new: *mut c_void,
    new_len: size_t,
) -> c_int {
    if !ready(&real::MALLCTL) {
        return libc::ENOENT;
    }
    let real = || {
        call_real!(
            MALLCTL as fn(*const c_char, *mut c_void, *mut size_t, *mut c_void, size_t) -> c_int,
            name,
            old,
            old_len,
            new,
            new_len
        )
    };
    let control = crate::ctl::control_of(name, old_len, new, new_len);
    crate::ctl::run(control, old, real)
}

/// `mallctlbymib`, as [`mallctl`] (a control by a MIB `mallctlnametomib` gave).
#[no_mangle]
pub unsafe extern "C" fn mallctlbymib(
    mib: *const size_t,
    mib_len: size_t,
    old: *mut c_void,
    old_len: *mut size_t,
    new: *mut c_void,
    new_len: size_t,
) -> c_int {
    if !ready(&real::MALLCTLBYMIB) {
        return libc::ENOENT;
    }
    let real = || {
        call_real!(
            MALLCTLBYMIB
                as fn(
                    *const size_t,
                    size_t,
                    *mut c_void,
                    *mut size_t,
                    *mut c_void,
                    size_t,
                ) -> c_int,
            mib,
            mib_len,
            old,
            old_len,
            new,
            new_len
        )
    };
    let control = crate::ctl::control_of_mib(mib, mib_len, old_len, new, new_len);
    crate::ctl::run(control, old, real)
}

/// `mmap`: recorded (`MAP`) when the program's allocator makes it inside one of its calls
/// (its arenas' and bases' mappings, whose addresses decide the radix tree's leaves: see
/// `fragsim::process`); every other caller (the program, the recorder's own heap) is only
/// forwarded. Before the real function is known (the loader, `dlsym`): the system call.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    let p = match get(&real::MMAP) {
        Some(f) => {
            let f: unsafe extern "C" fn(
                *mut c_void,
                size_t,
                c_int,
                c_int,
                c_int,
                libc::off_t,
            ) -> *mut c_void = std::mem::transmute(f);
            f(addr, len, prot, flags, fd, off)
        }
        None => libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, off) as *mut c_void,
    };
    if p != libc::MAP_FAILED && crate::buf::in_allocator_call() {
        record_mapping(E_MAP, p as u64, len as u64);
    }
    p
}

/// `munmap`, as [`mmap`] (`UNMAP`): jemalloc trims an over-sized mapping to its alignment.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let r = match get(&real::MUNMAP) {
        Some(f) => {
            let f: unsafe extern "C" fn(*mut c_void, size_t) -> c_int = std::mem::transmute(f);
            f(addr, len)
        }
        None => libc::syscall(libc::SYS_munmap, addr, len) as c_int,
    };
    if r == 0 && crate::buf::in_allocator_call() {
        record_mapping(E_UNMAP, addr as u64, len as u64);
    }
    r
}

#[cold]
unsafe fn record_mapping(kind: u64, addr: u64, len: u64) {
    // No order key: the reader places it after the thread's event before (it belongs to
    // the call in progress, whose own event follows).
    if let Some(ctx) = enter() {
        ctx.push(&[kind | ctx.mark, state::stamp(), addr, len]);
    }
}

/// The `FLAGS` event before a call through jemalloc's own API, when its flags name an arena
/// or a thread cache (the alignment is the call's; `MALLOCX_ZERO` changes nothing here).
#[inline(always)]
unsafe fn push_flags(ctx: &Ctx, flags: c_int) {
    let kept = flags as u32 as u64 & MALLOCX_KEPT;
    if kept != 0 {
        ctx.push(&[E_FLAGS | ctx.mark, state::stamp(), kept]);
    }
}

/// `MALLOCX_LG_ALIGN`'s alignment (0: the default).
fn mallocx_align(flags: c_int) -> usize {
    match flags & 0x3f {
        0 => 0,
        lg => 1usize << lg,
    }
}

/// jemalloc's `mallocx`: recorded as `malloc` or an aligned allocation, after a `FLAGS` event
/// for its arena and cache bits.
#[no_mangle]
pub unsafe extern "C" fn mallocx(size: size_t, flags: c_int) -> *mut c_void {
    if !ready(&real::MALLOCX) {
        return null_mut();
    }
    let real = || call_real!(MALLOCX as fn(size_t, c_int) -> *mut c_void, size, flags);
    let Some(ctx) = enter() else {
        return real();
    };
    let p = ctx.real(real);
    if !p.is_null() {
        push_flags(&ctx, flags);
        record_alloc(&ctx, size, mallocx_align(flags), p);
    }
    p
}

/// jemalloc's `rallocx`: recorded as `realloc` (after its `FLAGS`); a failure changes nothing.
#[no_mangle]
pub unsafe extern "C" fn rallocx(p: *mut c_void, size: size_t, flags: c_int) -> *mut c_void {
    if !ready(&real::RALLOCX) {
        return null_mut();
    }
    resize(p, size, flags, || {
        call_real!(
            RALLOCX as fn(*mut c_void, size_t, c_int) -> *mut c_void,
            p,
            size,
            flags
        )
    })
}

/// jemalloc's `xallocx`: resizes in place and returns the block's usable size, recorded as a
/// `realloc` of the block to that size (a block it could not resize keeps its size class).
#[no_mangle]
pub unsafe extern "C" fn xallocx(
    p: *mut c_void,
    size: size_t,
    extra: size_t,
    flags: c_int,
) -> size_t {
    if !ready(&real::XALLOCX) {
        return 0;
    }
    let got = std::cell::Cell::new(0);
    resize_to(p, &got, flags, || {
        got.set(call_real!(
            XALLOCX as fn(*mut c_void, size_t, size_t, c_int) -> size_t,
            p,
            size,
            extra,
            flags
        ));
        p
    });
    got.get()
}

/// [`resize`] with the size known only after the real call (xallocx's result).
unsafe fn resize_to(
    p: *mut c_void,
    size: &std::cell::Cell<usize>,
    flags: c_int,
    real: impl FnOnce() -> *mut c_void,
) {
    let Some(ctx) = enter() else {
        real();
        return;
    };
    let (before, _) = ctx.seq_stamped();
    ctx.real(real);
    push_realloc(&ctx, before, p, p, size.get(), flags);
}

/// jemalloc's `dallocx` and `sdallocx`: a free, after its `FLAGS`.
unsafe fn free_flags(p: *mut c_void, flags: c_int, real: impl FnOnce()) {
    if p.is_null() || own::contains(p) || real::is_boot(p) {
        return;
    }
    let Some(ctx) = enter() else {
        return real();
    };
    push_flags(&ctx, flags);
    let (seq, stamp) = ctx.seq_stamped();
    ctx.push(&[FREE | ctx.mark | seq << 8, stamp, p as u64]);
    ctx.real(real)
}

#[no_mangle]
pub unsafe extern "C" fn dallocx(p: *mut c_void, flags: c_int) {
    if !ready(&real::DALLOCX) {
        return;
    }
    free_flags(p, flags, || {
        call_real!(DALLOCX as fn(*mut c_void, c_int) -> (), p, flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn sdallocx(p: *mut c_void, size: size_t, flags: c_int) {
    if !ready(&real::SDALLOCX) {
        return;
    }
    free_flags(p, flags, || {
        call_real!(
            SDALLOCX as fn(*mut c_void, size_t, c_int) -> (),
            p,
            size,
            flags
        )
    })
}

/// `mallctlnametomib`, as [`mallctl`] (what it does inside is jemalloc's own).
#[no_mangle]
pub unsafe extern "C" fn mallctlnametomib(
    name: *const c_char,
    mib: *mut size_t,
    mib_len: *mut size_t,
) -> c_int {
    if !ready(&real::MALLCTLNAMETOMIB) {
        return libc::ENOENT;
    }
    let r = in_allocator(|| {
        call_real!(
            MALLCTLNAMETOMIB as fn(*const c_char, *mut size_t, *mut size_t) -> c_int,
            name,
            mib,
            mib_len
        )
    });
    if r == 0 {
        crate::ctl::remember(name, mib, mib_len);
    }
    r
}

/// A thread that starts threads often waits for them next (`join`) with its buffer held: it
/// writes its events right after the start, so the progress mark is not held back by them.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut c_void,
    attr: *const c_void,
    start: *mut c_void,
    arg: *mut c_void,
) -> c_int {
    if !ready(&real::PTHREAD_CREATE) {
        return libc::EAGAIN;
    }
    let r = call_real!(
        PTHREAD_CREATE as fn(*mut c_void, *const c_void, *mut c_void, *mut c_void) -> c_int,
        thread,
        attr,
        start,
        arg
    );
    crate::buf::flush_own();
    r
}

#[no_mangle]
pub unsafe extern "C" fn _exit(code: c_int) -> ! {
    state::finish();
    match get(&real::EXIT_) {
        Some(f) => {
            let f: unsafe extern "C" fn(c_int) -> ! = std::mem::transmute(f);
            f(code)
        }
        None => {
            libc::syscall(libc::SYS_exit_group, code);
            unreachable_exit()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn _Exit(code: c_int) -> ! {
    _exit(code)
}

fn unreachable_exit() -> ! {
    loop {
        std::hint::spin_loop();
    }
}
