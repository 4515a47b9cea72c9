//! The call stack from unwind rules cached per thread by return address: a cached frame is a
//! hash probe, one or two loads and an add (a stack of the C++ benchmark program: 353
//! instructions, `unw_backtrace` 1014). A rule comes from the object's `.eh_frame`
//! ([`crate::cfi`]) the first time its address is seen; a stack with a frame the rules do not
//! cover (a signal frame, an expression, no unwind table) is left to libunwind whole.

use crate::cfi::{self, Rule};
use std::sync::atomic::{AtomicU64, Ordering};

/// Rule cache slots per thread (a power of two), direct-mapped: a clash costs a re-parse.
pub const CACHE_SLOTS: usize = 1 << 14;
/// A frame more than this above the first is taken for a bad rule (libunwind then).
const MAX_SPAN: u64 = 1 << 28;

/// A slot's `flags`: no rule (the stack goes to libunwind), the CFA from `rbp`, the
/// outermost frame, `rbp` saved, no unwind information at all (with `NONE`).
const NONE: u16 = 1;
const CFA_RBP: u16 = 2;
const LAST: u16 = 4;
const RBP_SAVED: u16 = 8;
const NO_INFO: u16 = 16;

/// One return address's rule, unpacked (`ip` 0: empty; a return address is never 0).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Slot {
    ip: u64,
    cfa_off: i32,
    rbp_off: i16,
    flags: u16,
}

impl Slot {
    fn of(ip: u64, rule: Option<Rule>) -> Slot {
        let Some(r) = rule else {
            return Slot {
                ip,
                cfa_off: 0,
                rbp_off: 0,
                flags: NONE,
            };
        };
        Slot {
            ip,
            cfa_off: r.cfa_off,
            rbp_off: r.rbp_off.unwrap_or(0),
            flags: if r.cfa_rbp { CFA_RBP } else { 0 }
                | if r.last { LAST } else { 0 }
                | if r.rbp_off.is_some() { RBP_SAVED } else { 0 },
        }
    }
}

/// The packed rule of [`backtrace`]'s own frame at its one address (0: not known yet).
static OWN_RULE: AtomicU64 = AtomicU64::new(0);
/// Bumped when objects were unloaded: each thread forgets its rules on seeing it.
pub static RULES_GEN: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
fn slot_of(ip: u64) -> usize {
    (ip.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CACHE_SLOTS.trailing_zeros())) as usize
}

#[inline(always)]
unsafe fn lookup(cache: *mut Slot, ip: u64) -> Slot {
    let s = &mut *cache.add(slot_of(ip));
    if s.ip != ip {
        miss(s, ip);
    }
    *s
}

#[cold]
#[inline(never)]
unsafe fn miss(s: &mut Slot, ip: u64) {
    // A return address: the call is the instruction before it (it may end its function).
    *s = Slot::of(ip, cfi::rule_at(ip.wrapping_sub(1)));
    if s.flags & NONE != 0 && cfi::uncovered(ip.wrapping_sub(1)) {
        s.flags |= NO_INFO;
    }
}

/// Forgets the thread's rules (objects were unloaded: their addresses may hold other code).
pub unsafe fn clear(cache: *mut Slot) {
    std::ptr::write_bytes(cache, 0, CACHE_SLOTS);
}

/// Fills `out` (`max` words) with the return addresses from this function's caller outward, as
/// `unw_backtrace` would from its own; `None`: some frame has no rule, libunwind must.
#[inline(never)]
pub unsafe fn backtrace(cache: *mut Slot, out: *mut u64, max: usize) -> Option<usize> {
    let (ip, mut sp, mut bp): (u64, u64, u64);
    std::arch::asm!(
        "lea {0}, [rip]",
        "mov {1}, rsp",
        "mov {2}, rbp",
        out(reg) ip,
        out(reg) sp,
        out(reg) bp,
        options(nomem, nostack, preserves_flags)
    );
    let mut w = OWN_RULE.load(Ordering::Relaxed);
    if w == 0 {
        // The first frame is at `ip` itself, not after a call.
        w = cfi::rule_at(ip).map_or(1, Rule::pack);
        OWN_RULE.store(w, Ordering::Relaxed);
    }
    if w == 1 {
        return None;
    }
    let mut rule = Slot::of(ip, Some(Rule::unpack(w)));
    let sp0 = sp;
    let mut n = 0;
    while n < max {
        let base = if rule.flags & CFA_RBP != 0 { bp } else { sp };
        let cfa = base.wrapping_add(rule.cfa_off as i64 as u64);
        // The caller's frame is above this one on the same stack.
        if cfa <= sp || cfa - sp0 > MAX_SPAN {
            return None;
        }
        let ra = *((cfa - 8) as *const u64);
        if rule.flags & RBP_SAVED != 0 {
            bp = *(cfa.wrapping_add(rule.rbp_off as i64 as u64) as *const u64);
        }
        sp = cfa;
        // An end without an undefined return address: libunwind's way of ending it.
        if ra == 0 {
            return None;
        }
        out.add(n).write(ra);
        n += 1;
        rule = lookup(cache, ra);
        if rule.flags & (NONE | LAST) != 0 {
            // A frame without unwind information whose `rbp` is 0: libunwind's frame-chain
            // fallback ends the stack there (x86_64/Gstep.c), as at the loader's
            // `_dl_start_user`, the caller of every constructor.
            if rule.flags & NONE != 0 && (rule.flags & NO_INFO == 0 || bp != 0) {
                return None;
            }
            break;
        }
    }
    Some(n)
}
