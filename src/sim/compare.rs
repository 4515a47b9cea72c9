//! Predicted against measured snapshots: pure data, no allocator involved.

use super::BinStats;
use serde::Serialize;

/// The statistics compared at one event (counted from 1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    pub event: u64,
    /// `small.allocated + large.allocated`.
    pub allocated_bytes: u64,
    /// `pactive` times the page size.
    pub active_bytes: u64,
    /// Per bin: `curregs`, `curslabs`, `nonfull_slabs`.
    pub bins: Vec<BinStats>,
}

/// One statistic that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub event: u64,
    /// e.g. `active_bytes` or `bins.3.nonfull_slabs`.
    pub statistic: String,
    pub predicted: u64,
    pub measured: u64,
}

/// The outcome of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// Snapshots compared (events at which both sides were read).
    pub snapshots: u64,
    /// Statistics compared in all (two per snapshot plus three per bin).
    pub values: u64,
    /// Snapshots with at least one differing statistic.
    pub mismatched_snapshots: u64,
    /// Statistics that differ, over all snapshots.
    pub mismatched_values: u64,
    /// The first differing statistics, in event order (at most `keep`).
    pub first: Vec<Mismatch>,
}

impl Comparison {
    pub fn is_exact(&self) -> bool {
        self.mismatched_values == 0
    }
}

/// Compares the snapshots taken at the same events; `measured` events with no prediction
/// (or the reverse) count as a mismatch of the statistic `event`.
pub fn compare(predicted: &[Snapshot], measured: &[Snapshot], keep: usize) -> Comparison {
    let mut out = Comparison::default();
    let note = |out: &mut Comparison, event, statistic: String, p: u64, m: u64| {
        out.mismatched_values += 1;
        if out.first.len() < keep {
            out.first.push(Mismatch {
                event,
                statistic,
                predicted: p,
                measured: m,
            });
        }
    };
    let n = predicted.len().max(measured.len());
    for i in 0..n {
        let (p, m) = match (predicted.get(i), measured.get(i)) {
            (Some(p), Some(m)) => (p, m),
            (p, m) => {
                let pe = p.map_or(0, |s| s.event);
                let me = m.map_or(0, |s| s.event);
                out.snapshots += 1;
                out.values += 1;
                out.mismatched_snapshots += 1;
                note(&mut out, pe.max(me), "event".into(), pe, me);
                continue;
            }
        };
        out.snapshots += 1;
        let before = out.mismatched_values;
        out.values += 1;
        if p.event != m.event {
            note(&mut out, p.event, "event".into(), p.event, m.event);
        }
        let check = |out: &mut Comparison, name: &dyn Fn() -> String, a: u64, b: u64| {
            out.values += 1;
            if a != b {
                note(out, p.event, name(), a, b);
            }
        };
        check(
            &mut out,
            &|| "allocated_bytes".into(),
            p.allocated_bytes,
            m.allocated_bytes,
        );
        check(
            &mut out,
            &|| "active_bytes".into(),
            p.active_bytes,
            m.active_bytes,
        );
        if p.bins.len() != m.bins.len() {
            check(
                &mut out,
                &|| "bin_count".into(),
                p.bins.len() as u64,
                m.bins.len() as u64,
            );
        }
        for (j, (pb, mb)) in p.bins.iter().zip(&m.bins).enumerate() {
            check(
                &mut out,
                &|| format!("bins.{j}.curregs"),
                pb.curregs,
                mb.curregs,
            );
            check(
                &mut out,
                &|| format!("bins.{j}.curslabs"),
                pb.curslabs,
                mb.curslabs,
            );
            check(
                &mut out,
                &|| format!("bins.{j}.nonfull_slabs"),
                pb.nonfull_slabs,
                mb.nonfull_slabs,
            );
        }
        out.values -= 1; // the event check above is bookkeeping, not a statistic
        if out.mismatched_values > before {
            out.mismatched_snapshots += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(event: u64, active: u64, curregs: u64) -> Snapshot {
        Snapshot {
            event,
            allocated_bytes: 8,
            active_bytes: active,
            bins: vec![BinStats {
                curregs,
                curslabs: 1,
                nonfull_slabs: 0,
            }],
        }
    }

    #[test]
    fn counts_and_names_differences() {
        let p = [snap(1, 4096, 1), snap(2, 4096, 2)];
        let m = [snap(1, 4096, 1), snap(2, 8192, 3)];
        let c = compare(&p, &m, 10);
        assert_eq!(c.snapshots, 2);
        assert_eq!(c.values, 10);
        assert_eq!(c.mismatched_snapshots, 1);
        assert_eq!(c.mismatched_values, 2);
        assert_eq!(c.first[0].statistic, "active_bytes");
        assert_eq!(c.first[1].statistic, "bins.0.curregs");
        assert_eq!((c.first[1].predicted, c.first[1].measured), (2, 3));
        assert!(compare(&p, &p, 10).is_exact());
    }
}
