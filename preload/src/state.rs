//! The process-wide state: whether this image records, its raw file, start-up, the end
//! (normal exit, `_exit`, exec, fatal signals) and fork.

use crate::buf::{self, chunk};
use crate::{real, stack};
use libc::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub const UNINIT: u8 = 0;
pub const INITIALIZING: u8 = 1;
pub const ON: u8 = 2;
pub const OFF: u8 = 3;

pub static STATE: AtomicU8 = AtomicU8::new(UNINIT);
/// The global sequence number, alone on its cache lines (two: the adjacent-line prefetcher
/// pairs them): every thread's `fetch_add` takes the line away from the others, and the flags
/// every call reads (`STATE`, `STACKS`, ...) shared it, so each call of a multi-threaded
/// program missed on them too.
#[repr(C, align(128))]
pub struct Seq(pub AtomicU64);

pub static SEQ: Seq = Seq(AtomicU64::new(0));
pub static FD: AtomicI32 = AtomicI32::new(-1);
pub static FLAGS: AtomicU32 = AtomicU32::new(0);
pub static STACKS: AtomicBool = AtomicBool::new(false);
pub static KEY: AtomicU32 = AtomicU32::new(0);
/// Calls not recorded: on threads whose exit was already written.
pub static LATE_CALLS: AtomicU64 = AtomicU64::new(0);
pub static LOST_BYTES: AtomicU64 = AtomicU64::new(0);

pub use crate::wire::{
    FLAG_AUTO_ORDER, FLAG_FOLLOW, FLAG_NO_UNWINDER, FLAG_STACKS, FLAG_TSC, FLAG_TSC_ORDER, K_END,
    K_EXEC, K_HEADER, K_MAPS, K_SIGNAL, RAW_VERSION,
};

/// The process that records: set when recording starts, and in a fork child. A child made by
/// `vfork` runs in its parent's memory, this state included, until it execs or exits, and no
/// fork handler runs in it: its exec (a PATH search's failed tries too) would write the
/// parent's buffers and an `EXEC` into the parent's file, and its `_exit` end the parent's
/// recording, had they not checked this first ([`in_recording_process`]).
static RECORDING_PID: AtomicI32 = AtomicI32::new(0);

/// False in a `vfork` child (or any child sharing this memory without the fork handlers):
/// `getpid` is a system call, so only the rare ends (exec, exit, fatal signal) ask.
pub fn in_recording_process() -> bool {
    // SAFETY: getpid has no preconditions (and is async-signal-safe).
    unsafe { libc::getpid() == RECORDING_PID.load(Ordering::Acquire) }
}

/// The directory of raw files (NUL-terminated, from the environment), kept for forks.
static mut DIR: [u8; 4096] = [0; 4096];

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec (vDSO, no allocation).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The TSC (0 where there is none): chunk headers pair it with `now_ns` so that event stamps
/// can be scaled to nanoseconds afterwards.
#[inline(always)]
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// The vDSO's `clock_gettime` (0: not found, libc's is used): called directly, it saves the
/// libc wrapper's ten instructions on every recorded call.
static VDSO_GETTIME: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Finds the vDSO's `clock_gettime` (at init, on the initialising thread).
unsafe fn resolve_vdso() {
    let h = libc::dlopen(
        c"linux-vdso.so.1".as_ptr(),
        libc::RTLD_LAZY | libc::RTLD_NOLOAD,
    );
    if h.is_null() {
        return;
    }
    let f = libc::dlsym(h, c"__vdso_clock_gettime".as_ptr());
    VDSO_GETTIME.store(f as usize, Ordering::Release);
}

/// `CLOCK_MONOTONIC_COARSE` ns: the kernel's last tick (1-4 ms resolution), read from the
/// vDSO without touching the clock hardware.
#[inline(always)]
pub fn coarse_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match VDSO_GETTIME.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: clock_gettime writes the timespec (vDSO, no allocation).
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        }
        f => {
            // SAFETY: the vDSO's clock_gettime has libc's signature and writes the timespec.
            unsafe {
                let f: unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int =
                    std::mem::transmute(f);
                f(libc::CLOCK_MONOTONIC_COARSE, &mut ts);
            }
        }
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Event stamps are TSC ticks (`tsc` in the flags, x86-64 only).
static PRECISE: AtomicBool = AtomicBool::new(false);

/// Event stamps are TSC ticks (`--precise-times`).
#[inline(always)]
pub fn precise() -> bool {
    PRECISE.load(Ordering::Relaxed)
}

/// An event's time stamp. By default `CLOCK_MONOTONIC_COARSE` (heaptrack, for comparison,
/// stamps its log every 10 ms): `rdtsc` was a third of the recorder's own time per call
/// (about 25 ns here), the coarse clock costs a few loads. With `tsc`, the TSC (`FLAG_TSC` in
/// the image header says which).
#[inline(always)]
pub fn stamp() -> u64 {
    if precise() {
        tsc()
    } else {
        coarse_ns()
    }
}

/// Runs once, on the first call or from the constructor; other threads wait for it.
#[cold]
pub unsafe fn init() {
    if STATE
        .compare_exchange(UNINIT, INITIALIZING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // Another thread initialises: wait (the initialising thread itself never gets here,
        // its nested calls are marked busy).
        while STATE.load(Ordering::Acquire) == INITIALIZING {
            std::hint::spin_loop();
        }
        return;
    }
    buf::set_busy(true);
    real::resolve();
    resolve_vdso();
    let on = configure();
    STATE.store(if on { ON } else { OFF }, Ordering::Release);
    buf::set_busy(false);
}

unsafe fn env(name: &[u8]) -> Option<&'static [u8]> {
    let p = libc::getenv(name.as_ptr() as *const c_char);
    if p.is_null() {
        return None;
    }
    Some(std::slice::from_raw_parts(p as *const u8, libc::strlen(p)))
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    if s.is_empty() {
        return None;
    }
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

/// Reads the environment and opens the raw file; false: this image does not record.
unsafe fn configure() -> bool {
    let Some(dir) = env(b"FRAGSIM_PRELOAD_DIR\0") else {
        return false;
    };
    if dir.len() + 32 > 4096 {
        return false;
    }
    let mut flags = 0;
    if let Some(f) = env(b"FRAGSIM_PRELOAD_FLAGS\0") {
        for word in f.split(|&c| c == b',') {
            match word {
                b"stacks" => flags |= FLAG_STACKS,
                b"follow" => flags |= FLAG_FOLLOW,
                b"tsc" if cfg!(target_arch = "x86_64") => flags |= FLAG_TSC,
                b"tscorder" if cfg!(target_arch = "x86_64") => flags |= FLAG_TSC_ORDER,
                b"autoorder" if cfg!(target_arch = "x86_64") => flags |= FLAG_AUTO_ORDER,
                _ => {}
            }
        }
    }
    let parent = env(b"FRAGSIM_PRELOAD_PARENT\0").and_then(parse_u64);
    let is_program = parent == Some(libc::getppid() as u64);
    if !is_program {
        // A child's program, recorded (`follow`) or not: `fragsim record` names it.
        crate::notes::note_image(dir, b'x');
    }
    if !is_program && flags & FLAG_FOLLOW == 0 {
        return false;
    }
    let dir_buf = &mut *std::ptr::addr_of_mut!(DIR);
    dir_buf[..dir.len()].copy_from_slice(dir);
    dir_buf[dir.len()] = 0;
    if flags & FLAG_STACKS != 0 {
        if stack::find_unwinder() {
            STACKS.store(true, Ordering::Release);
        } else {
            flags |= FLAG_NO_UNWINDER;
        }
    }
    PRECISE.store(flags & FLAG_TSC != 0, Ordering::Release);
    // Without `rdtscp` (a CPU or VM that lacks it) the image is ordered by sequence numbers
    // and its header says so.
    let order = if flags & FLAG_TSC_ORDER != 0 {
        buf::KeyOrder::Tsc
    } else if flags & FLAG_AUTO_ORDER != 0 {
        buf::KeyOrder::Auto
    } else {
        buf::KeyOrder::Seq
    };
    if !buf::set_order(order) {
        flags &= !(FLAG_TSC_ORDER | FLAG_AUTO_ORDER);
    }
    FLAGS.store(flags as u32, Ordering::Release);
    let mut key: libc::pthread_key_t = 0;
    if libc::pthread_key_create(&mut key, Some(buf::thread_exit)) != 0 {
        return false;
    }
    KEY.store(key, Ordering::Release);
    buf::register_membarrier();
    RECORDING_PID.store(libc::getpid(), Ordering::Release);
    if !open_raw(0) {
        return false;
    }
    libc::pthread_atfork(None, None, Some(after_fork_child));
    crate::signals::install();
    true
}

/// `DIR/raw.<pid>` of the recording process (NUL-terminated) into `path`.
pub fn raw_path(path: &mut [u8; 4096 + 32]) {
    // SAFETY: DIR is written once, before recording starts.
    let dir = unsafe { &*std::ptr::addr_of!(DIR) };
    let n = dir.iter().position(|&c| c == 0).unwrap_or(dir.len());
    path[..n].copy_from_slice(&dir[..n]);
    let mut at = n;
    for &c in b"/raw." {
        path[at] = c;
        at += 1;
    }
    at += write_decimal(
        &mut path[at..],
        RECORDING_PID.load(Ordering::Acquire) as u64,
    );
    path[at] = 0;
}

/// Opens `DIR/raw.<pid>` for appending and writes the image's header.
unsafe fn open_raw(fork_seq: u64) -> bool {
    let mut path = [0u8; 4096 + 32];
    raw_path(&mut path);
    let fd = libc::open(
        path.as_ptr() as *const c_char,
        libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
        0o644,
    );
    if fd < 0 || !buf::adopt_raw_fd(fd) {
        return false;
    }
    let words = [
        // 2 since `ALLOC` lost its align word and events their stamp when it is their
        // chunk's last one; 3 since flag 16.
        RAW_VERSION,
        libc::getpid() as u64,
        libc::getppid() as u64,
        // On the events' clock, so the first events are not before the start.
        if PRECISE.load(Ordering::Acquire) {
            now_ns()
        } else {
            coarse_ns()
        },
        FLAGS.load(Ordering::Acquire) as u64,
        fork_seq,
    ];
    chunk(K_HEADER, 0, 0, as_bytes(&words));
    true
}

pub fn write_decimal(out: &mut [u8], mut v: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        out[i] = digits[n - 1 - i];
    }
    n
}

pub fn as_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: u64s are plain bytes.
    unsafe { std::slice::from_raw_parts(words.as_ptr() as *const u8, words.len() * 8) }
}

/// `dlpi_adds + dlpi_subs` (objects loaded and unloaded) when the maps were last written.
static MAPS_GEN: AtomicU64 = AtomicU64::new(u64::MAX);
/// `dlpi_subs` when last seen: an unloading makes every thread forget its unwind rules.
static SUBS: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn loads(info: *mut libc::dl_phdr_info, _: usize, out: *mut c_void) -> c_int {
    let out = out as *mut [u64; 2];
    *out = [(*info).dlpi_adds, (*info).dlpi_subs];
    // The counts are the same for every object: the first one is enough.
    1
}

/// Writes the maps before a chunk of events if objects were loaded or unloaded since they
/// were last written (stacks on): a stack is symbolized with the last maps before its chunk,
/// which then hold every object it can be in, also while `fragsim record` converts as the
/// program runs. The count is stored after the write: a thread that sees it finds the maps
/// before its own chunk.
pub unsafe fn maps_if_changed() {
    if !STACKS.load(Ordering::Relaxed) {
        return;
    }
    let mut counts = [0u64; 2];
    libc::dl_iterate_phdr(Some(loads), &mut counts as *mut [u64; 2] as *mut c_void);
    let gen = counts[0].wrapping_add(counts[1]);
    if gen != MAPS_GEN.load(Ordering::Acquire) {
        if SUBS.swap(counts[1], Ordering::Relaxed) != counts[1] {
            stack::forget_rules();
        }
        write_maps();
        MAPS_GEN.store(gen, Ordering::Release);
    }
}

/// Copies `/proc/self/maps` into the raw file (stacks are symbolized against it later).
pub unsafe fn write_maps() {
    if !STACKS.load(Ordering::Acquire) {
        return;
    }
    let fd = libc::open(
        c"/proc/self/maps".as_ptr(),
        libc::O_RDONLY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return;
    }
    let cap = 64 << 20;
    let mem = libc::mmap(
        std::ptr::null_mut(),
        cap,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
        -1,
        0,
    );
    if mem == libc::MAP_FAILED {
        libc::close(fd);
        return;
    }
    let mut len = 0;
    while len < cap {
        let n = libc::read(fd, (mem as *mut u8).add(len) as *mut c_void, cap - len);
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    libc::close(fd);
    chunk(
        K_MAPS,
        0,
        0,
        std::slice::from_raw_parts(mem as *const u8, len),
    );
    libc::munmap(mem, cap);
}

/// The image ends normally (exit, `_exit`): stop recording, write everything and `END`.
pub unsafe fn finish() {
    if !in_recording_process() {
        return;
    }
    if STATE
        .compare_exchange(ON, OFF, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return;
    }
    buf::flush_all();
    let words = [
        buf::DROPPED_THREADS.load(Ordering::Relaxed),
        LATE_CALLS.load(Ordering::Relaxed),
        LOST_BYTES.load(Ordering::Relaxed),
    ];
    crate::allocator::write();
    chunk(K_END, 0, 0, as_bytes(&words));
    crate::stack::report_check();
}

/// The image is about to be replaced: write what the threads have (if the exec fails,
/// recording simply goes on).
pub unsafe fn before_exec() {
    if STATE.load(Ordering::Acquire) != ON || !in_recording_process() {
        return;
    }
    buf::flush_all();
    chunk(K_EXEC, 0, buf::current_tid(), &[]);
    // If the exec fails, the program goes on and so does recording.
    buf::resume_owners();
}

extern "C" fn fini() {
    // SAFETY: runs once at the end of the process.
    unsafe { finish() }
}

extern "C" fn ctor() {
    // SAFETY: the first call initialises; later ones return at once.
    unsafe {
        if STATE.load(Ordering::Acquire) == UNINIT {
            init();
        }
    }
}

#[used]
#[link_section = ".init_array"]
static CTOR: extern "C" fn() = ctor;
#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = fini;

extern "C" fn after_fork_child() {
    // SAFETY: runs in the only thread of the new child.
    unsafe {
        crate::own::after_fork_child();
        crate::signals::after_fork_child();
        RECORDING_PID.store(libc::getpid(), Ordering::Release);
        if STATE.load(Ordering::Acquire) != ON {
            return;
        }
        // Only if it is still the raw file: the program may have put its own file there.
        buf::close_raw_fd();
        buf::forget_other_threads();
        let dir = &*std::ptr::addr_of!(DIR);
        crate::notes::note_image(&dir[..libc::strlen(dir.as_ptr() as *const c_char)], b'f');
        if FLAGS.load(Ordering::Acquire) as u64 & FLAG_FOLLOW == 0 || !open_raw(buf::now_key()) {
            STATE.store(OFF, Ordering::Release);
        }
    }
}
