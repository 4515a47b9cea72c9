//! Predicted against measured process snapshots: pure data, no allocator involved.

use super::{ArenaSnapshot, ProcessSnapshot};
use crate::sim::{Comparison, Mismatch};

/// Compares two snapshots taken at the same event and adds the outcome to `out`: the
/// totals, then per arena (matched by index) allocated, active and cache bytes, mapped and
/// retained bytes (arenas other than 0, on both sides) and each bin's counters. An arena on one side only compares as all zeros: the live replayer's
/// main thread keeps arena 0 as its internal arena, so a worker's first call may create an
/// empty arena early for its internal allocations (`arena_choose_hard`, `j = 1`), which a
/// real process creates at the next thread's first call; which arena a thread uses is
/// unaffected.
pub fn compare_snapshots(
    p: &ProcessSnapshot,
    m: &ProcessSnapshot,
    keep: usize,
    out: &mut Comparison,
) {
    let before = out.mismatched_values;
    out.snapshots += 1;
    let check = |out: &mut Comparison, name: &dyn Fn() -> String, a: u64, b: u64| {
        out.values += 1;
        if a != b {
            out.mismatched_values += 1;
            if out.first.len() < keep {
                out.first.push(Mismatch {
                    event: p.event,
                    statistic: name(),
                    predicted: a,
                    measured: b,
                });
            }
        }
    };
    check(out, &|| "event".into(), p.event, m.event);
    check(
        out,
        &|| "stats.allocated".into(),
        p.allocated_bytes,
        m.allocated_bytes,
    );
    check(
        out,
        &|| "stats.active".into(),
        p.active_bytes,
        m.active_bytes,
    );
    let empty = ArenaSnapshot::default();
    let mut indices: Vec<u32> = p.arenas.iter().chain(&m.arenas).map(|a| a.index).collect();
    indices.sort_unstable();
    indices.dedup();
    for i in indices {
        let pa = p.arenas.iter().find(|a| a.index == i);
        let ma = m.arenas.iter().find(|a| a.index == i);
        let (pa, ma) = (pa.unwrap_or(&empty), ma.unwrap_or(&empty));
        check(
            out,
            &|| format!("arena.{i}.allocated"),
            pa.allocated_bytes,
            ma.allocated_bytes,
        );
        check(
            out,
            &|| format!("arena.{i}.active"),
            pa.active_bytes,
            ma.active_bytes,
        );
        check(
            out,
            &|| format!("arena.{i}.tcache_bytes"),
            pa.tcache_bytes,
            ma.tcache_bytes,
        );
        // Mappings where both sides have the arena and it is not arena 0: arena 0's base
        // holds the radix tree's leaves (placed by the kernel's address choice) and, live,
        // the replayer's start-up; an arena on one side only is the live replayer's early one.
        if i > 0 && pa.index == ma.index {
            check(
                out,
                &|| format!("arena.{i}.mapped"),
                pa.mapped_bytes,
                ma.mapped_bytes,
            );
            check(
                out,
                &|| format!("arena.{i}.retained"),
                pa.retained_bytes,
                ma.retained_bytes,
            );
        }
        let nbins = pa.bins.len().max(ma.bins.len());
        for j in 0..nbins {
            let pb = pa.bins.get(j).copied().unwrap_or_default();
            let mb = ma.bins.get(j).copied().unwrap_or_default();
            check(
                out,
                &|| format!("arena.{i}.bins.{j}.curregs"),
                pb.curregs,
                mb.curregs,
            );
            check(
                out,
                &|| format!("arena.{i}.bins.{j}.curslabs"),
                pb.curslabs,
                mb.curslabs,
            );
            check(
                out,
                &|| format!("arena.{i}.bins.{j}.nonfull_slabs"),
                pb.nonfull_slabs,
                mb.nonfull_slabs,
            );
        }
    }
    // The event check is bookkeeping, not a statistic.
    out.values -= 1;
    if out.mismatched_values > before {
        out.mismatched_snapshots += 1;
    }
}
