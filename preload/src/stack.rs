//! Call stacks: libunwind's `unw_backtrace` (loaded with `dlopen(RTLD_LOCAL)` only when
//! stacks are asked for, so its `_Unwind_*` symbols never replace the C++ runtime's), interned
//! per thread buffer: a stack is written once as a `STACK` event, calls carry its id.

use crate::buf::Ctx;
use libc::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

type Backtrace = unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int;
type CachingPolicy = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

static UNW_BACKTRACE: AtomicUsize = AtomicUsize::new(0);
const UNW_CACHE_PER_THREAD: c_int = 2;
const MAX_FRAMES: usize = 64;
/// Hash slots per table (a power of two); the table stops interning at 3/4 full.
const TABLE_SLOTS: usize = 1 << 18;
/// u64 words of return addresses per table.
const ARENA_WORDS: usize = 1 << 22;
/// The stack id of a call whose stack could not be interned (table full).
pub const NO_STACK: u64 = 0;

pub unsafe fn load_unwinder() -> bool {
    let h = libc::dlopen(
        c"libunwind.so.8".as_ptr(),
        libc::RTLD_NOW | libc::RTLD_LOCAL,
    );
    if h.is_null() {
        return false;
    }
    let bt = libc::dlsym(h, c"unw_backtrace".as_ptr());
    if bt.is_null() {
        return false;
    }
    // heaptrack's setting: per-thread caches of unwind info, no global lock while unwinding.
    let policy = libc::dlsym(h, c"_ULx86_64_set_caching_policy".as_ptr());
    let space = libc::dlsym(h, c"_ULx86_64_local_addr_space".as_ptr()) as *const *mut c_void;
    if !policy.is_null() && !space.is_null() {
        let policy: CachingPolicy = std::mem::transmute(policy);
        policy(*space, UNW_CACHE_PER_THREAD);
    }
    UNW_BACKTRACE.store(bt as usize, Ordering::Release);
    true
}

#[repr(C)]
struct Entry {
    hash: u64,
    off: u32,
    /// 0: empty.
    id: u32,
}

#[repr(C)]
pub struct StackTable {
    used_words: usize,
    count: usize,
    next_id: u32,
}

const TABLE_HEAD: usize = 64;

unsafe fn entries(t: *mut StackTable) -> *mut Entry {
    (t as *mut u8).add(TABLE_HEAD) as *mut Entry
}

unsafe fn arena(t: *mut StackTable) -> *mut u64 {
    (entries(t) as *mut u8).add(TABLE_SLOTS * std::mem::size_of::<Entry>()) as *mut u64
}

/// A new table (lazily backed memory: only the pages touched count).
pub unsafe fn new_table() -> *mut StackTable {
    let bytes = TABLE_HEAD + TABLE_SLOTS * std::mem::size_of::<Entry>() + ARENA_WORDS * 8;
    let mem = libc::mmap(
        std::ptr::null_mut(),
        bytes,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
        -1,
        0,
    );
    if mem == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let t = mem as *mut StackTable;
    (*t).next_id = 1;
    t
}

/// Forgets every stack (a fork child's file must define its stacks again).
pub unsafe fn clear(t: *mut StackTable) {
    std::ptr::write_bytes(entries(t), 0, TABLE_SLOTS);
    (*t).used_words = 0;
    (*t).count = 0;
    (*t).next_id = 1;
}

/// The current call stack's id in this thread's table, written as a `STACK` event the
/// first time it is seen.
pub unsafe fn capture(ctx: &Ctx) -> u64 {
    let t = (*ctx.b).stacks;
    let bt = UNW_BACKTRACE.load(Ordering::Acquire);
    if t.is_null() || bt == 0 {
        return NO_STACK;
    }
    let bt: Backtrace = std::mem::transmute(bt);
    // words[0..2] are the STACK event's head, the frames follow.
    let mut words = [0u64; MAX_FRAMES + 2];
    let n = bt(
        words.as_mut_ptr().add(2) as *mut *mut c_void,
        MAX_FRAMES as c_int,
    )
    .max(0) as usize;
    let frames = &words[2..2 + n];
    // FNV-1a over the addresses.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ n as u64;
    for &ip in frames {
        hash = (hash ^ ip).wrapping_mul(0x0100_0000_01b3);
    }
    let slots = entries(t);
    let mask = TABLE_SLOTS - 1;
    let mut i = hash as usize & mask;
    loop {
        let e = &mut *slots.add(i);
        if e.id == 0 {
            break;
        }
        if e.hash == hash {
            let stored = arena(t).add(e.off as usize);
            if *stored == n as u64 && std::slice::from_raw_parts(stored.add(1), n) == frames {
                return e.id as u64;
            }
        }
        i = (i + 1) & mask;
    }
    if (*t).count * 4 >= TABLE_SLOTS * 3 || (*t).used_words + n + 1 > ARENA_WORDS {
        return NO_STACK;
    }
    let off = (*t).used_words;
    let stored = arena(t).add(off);
    *stored = n as u64;
    std::ptr::copy_nonoverlapping(frames.as_ptr(), stored.add(1), n);
    (*t).used_words += n + 1;
    (*t).count += 1;
    let id = (*t).next_id;
    (*t).next_id += 1;
    let e = &mut *slots.add(i);
    e.hash = hash;
    e.off = off as u32;
    e.id = id;
    words[0] = 5 | (n as u64) << 8;
    words[1] = id as u64;
    ctx.push(&words[..n + 2]);
    id as u64
}
