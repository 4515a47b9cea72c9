//! The process child's metadata start (`meta` line): what the model's bases start from.
//! Arena 0's base (`b0`: the global tables and the radix tree) as the replayer's start-up
//! left it, a fresh arena's base (read in the start-up constructor from the manual arena it
//! has just made, before anything used it), the radix tree's bytes (5.3.1's
//! `stats.metadata_rtree`; `-` on 5.3.0), and where the trace's mappings go (the lowest
//! worker stack) and start-up's heap lies (see `process/model/meta.rs`).

use crate::live::arena_mibs::arena_mib;
use crate::live::ctl::{read_mib, MallctlFn};
use crate::live::Api;
use crate::process::Metadata;
use anyhow::{Context, Result};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh arena's base: allocated, resident, mapped (0: not read).
static FRESH: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
/// Arena 0's base allocated bytes just before the constructor's `arenas.create`, then the
/// growth it made there: the control block `mallctl` keeps per manual arena (`ctl.c`'s
/// `arenas_i_impl`, from `b0`), 0 where unread.
static B0_BEFORE_CREATE: AtomicU64 = AtomicU64::new(0);
static CTL_ARENA: AtomicU64 = AtomicU64::new(0);

/// Arena 0's base allocated bytes now (the epoch advanced), `None` where unreadable.
unsafe fn b0_base(mallctl: MallctlFn) -> Option<u64> {
    let mut one: u64 = 1;
    let null = std::ptr::null_mut();
    let epoch = (&mut one as *mut u64).cast();
    if mallctl(c"epoch".as_ptr(), null, null.cast(), epoch, 8) != 0 {
        return None;
    }
    arena_stat(mallctl, 0, b"base")
}

/// Before the constructor's `arenas.create` (the first `mallctl` has set up `ctl.c`'s
/// per-arena blocks already).
pub(super) unsafe fn before_create(mallctl: MallctlFn) {
    if let Some(b) = b0_base(mallctl) {
        B0_BEFORE_CREATE.store(b, Ordering::SeqCst);
    }
}

/// `stats.arenas.<arena>.<field>` through `mallctl`, its name built on the stack (the
/// constructor runs before Rust's runtime and must not allocate).
///
/// # Safety
/// `mallctl` is jemalloc's; `field` names a `size_t` statistic.
unsafe fn arena_stat(mallctl: MallctlFn, arena: u32, field: &[u8]) -> Option<u64> {
    let mut name = [0u8; 64];
    let prefix = b"stats.arenas.";
    let mut n = prefix.len();
    name[..n].copy_from_slice(prefix);
    let digits = arena.to_string_lossless();
    for &d in digits.iter().skip_while(|&&d| d == 0) {
        name[n] = d;
        n += 1;
    }
    name[n] = b'.';
    n += 1;
    name[n..n + field.len()].copy_from_slice(field);
    let mut v: usize = 0;
    let mut len = std::mem::size_of::<usize>();
    let null = std::ptr::null_mut();
    let err = mallctl(
        name.as_ptr().cast(),
        (&mut v as *mut usize).cast(),
        &mut len,
        null,
        0,
    );
    (err == 0).then_some(v as u64)
}

/// An index's decimal digits, right-aligned in ten bytes with leading zero bytes.
trait Digits {
    fn to_string_lossless(self) -> [u8; 10];
}

impl Digits for u32 {
    fn to_string_lossless(self) -> [u8; 10] {
        let mut out = [0u8; 10];
        let mut v = self;
        for k in (0..10).rev() {
            out[k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        out
    }
}

/// Reads the manual arena `arena` the constructor has just made, as a fresh arena's base
/// (nothing has used it: its resident and mapped are its base's alone).
///
/// # Safety
/// As [`arena_stat`].
pub(super) unsafe fn read_fresh(mallctl: MallctlFn, arena: u32) {
    let before = B0_BEFORE_CREATE.load(Ordering::SeqCst);
    if let Some(after) = b0_base(mallctl).filter(|_| before > 0) {
        CTL_ARENA.store(after.saturating_sub(before), Ordering::SeqCst);
    }
    let mut one: u64 = 1;
    let null = std::ptr::null_mut();
    let epoch = (&mut one as *mut u64).cast();
    if mallctl(c"epoch".as_ptr(), null, null.cast(), epoch, 8) != 0 {
        return;
    }
    for (k, field) in [&b"base"[..], b"resident", b"mapped"].iter().enumerate() {
        if let Some(v) = arena_stat(mallctl, arena, field) {
            FRESH[k].store(v, Ordering::SeqCst);
        }
    }
}

/// Writes the `meta` line: `meta A0 R0 M0 AF RF MF RTREE BELOW HEAP LO HI CAP CTL` (arena
/// 0's base allocated, resident and mapped; the fresh arena's; the radix tree's bytes or `-`;
/// the addresses; [`b0_record_capacity`] or `-`; a manual arena's control block in `b0`, or
/// `-`).
pub(super) fn write_meta(
    api: &Api,
    page: u64,
    (below, heap): (u64, u64),
    capacity: Option<u64>,
    out: &mut impl Write,
) -> Result<()> {
    // SAFETY: writing epoch takes a uint64_t.
    unsafe { api.write("epoch", 1u64)? };
    let read = |name: &str| read_mib(api, &arena_mib(api, name, 0)?);
    let pages = read("stats.arenas.0.pactive")? + read("stats.arenas.0.pdirty")?;
    let resident = read("stats.arenas.0.resident")? - pages * page;
    let muzzy = read("stats.arenas.0.pmuzzy")?;
    let mapped = read("stats.arenas.0.mapped")? - (pages + muzzy) * page;
    let rtree = crate::live::ctl::mib(api, "stats.metadata_rtree")
        .and_then(|m| read_mib(api, &m))
        .map_or("-".to_string(), |r| r.to_string());
    let (lo, hi) = super::clocked_child::mapping_containing(heap).unwrap_or((0, 0));
    let fresh = FRESH.each_ref().map(|v| v.load(Ordering::SeqCst));
    writeln!(
        out,
        "meta {} {resident} {mapped} {} {} {} {rtree} {below} {heap} {lo} {hi} {} {}",
        read("stats.arenas.0.base")?,
        fresh[0],
        fresh[1],
        fresh[2],
        capacity.map_or("-".to_string(), |c| c.to_string()),
        match CTL_ARENA.load(Ordering::SeqCst) {
            0 => "-".to_string(),
            c => c.to_string(),
        }
    )?;
    Ok(())
}

/// The model's start from a `meta` line. On 5.3.0 (no `stats.metadata_rtree`) the tree is
/// taken as whole 2 MiB leaves of a 48-bit build (what start-up left beside them is under
/// 2 MiB) where arena 0's base starts at 2 MiB or more, else not modelled. The width is the
/// library's (`LG_VADDR`, fixed where it was built), not this machine's: Debian's 5.3.0 is a
/// 48-bit build also on a machine with 57 address bits, its base 2,734,064 bytes at start
/// there (a 57-bit build's whole tree at start is 786,432 bytes, its base under 2 MiB).
pub(crate) fn parse_meta(line: &str) -> Result<Metadata> {
    let bad = || format!("bad meta line from the child: '{line}'");
    let t: Vec<&str> = line
        .strip_prefix("meta ")
        .with_context(bad)?
        .split(' ')
        .collect();
    let num = |k: usize| -> Result<u64> { t.get(k).with_context(bad)?.parse().with_context(bad) };
    let a0 = num(0)?;
    let rtree = match t.get(6) {
        Some(&"-") => match a0 >= 2 << 20 {
            true => a0 / (2 << 20) * (2 << 20),
            false => 0,
        },
        _ => num(6)?,
    };
    Ok(Metadata {
        base_bytes: num(1)?,
        per_arena_bytes: num(4)?,
        base_allocated: a0,
        per_arena_allocated: num(3)?,
        rtree_bytes: rtree,
        below: num(7)?,
        heap: num(8)?,
        heap_mapping: (num(9)?, num(10)?),
        base_records: match t.get(11) {
            Some(&"-") | None => None,
            _ => Some(num(11)?),
        },
        ctl_arena_bytes: match t.get(12) {
            Some(&"-") | None => 0,
            _ => num(12)?,
        },
        // The child runs on this machine's kernel.
        map_align: crate::process::machine_map_align(),
        // The fresh arena is made in the start-up constructor (`read_fresh`), before the workers.
        idle_below: false,
    })
}

/// How many extent records arena 0's base (`b0`) holds in its free tails now: the one
/// figure of its start its statistics do not give (its blocks' gaps, lost to alignment, move
/// where a block runs out by a record or two). Measured in a copy of the process (`fork`):
/// large blocks from arena 0 without the cache, one at a time, each taking one new record
/// (the split's trail), `stats.arenas.0.base` read after each, until it grows by a block's
/// header. `None` where the copy could not tell (a block made by a call taking two records,
/// a radix-tree leaf, no block within the limit). Call it while the process has one thread.
pub(super) fn b0_record_capacity(api: &Api) -> Option<u64> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe fills two descriptors; fork's copy only calls jemalloc and writes the
    // pipe, then leaves with _exit.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return None;
        }
        let pid = libc::fork();
        if pid == 0 {
            libc::close(fds[0]);
            let n = count_records(api).unwrap_or(u64::MAX);
            libc::write(fds[1], (&n as *const u64).cast(), 8);
            libc::_exit(0);
        }
        libc::close(fds[1]);
        let mut n = u64::MAX;
        let got = if pid > 0 {
            libc::read(fds[0], (&mut n as *mut u64).cast(), 8)
        } else {
            0
        };
        libc::close(fds[0]);
        if pid > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        (got == 8 && n != u64::MAX).then_some(n)
    }
}

/// In the copy: records carved before `b0` makes a new block.
fn count_records(api: &Api) -> Option<u64> {
    let base = arena_mib(api, "stats.arenas.0.base", 0).ok()?;
    let read = || -> Option<u64> {
        // SAFETY: writing epoch takes a uint64_t.
        unsafe { api.write("epoch", 1u64).ok()? };
        read_mib(api, &base).ok()
    };
    // MALLOCX_ARENA(0) | MALLOCX_TCACHE_NONE.
    let flags = (1 << 20) | (1 << 8);
    // SAFETY: arenas.page is a size_t.
    let page = unsafe { api.read::<usize>("arenas.page").ok()? } as u64;
    let record = crate::process::edata_bytes(page);
    let (mut before, mut records) = (read()?, 0u64);
    for _ in 0..200_000 {
        // SAFETY: mallocx with a size and flags; the copy never frees.
        if unsafe { (api.mallocx)(16 << 10, flags) }.is_null() {
            return None;
        }
        let now = read()?;
        let d = now - before;
        before = now;
        if d % record == 0 {
            records += d / record;
            continue;
        }
        // A new block's header and the one record carved in it.
        let block = crate::process::base_header_bytes(page) + record;
        return (d == block).then_some(records);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meta_line_and_a_bad_one() {
        let m =
            parse_meta("meta 2639856 2646016 6291456 91152 94208 2097152 - 10 20 5 30").unwrap();
        assert_eq!(
            (m.base_allocated, m.per_arena_allocated),
            (2_639_856, 91_152)
        );
        assert_eq!((m.below, m.heap, m.heap_mapping), (10, 20, (5, 30)));
        let m = parse_meta("meta 1 2 3 4 5 6 786432 0 0 0 0 12345").unwrap();
        assert_eq!((m.rtree_bytes, m.base_records), (786_432, Some(12_345)));
        assert!(parse_meta("meta 1 2").is_err());
        assert!(parse_meta("s 1 2").is_err());
        assert_eq!(7u32.to_string_lossless()[9], b'7');
        assert_eq!(&12u32.to_string_lossless()[8..], b"12");
    }
}
