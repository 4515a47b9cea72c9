//! jemalloc `mallctl` writes that change the allocator's state, recorded as `CTL` events (see
//! `fragsim::trace::Control`): by name (`mallctl`), and by MIB (`mallctlbymib`) where the
//! program looked the MIB up with `mallctlnametomib` (remembered here, without allocating).

use crate::buf::{enter, in_allocator};
use crate::wire::E_CTL;
use libc::{c_char, c_int, c_void, size_t};
use std::sync::atomic::{AtomicU64, Ordering};

/// Which control a name is: `thread.tcache.flush` (0), `arena.<i>.purge` (1, i),
/// `arena.<i>.decay` (2, i), `thread.arena` (3), `thread.tcache.enabled` (4),
/// `tcache.create` (5), `tcache.flush` (6), `tcache.destroy` (7), `background_thread` (8).
fn name_code(name: &[u8]) -> Option<(u64, u64)> {
    match name {
        b"thread.tcache.flush" => return Some((0, 0)),
        b"thread.arena" => return Some((3, 0)),
        b"thread.tcache.enabled" => return Some((4, 0)),
        b"tcache.create" => return Some((CREATE, 0)),
        b"tcache.flush" => return Some((6, 0)),
        b"tcache.destroy" => return Some((7, 0)),
        b"background_thread" => return Some((8, 0)),
        _ => {}
    }
    let rest = name.strip_prefix(b"arena.")?;
    let dot = rest.iter().position(|&c| c == b'.')?;
    let (digits, op) = (&rest[..dot], &rest[dot + 1..]);
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let arena = digits
        .iter()
        .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    match op {
        b"purge" => Some((1, arena)),
        b"decay" => Some((2, arena)),
        _ => None,
    }
}

/// `tcache.create`: its argument, the cache's index, is what the call gives back in `old`.
const CREATE: u64 = 5;

/// The code and argument of control `code` (its name's argument `arg`) written with `new`:
/// `thread.arena`, `tcache.flush` and `tcache.destroy` take an unsigned,
/// `thread.tcache.enabled` and `background_thread` a bool (a read of any is no control);
/// `tcache.create` gives an unsigned (read after the call).
unsafe fn with_value(
    code: u64,
    arg: u64,
    old_len: *mut size_t,
    new: *mut c_void,
    new_len: size_t,
) -> Option<(u64, u64)> {
    let unsigned = !new.is_null() && new_len == std::mem::size_of::<u32>();
    let boolean = !new.is_null() && new_len == 1;
    match code {
        3 | 6 | 7 if unsigned => Some((code, u64::from(*(new as *const u32)))),
        4 | 8 if boolean => Some((code, u64::from(*(new as *const u8) != 0))),
        CREATE if !old_len.is_null() && *old_len == std::mem::size_of::<u32>() => Some((CREATE, 0)),
        3..=8 => None,
        _ => Some((code, arg)),
    }
}

/// The control a `mallctl` call makes, if any.
pub unsafe fn control_of(
    name: *const c_char,
    old_len: *mut size_t,
    new: *mut c_void,
    new_len: size_t,
) -> Option<(u64, u64)> {
    if name.is_null() {
        return None;
    }
    let (code, arg) = name_code(std::ffi::CStr::from_ptr(name).to_bytes())?;
    with_value(code, arg, old_len, new, new_len)
}

/// MIBs of control names the program looked up: per entry, `code + 1` (0: free) with the
/// MIB's length in bits 8-15, then its first three components. An `arena.<i>.*` MIB matches
/// whatever its arena component (the program sets it per call).
static MIBS: [[AtomicU64; 4]; 32] = [const { [const { AtomicU64::new(0) }; 4] }; 32];

/// Remembers the MIB `mallctlnametomib` gave for `name`, if it names a control (entries are
/// never freed: a program looks a few names up once).
pub unsafe fn remember(name: *const c_char, mib: *const size_t, mib_len: *const size_t) {
    if name.is_null() || mib.is_null() || mib_len.is_null() {
        return;
    }
    let Some((code, _)) = name_code(std::ffi::CStr::from_ptr(name).to_bytes()) else {
        return;
    };
    let len = *mib_len;
    if !(1..=3).contains(&len) {
        return;
    }
    let head = (code + 1) | (len as u64) << 8;
    for entry in &MIBS {
        if entry[0]
            .compare_exchange(0, u64::MAX, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            for k in 0..3 {
                let v = if k < len { *mib.add(k) as u64 } else { 0 };
                entry[1 + k].store(v, Ordering::Relaxed);
            }
            entry[0].store(head, Ordering::Release);
            return;
        }
    }
}

/// The control a `mallctlbymib` call makes, if its MIB is a remembered one.
pub unsafe fn control_of_mib(
    mib: *const size_t,
    mib_len: size_t,
    old_len: *mut size_t,
    new: *mut c_void,
    new_len: size_t,
) -> Option<(u64, u64)> {
    if mib.is_null() || !(1..=3).contains(&mib_len) {
        return None;
    }
    let at = |k: usize| if k < mib_len { *mib.add(k) as u64 } else { 0 };
    for entry in &MIBS {
        let head = entry[0].load(Ordering::Acquire);
        if head == 0 {
            return None;
        }
        if head == u64::MAX || (head >> 8) as usize != mib_len {
            continue;
        }
        let code = (head & 0xff) - 1;
        let arena_op = code == 1 || code == 2;
        let same =
            (0..3).all(|k| (arena_op && k == 1) || entry[1 + k].load(Ordering::Relaxed) == at(k));
        if same {
            return with_value(
                code,
                if arena_op { at(1) } else { 0 },
                old_len,
                new,
                new_len,
            );
        }
    }
    None
}

/// Runs the real `mallctl`/`mallctlbymib` (calls made inside it are reentrant); a `control`
/// that succeeds is recorded, its order key taken after the real call: the calls made inside
/// it (glibc allocating as `background_thread` starts a thread) have taken theirs by then,
/// and a thread's keys must grow (`tcache.create`'s index is read from `old`).
pub unsafe fn run(
    control: Option<(u64, u64)>,
    old: *mut c_void,
    real: impl FnOnce() -> c_int,
) -> c_int {
    let (Some((code, arg)), Some(ctx)) = (control, control.and_then(|_| enter())) else {
        return in_allocator(real);
    };
    let r = ctx.real(real);
    if r == 0 {
        let (seq, stamp) = ctx.seq_stamped();
        let arg = match code {
            CREATE if !old.is_null() => u64::from(*(old as *const u32)),
            CREATE => u64::MAX,
            _ => arg,
        };
        if arg != u64::MAX {
            ctx.push(&[E_CTL | ctx.mark | seq << 8, stamp, code, arg]);
        }
    }
    r
}
