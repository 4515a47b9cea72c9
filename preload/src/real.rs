//! The real allocator functions (found with `dlsym(RTLD_NEXT)`) and the bootstrap buffer that
//! serves the allocations `dlsym` itself makes before they are known.

use libc::{c_char, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

macro_rules! reals {
    ($($slot:ident $name:literal;)*) => {
        $(pub static $slot: AtomicUsize = AtomicUsize::new(0);)*

        /// Looks every real function up (once, on the initialising thread).
        pub unsafe fn resolve() {
            $(
                let p = libc::dlsym(libc::RTLD_NEXT, concat!($name, "\0").as_ptr() as *const c_char);
                $slot.store(p as usize, Ordering::Release);
            )*
        }
    };
}

reals! {
    MALLOC "malloc";
    FREE "free";
    CALLOC "calloc";
    REALLOC "realloc";
    MEMALIGN "memalign";
    POSIX_MEMALIGN "posix_memalign";
    ALIGNED_ALLOC "aligned_alloc";
    VALLOC "valloc";
    PVALLOC "pvalloc";
    EXECVE "execve";
    EXECV "execv";
    EXECVP "execvp";
    EXECVPE "execvpe";
    FEXECVE "fexecve";
    EXECVEAT "execveat";
    EXECL "execl";
    EXECLE "execle";
    EXECLP "execlp";
    EXIT_ "_exit";
    EXIT2 "_Exit";
    PTHREAD_CREATE "pthread_create";
    SIGACTION "sigaction";
    MALLCTL "mallctl";
    MALLCTLBYMIB "mallctlbymib";
    MMAP "mmap";
    MUNMAP "munmap";
    MALLOCX "mallocx";
    RALLOCX "rallocx";
    XALLOCX "xallocx";
    DALLOCX "dallocx";
    SDALLOCX "sdallocx";
    MALLCTLNAMETOMIB "mallctlnametomib";
}

/// The function in `slot`, or `None` before `resolve` (or if the symbol is missing).
#[inline(always)]
pub fn get(slot: &AtomicUsize) -> Option<usize> {
    match slot.load(Ordering::Acquire) {
        0 => None,
        p => Some(p),
    }
}

// The bootstrap buffer: a bump allocator over static memory, never freed (dlsym allocates a
// few hundred bytes at most). Each block has a 16-byte header holding its size, so realloc
// of a bootstrap block can copy it.
const BOOT_BYTES: usize = 1 << 16;
#[repr(C, align(64))]
struct Boot([u8; BOOT_BYTES]);
static mut BOOT: Boot = Boot([0; BOOT_BYTES]);
static BOOT_USED: AtomicUsize = AtomicUsize::new(0);

fn boot_base() -> usize {
    std::ptr::addr_of_mut!(BOOT) as usize
}

/// A zeroed block from the bootstrap buffer (null when it is exhausted).
pub fn boot_alloc(size: usize, align: usize) -> *mut c_void {
    let align = align.clamp(16, 4096);
    let mut used = BOOT_USED.load(Ordering::Relaxed);
    loop {
        let start = (boot_base() + used + 16).next_multiple_of(align) - boot_base();
        let end = start + size;
        if end > BOOT_BYTES {
            return std::ptr::null_mut();
        }
        match BOOT_USED.compare_exchange(used, end, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => {
                let p = (boot_base() + start) as *mut u8;
                // SAFETY: start >= 16 and the header lies inside the buffer.
                unsafe { (p.sub(16) as *mut usize).write(size) };
                return p as *mut c_void;
            }
            Err(now) => used = now,
        }
    }
}

pub fn is_boot(p: *mut c_void) -> bool {
    let p = p as usize;
    p >= boot_base() && p < boot_base() + BOOT_BYTES
}

/// The size a bootstrap block was allocated with.
pub unsafe fn boot_size(p: *mut c_void) -> usize {
    ((p as *mut u8).sub(16) as *const usize).read()
}
