//! The one-arena live replay's snapshot line, written by its child (`arena_child.rs`) and
//! read by the parent (and by tests that run the child themselves): `s EVENT ALLOCATED
//! ACTIVE` then `CURREGS CURSLABS NONFULL_SLABS` per bin; `error MESSAGE` when the child
//! failed.

use crate::sim::{BinStats, Snapshot};
use anyhow::{bail, ensure, Context, Result};
use std::io::Write;

pub(super) fn write_snapshot(out: &mut impl Write, s: &Snapshot) -> std::io::Result<()> {
    write!(
        out,
        "s {} {} {}",
        s.event, s.allocated_bytes, s.active_bytes
    )?;
    for b in &s.bins {
        write!(out, " {} {} {}", b.curregs, b.curslabs, b.nonfull_slabs)?;
    }
    writeln!(out)
}

/// One snapshot line (an `error` line is the child's error).
pub fn parse_snapshot(line: &str) -> Result<Snapshot> {
    if let Some(err) = line.strip_prefix("error ") {
        bail!("live replay: {err}");
    }
    let nums = line
        .strip_prefix("s ")
        .with_context(|| format!("bad snapshot line from the child: '{line}'"))?
        .split(' ')
        .map(|t| t.parse::<u64>().context("bad number from the child"))
        .collect::<Result<Vec<_>>>()?;
    ensure!(
        nums.len() >= 3 && (nums.len() - 3) % 3 == 0,
        "bad snapshot line"
    );
    Ok(Snapshot {
        event: nums[0],
        allocated_bytes: nums[1],
        active_bytes: nums[2],
        bins: nums[3..]
            .chunks(3)
            .map(|c| BinStats {
                curregs: c[0],
                curslabs: c[1],
                nonfull_slabs: c[2],
            })
            .collect(),
    })
}
