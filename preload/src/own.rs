//! The recorder's own heap. What is allocated while the recorder itself works on a thread
//! (the dynamic loader bringing libunwind in for `--stacks`, libunwind, glibc's bookkeeping for
//! them, a thread's key slot) comes from here, never from the program's allocator: the
//! program's heap is then the same with and without recording, and every block in it is in
//! the trace. Such blocks may be freed or resized later by anyone (glibc frees a thread's
//! blocks from another thread): `free` and `realloc` recognise them by address.
//!
//! One reserved mapping (backed only where touched), power-of-two classes with a free list
//! each, a spin lock: these calls are few (a few dozen for libunwind's loading).

use libc::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Address space reserved (not committed: `MAP_NORESERVE`, pages backed when touched).
const RESERVE: usize = 256 << 20;
/// The block header before each pointer handed out: class, offset from the block's start,
/// requested size.
const HEAD: usize = 16;
const MIN_CLASS: u32 = 5;
const CLASSES: usize = 29;

/// The mapping's start (0: not mapped yet).
static BASE: AtomicUsize = AtomicUsize::new(0);
static LOCK: AtomicBool = AtomicBool::new(false);

struct Heap {
    /// Bytes of the mapping handed out by bumping.
    used: usize,
    /// Per class, the first free block's start (0: none); a free block's first word links on.
    free: [usize; CLASSES],
}

static mut HEAP: Heap = Heap {
    used: 0,
    free: [0; CLASSES],
};

/// `p` is one of this heap's blocks.
#[inline(always)]
pub fn contains(p: *mut c_void) -> bool {
    let base = BASE.load(Ordering::Relaxed);
    base != 0 && (p as usize).wrapping_sub(base) < RESERVE
}

struct Locked;

impl Locked {
    fn take() -> Locked {
        while LOCK
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        Locked
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        LOCK.store(false, Ordering::Release);
    }
}

/// In a fork child: another thread may have held the lock when the process forked.
pub fn after_fork_child() {
    LOCK.store(false, Ordering::Release);
}

/// A block of `size` bytes aligned to `align` (a power of two; 16 at least), zeroed if
/// `zero`; null when the request cannot be served here.
pub unsafe fn alloc(size: usize, align: usize, zero: bool) -> *mut c_void {
    let align = align.max(16);
    if !align.is_power_of_two() {
        return std::ptr::null_mut();
    }
    let Some(total) = size.checked_add(HEAD + align - 16) else {
        return std::ptr::null_mut();
    };
    let class = total.next_power_of_two().trailing_zeros().max(MIN_CLASS);
    if class as usize >= CLASSES || 1usize << class > RESERVE {
        return std::ptr::null_mut();
    }
    let (block, reused) = {
        let _held = Locked::take();
        let Some(base) = mapped() else {
            return std::ptr::null_mut();
        };
        let heap = &mut *std::ptr::addr_of_mut!(HEAP);
        let head = heap.free[class as usize];
        if head != 0 {
            heap.free[class as usize] = *(head as *const usize);
            (head, true)
        } else if heap.used + (1 << class) <= RESERVE {
            let start = base + heap.used;
            heap.used += 1 << class;
            (start, false)
        } else {
            return std::ptr::null_mut();
        }
    };
    let p = (block + HEAD).next_multiple_of(align);
    let head = (p - HEAD) as *mut u32;
    head.write(class);
    head.add(1).write((p - block) as u32);
    ((p - 8) as *mut u64).write(size as u64);
    // A fresh block is still untouched, zero-filled memory.
    if zero && reused {
        std::ptr::write_bytes(p as *mut u8, 0, size);
    }
    p as *mut c_void
}

/// The mapping, made on first use (the lock held).
unsafe fn mapped() -> Option<usize> {
    let base = BASE.load(Ordering::Relaxed);
    if base != 0 {
        return Some(base);
    }
    let mem = libc::mmap(
        std::ptr::null_mut(),
        RESERVE,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
        -1,
        0,
    );
    if mem == libc::MAP_FAILED {
        return None;
    }
    BASE.store(mem as usize, Ordering::Release);
    Some(mem as usize)
}

/// The size `p` (one of this heap's blocks) was asked for.
pub unsafe fn size_of(p: *mut c_void) -> usize {
    ((p as usize - 8) as *const u64).read() as usize
}

/// Returns `p` (one of this heap's blocks) to its class's free list.
pub unsafe fn free(p: *mut c_void) {
    let head = (p as usize - HEAD) as *const u32;
    let class = head.read() as usize;
    let block = p as usize - head.add(1).read() as usize;
    let _held = Locked::take();
    let heap = &mut *std::ptr::addr_of_mut!(HEAP);
    *(block as *mut usize) = heap.free[class];
    heap.free[class] = block;
}

/// `p` (one of this heap's blocks) resized: a new block here with the old contents.
pub unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    let q = alloc(size, 16, false);
    if !q.is_null() {
        std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, size_of(p).min(size));
        free(p);
    }
    q
}
