//! Predicted against measured process snapshots: pure data, no allocator involved.

use super::{ArenaSnapshot, ProcessSnapshot};
use crate::sim::compare::Checker;
use crate::sim::Comparison;

/// Compares two snapshots taken at the same event and adds the outcome to `out`: the
/// totals (allocated, active, metadata and mapped exactly, resident within
/// `resident_tolerance`), then per arena (matched by index) allocated, active and cache
/// bytes, mapped and retained bytes (arenas on both sides) and each bin's counters. An arena on one side only compares as all zeros: the live replayer's
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
    let mut c = Checker::new(&mut *out, p.event, keep);
    c.check(|| "event".into(), p.event, m.event);
    c.check(
        || "stats.allocated".into(),
        p.allocated_bytes,
        m.allocated_bytes,
    );
    c.check(|| "stats.active".into(), p.active_bytes, m.active_bytes);
    c.check(
        || "stats.metadata".into(),
        p.metadata_bytes,
        m.metadata_bytes,
    );
    c.check(|| "stats.mapped".into(), p.mapped_bytes, m.mapped_bytes);
    // Resident within 1% or 256 KiB (the larger): a base counts every page up to its bump
    // pointer, whose place in its last page start-up's allocations decide (the model knows
    // it to a page per block), and a radix-tree leaf lies where the kernel maps memory.
    let within =
        p.resident_bytes.abs_diff(m.resident_bytes) <= resident_tolerance(m.resident_bytes);
    c.check(
        || "stats.resident (within 1% or 256 KiB)".into(),
        if within {
            m.resident_bytes
        } else {
            p.resident_bytes
        },
        m.resident_bytes,
    );
    let empty = ArenaSnapshot::default();
    let mut indices: Vec<u32> = p.arenas.iter().chain(&m.arenas).map(|a| a.index).collect();
    indices.sort_unstable();
    indices.dedup();
    for i in indices {
        let pa = p.arenas.iter().find(|a| a.index == i);
        let ma = m.arenas.iter().find(|a| a.index == i);
        compare_arena(&mut c, i, pa.unwrap_or(&empty), ma.unwrap_or(&empty));
    }
    // The event check is bookkeeping, not a statistic.
    out.values -= 1;
    if out.mismatched_values > before {
        out.mismatched_snapshots += 1;
    }
}

/// How far a modelled `stats.resident` may be from the measured `resident` bytes: 1% or
/// 256 KiB, whichever is larger.
pub fn resident_tolerance(resident: u64) -> u64 {
    (resident / 100).max(256 << 10)
}

/// Arena `i`'s allocated, active and cache bytes, its mapped and retained bytes (arenas
/// present on both sides), then each bin's counters (a bin on one
/// side only compares as all zeros).
fn compare_arena(c: &mut Checker, i: u32, pa: &ArenaSnapshot, ma: &ArenaSnapshot) {
    c.check(
        || format!("arena.{i}.allocated"),
        pa.allocated_bytes,
        ma.allocated_bytes,
    );
    c.check(
        || format!("arena.{i}.active"),
        pa.active_bytes,
        ma.active_bytes,
    );
    c.check(
        || format!("arena.{i}.tcache_bytes"),
        pa.tcache_bytes,
        ma.tcache_bytes,
    );
    // Mappings where both sides have the arena (its base blocks included: arena 0's holds
    // the radix tree's leaves); an arena on one side only is the live replayer's early one.
    if pa.index == ma.index {
        c.check(
            || format!("arena.{i}.mapped"),
            pa.mapped_bytes,
            ma.mapped_bytes,
        );
        c.check(
            || format!("arena.{i}.retained"),
            pa.retained_bytes,
            ma.retained_bytes,
        );
    }
    let nbins = pa.bins.len().max(ma.bins.len());
    for j in 0..nbins {
        let pb = pa.bins.get(j).copied().unwrap_or_default();
        let mb = ma.bins.get(j).copied().unwrap_or_default();
        c.bin(&|| format!("arena.{i}.bins.{j}"), &pb, &mb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(metadata: u64, resident: u64, mapped: u64) -> ProcessSnapshot {
        ProcessSnapshot {
            event: 1,
            metadata_bytes: metadata,
            resident_bytes: resident,
            mapped_bytes: mapped,
            ..ProcessSnapshot::default()
        }
    }

    /// Metadata and mapped must be equal; resident may be off by 1% or 256 KiB, the larger.
    #[test]
    fn metadata_and_mapped_exact_resident_within_its_tolerance() {
        let live = totals(10_000_000, 1_000_000_000, 1_100_000_000);
        let mut c = Comparison::default();
        compare_snapshots(&live, &live, 5, &mut c);
        assert!(c.is_exact());
        for (model, bad) in [
            (totals(10_000_128, 1_000_000_000, 1_100_000_000), true),
            (totals(10_000_000, 1_000_000_000, 1_102_097_152), true),
            (totals(10_000_000, 1_010_000_000, 1_100_000_000), false),
            (totals(10_000_000, 1_010_000_001, 1_100_000_000), true),
        ] {
            let mut c = Comparison::default();
            compare_snapshots(&model, &live, 5, &mut c);
            assert_eq!(c.mismatched_values > 0, bad, "{model:?}");
        }
        // Small heaps: 256 KiB.
        assert_eq!(resident_tolerance(3_000_000), 256 << 10);
        assert_eq!(resident_tolerance(1_000_000_000), 10_000_000);
    }
}
