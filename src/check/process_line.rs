//! The process child's snapshot line (`crate::check::process`): `s EVENT ALLOCATED ACTIVE
//! METADATA RESIDENT MAPPED NARENAS`, then per arena `INDEX ALLOCATED ACTIVE TCACHE MAPPED
//! RETAINED NBINS` and `CURREGS CURSLABS NONFULL_SLABS` per bin; written by the child
//! (`baton.rs`), read by the parent; `error MESSAGE` when the child failed.

use crate::process::{ArenaSnapshot, ProcessSnapshot};
use crate::sim::BinStats;
use anyhow::{bail, Context, Result};
use std::io::Write;

/// A decimal `u64` as the child writes it (digits only): parsed off the bytes, as the parent
/// reads a line per comparison with hundreds of numbers (`--every 1`).
fn parse_number(t: &[u8]) -> Result<u64> {
    let bad = || anyhow::anyhow!("bad number from the child");
    if t.is_empty() {
        return Err(bad());
    }
    t.iter().try_fold(0u64, |v, &b| {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(bad());
        }
        v.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or_else(bad)
    })
}

pub(super) fn parse_snapshot(line: &str) -> Result<ProcessSnapshot> {
    if let Some(err) = line.strip_prefix("error ") {
        bail!("live process replay: {err}");
    }
    let mut it = line
        .strip_prefix("s ")
        .with_context(|| format!("bad snapshot line from the child: '{line}'"))?
        .as_bytes()
        .split(|&b| b == b' ')
        .map(parse_number);
    let mut next = || it.next().context("short snapshot line")?;
    let mut s = ProcessSnapshot {
        event: next()?,
        allocated_bytes: next()?,
        active_bytes: next()?,
        metadata_bytes: next()?,
        resident_bytes: next()?,
        mapped_bytes: next()?,
        arenas: Vec::new(),
    };
    for _ in 0..next()? {
        let mut a = ArenaSnapshot {
            index: next()? as u32,
            allocated_bytes: next()?,
            active_bytes: next()?,
            tcache_bytes: next()?,
            mapped_bytes: next()?,
            retained_bytes: next()?,
            bins: Vec::new(),
        };
        for _ in 0..next()? {
            a.bins.push(BinStats {
                curregs: next()?,
                curslabs: next()?,
                nonfull_slabs: next()?,
            });
        }
        s.arenas.push(a);
    }
    Ok(s)
}

pub(super) fn write_snapshot(out: &mut impl Write, s: &ProcessSnapshot) -> std::io::Result<()> {
    write!(
        out,
        "s {} {} {} {} {} {} {}",
        s.event,
        s.allocated_bytes,
        s.active_bytes,
        s.metadata_bytes,
        s.resident_bytes,
        s.mapped_bytes,
        s.arenas.len()
    )?;
    for a in &s.arenas {
        write!(
            out,
            " {} {} {} {} {} {} {}",
            a.index,
            a.allocated_bytes,
            a.active_bytes,
            a.tcache_bytes,
            a.mapped_bytes,
            a.retained_bytes,
            a.bins.len()
        )?;
        for b in &a.bins {
            write!(out, " {} {} {}", b.curregs, b.curslabs, b.nonfull_slabs)?;
        }
    }
    writeln!(out)
}
