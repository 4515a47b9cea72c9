//! Call stacks: taken from cached unwind rules ([`crate::unwind`]), or where those do not
//! cover a frame by libunwind's `unw_backtrace` (loaded with `dlopen(RTLD_LOCAL)`, so its
//! `_Unwind_*` symbols never replace the C++ runtime's), interned per thread buffer: a stack is
//! written once as a `STACK` event, calls carry its id.
//! `FRAGSIM_STACKS_CHECK=1` takes every stack both ways and aborts if they differ (tests).
//!
//! libunwind is loaded only when a stack first needs it (it is found at start-up, not
//! loaded): it has a TLS block, and every thread created after it is loaded gets a larger
//! thread vector from glibc (16 bytes more, one size class up), a change to the program's
//! heap that a program whose stacks the rules all cover is spared. Its loading allocates from
//! the recorder's own heap (`own.rs`), as everything the recorder does.

use crate::buf::Ctx;
use crate::unwind::{self, Slot, CACHE_SLOTS, RULES_GEN};
use libc::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

type Backtrace = unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int;
type CachingPolicy = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

static UNW_BACKTRACE: AtomicUsize = AtomicUsize::new(0);
/// libunwind's loading: not tried yet, under way (on one thread), loaded, failed.
static LOAD: AtomicU8 = AtomicU8::new(UNTRIED);
const UNTRIED: u8 = 0;
const LOADING: u8 = 1;
const LOADED: u8 = 2;
const FAILED: u8 = 3;
const LIBUNWIND: &std::ffi::CStr = c"libunwind.so.8";
/// Where libunwind is looked for before it is loaded (besides `LD_LIBRARY_PATH`); found
/// nowhere here, it is loaded at once, so that `dlopen`'s own search has the last word.
const LIB_DIRS: [&[u8]; 7] = [
    b"/usr/lib/x86_64-linux-gnu",
    b"/lib/x86_64-linux-gnu",
    b"/usr/lib64",
    b"/lib64",
    b"/usr/lib",
    b"/lib",
    b"/usr/local/lib",
];
static CHECK: AtomicBool = AtomicBool::new(false);
/// Under the check: stacks the rules took (each found equal to libunwind's), and stacks only
/// libunwind could take, for [`report_check`].
static CHECKED_BY_RULES: AtomicU64 = AtomicU64::new(0);
static CHECKED_BY_LIBUNWIND: AtomicU64 = AtomicU64::new(0);
const UNW_CACHE_PER_THREAD: c_int = 2;
const MAX_FRAMES: usize = 64;
/// Hash slots per table (a power of two); the table stops interning at 3/4 full.
const TABLE_SLOTS: usize = 1 << 18;
/// u64 words of return addresses per table.
const ARENA_WORDS: usize = 1 << 22;
/// The stack id of a call whose stack could not be interned (table full).
pub const NO_STACK: u64 = 0;

/// At start-up with stacks on: whether libunwind can be had. Loaded now under the check or
/// when it cannot be found on disk (or is loaded already), else when first needed.
pub unsafe fn find_unwinder() -> bool {
    let check = libc::getenv(c"FRAGSIM_STACKS_CHECK".as_ptr());
    CHECK.store(
        !check.is_null() && *check == b'1' as libc::c_char,
        Ordering::Relaxed,
    );
    let loaded = libc::dlopen(LIBUNWIND.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
    if CHECK.load(Ordering::Relaxed) || !loaded.is_null() || !on_disk() {
        return unwinder().is_some();
    }
    true
}

/// libunwind's file is in `LD_LIBRARY_PATH` or one of [`LIB_DIRS`].
unsafe fn on_disk() -> bool {
    let from_env = libc::getenv(c"LD_LIBRARY_PATH".as_ptr());
    let env: &[u8] = if from_env.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(from_env as *const u8, libc::strlen(from_env))
    };
    let name = LIBUNWIND.to_bytes();
    env.split(|&c| c == b':')
        .chain(LIB_DIRS.iter().copied())
        .any(|dir| {
            let mut path = [0u8; 4096];
            if dir.is_empty() || dir.len() + name.len() + 2 > path.len() {
                return false;
            }
            path[..dir.len()].copy_from_slice(dir);
            path[dir.len()] = b'/';
            path[dir.len() + 1..dir.len() + 1 + name.len()].copy_from_slice(name);
            libc::access(path.as_ptr() as *const libc::c_char, libc::R_OK) == 0
        })
}

/// `unw_backtrace`, libunwind loaded on the first call; `None` if it cannot be, or while
/// another thread loads it (waiting could deadlock: that thread may need the loader's lock
/// this one holds, inside the program's `dlopen`).
unsafe fn unwinder() -> Option<Backtrace> {
    let f = UNW_BACKTRACE.load(Ordering::Acquire);
    if f != 0 {
        return Some(std::mem::transmute::<usize, Backtrace>(f));
    }
    if LOAD
        .compare_exchange(UNTRIED, LOADING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return None;
    }
    let loaded = load();
    LOAD.store(if loaded { LOADED } else { FAILED }, Ordering::Release);
    loaded.then(|| std::mem::transmute::<usize, Backtrace>(UNW_BACKTRACE.load(Ordering::Acquire)))
}

unsafe fn load() -> bool {
    let h = libc::dlopen(LIBUNWIND.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
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
    /// [`RULES_GEN`] when the rule cache was last cleared.
    rules_gen: u64,
}

const TABLE_HEAD: usize = 64;

unsafe fn entries(t: *mut StackTable) -> *mut Entry {
    (t as *mut u8).add(TABLE_HEAD) as *mut Entry
}

unsafe fn arena(t: *mut StackTable) -> *mut u64 {
    (entries(t) as *mut u8).add(TABLE_SLOTS * std::mem::size_of::<Entry>()) as *mut u64
}

unsafe fn rules(t: *mut StackTable) -> *mut Slot {
    arena(t).add(ARENA_WORDS) as *mut Slot
}

/// A new table (lazily backed memory: only the pages touched count).
pub unsafe fn new_table() -> *mut StackTable {
    let bytes = TABLE_HEAD
        + TABLE_SLOTS * std::mem::size_of::<Entry>()
        + ARENA_WORDS * 8
        + CACHE_SLOTS * std::mem::size_of::<Slot>();
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
    (*t).rules_gen = RULES_GEN.load(Ordering::Acquire);
    t
}

/// Makes every thread clear its unwind rule cache before its next stack (objects were
/// unloaded; libunwind's own caches are kept the same way, at its next miss).
pub fn forget_rules() {
    RULES_GEN.fetch_add(1, Ordering::Release);
}

/// Forgets every stack (a fork child's file must define its stacks again).
pub unsafe fn clear(t: *mut StackTable) {
    std::ptr::write_bytes(entries(t), 0, TABLE_SLOTS);
    (*t).used_words = 0;
    (*t).count = 0;
    (*t).next_id = 1;
}

/// This thread's stack into `out[1..]` (`out` has `MAX_FRAMES` words), the innermost frame
/// (this function's, whose address depends on the way taken) in `out[0]`, left out of the
/// count returned; `None`: it needs libunwind, which cannot be had.
#[inline(always)]
unsafe fn take(t: *mut StackTable, out: *mut u64) -> Option<usize> {
    let gen = RULES_GEN.load(Ordering::Relaxed);
    if (*t).rules_gen != gen {
        unwind::clear(rules(t));
        (*t).rules_gen = gen;
    }
    let fast = unwind::backtrace(rules(t), out, MAX_FRAMES);
    let n = match fast {
        Some(n) if !CHECK.load(Ordering::Relaxed) => n,
        _ => {
            let bt = unwinder()?;
            let mut slow = [0u64; MAX_FRAMES];
            let m = bt(slow.as_mut_ptr() as *mut *mut c_void, MAX_FRAMES as c_int).max(0);
            let m = m as usize;
            if let Some(n) = fast {
                let mine = std::slice::from_raw_parts(out.add(1), n.saturating_sub(1));
                if mine != &slow[1.min(m)..m] {
                    check_failed(mine, &slow[1.min(m)..m]);
                }
                CHECKED_BY_RULES.fetch_add(1, Ordering::Relaxed);
            } else if CHECK.load(Ordering::Relaxed) {
                CHECKED_BY_LIBUNWIND.fetch_add(1, Ordering::Relaxed);
            }
            std::ptr::copy_nonoverlapping(slow.as_ptr(), out, m);
            m
        }
    };
    Some(n.saturating_sub(1))
}

/// Under `FRAGSIM_STACKS_CHECK=1`, at the image's end: one line on standard error saying how
/// many stacks the rules took (each equal to libunwind's) and how many libunwind alone, so a
/// test can tell that the rules were used at all.
pub unsafe fn report_check() {
    if !CHECK.load(Ordering::Relaxed) {
        return;
    }
    let mut line = [0u8; 128];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        line[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    let decimal = |mut v: u64| {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        (digits, i)
    };
    put(b"fragsim-preload: stacks checked: ");
    let (d, i) = decimal(CHECKED_BY_RULES.load(Ordering::Relaxed));
    put(&d[i..]);
    put(b" by the rules, ");
    let (d, i) = decimal(CHECKED_BY_LIBUNWIND.load(Ordering::Relaxed));
    put(&d[i..]);
    put(b" by libunwind alone\n");
    libc::write(2, line.as_ptr() as *const c_void, at);
}

#[cold]
unsafe fn check_failed(mine: &[u64], libunwind: &[u64]) -> ! {
    let mut line = [0u8; 64 * 17 * 2 + 64];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        let k = bytes.len().min(line.len() - at);
        line[at..at + k].copy_from_slice(&bytes[..k]);
        at += k;
    };
    put(b"fragsim-preload: stacks differ:");
    for (tag, frames) in [(b" rules".as_slice(), mine), (b" libunwind", libunwind)] {
        put(tag);
        for &f in frames {
            let mut hex = *b" 0000000000000000";
            for i in 0..16 {
                hex[16 - i] = b"0123456789abcdef"[(f >> (4 * i) & 15) as usize];
            }
            put(&hex);
        }
    }
    put(b"\n");
    libc::write(2, line.as_ptr() as *const c_void, at);
    libc::abort();
}

/// The current call stack's id in this thread's table, written as a `STACK` event the
/// first time it is seen.
pub unsafe fn capture(ctx: &Ctx) -> u64 {
    let t = (*ctx.b).stacks;
    if t.is_null() {
        return NO_STACK;
    }
    // words[0..2] are the STACK event's head (words[1] first holds the dropped innermost
    // frame), the frames follow (only those written are read).
    let mut words = [MaybeUninit::<u64>::uninit(); MAX_FRAMES + 1];
    let words = words.as_mut_ptr() as *mut u64;
    let Some(n) = take(t, words.add(1)) else {
        return NO_STACK;
    };
    let frames = std::slice::from_raw_parts(words.add(2), n);
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
    words.write(crate::wire::E_STACK | (n as u64) << 8);
    words.add(1).write(id as u64);
    ctx.push(std::slice::from_raw_parts(words, n + 2));
    id as u64
}
