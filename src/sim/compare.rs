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

/// "event N statistic: predicted P, measured M", as every mismatch is reported.
impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "event {} {}: predicted {}, measured {}",
            self.event, self.statistic, self.predicted, self.measured
        )
    }
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

    /// A live comparison's named fields, the ones every command and report shows: `events`
    /// replayed, snapshots and values compared and mismatched, and the first mismatches in
    /// one text field when there are any.
    pub fn summary(&self, title: impl Into<String>, events: u64) -> crate::export::Summary {
        let mut r = crate::export::Summary::new(title);
        r.field("events", "events", events)
            .field("snapshots_compared", "snapshots compared", self.snapshots)
            .field("values_compared", "values compared", self.values)
            .field(
                "snapshots_mismatched",
                "snapshots mismatched",
                self.mismatched_snapshots,
            )
            .field(
                "values_mismatched",
                "values mismatched",
                self.mismatched_values,
            );
        if !self.first.is_empty() {
            let first: Vec<String> = self.first.iter().map(|m| m.to_string()).collect();
            r.field("first_mismatches", "first mismatches", first.join("; "));
        }
        r
    }

    /// The first differing statistic as the validation tables show it (empty when exact).
    pub(crate) fn first_text(&self) -> String {
        self.first.first().map_or(String::new(), |m| m.to_string())
    }
}

/// Compares the snapshots taken at the same events; `measured` events with no prediction
/// (or the reverse) count as a mismatch of the statistic `event`.
pub fn compare(predicted: &[Snapshot], measured: &[Snapshot], keep: usize) -> Comparison {
    let mut out = Comparison::default();
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
                Checker::new(&mut out, pe.max(me), keep).note("event".into(), pe, me);
                continue;
            }
        };
        out.snapshots += 1;
        let before = out.mismatched_values;
        let mut c = Checker::new(&mut out, p.event, keep);
        c.check(|| "event".into(), p.event, m.event);
        c.check(
            || "allocated_bytes".into(),
            p.allocated_bytes,
            m.allocated_bytes,
        );
        c.check(|| "active_bytes".into(), p.active_bytes, m.active_bytes);
        if p.bins.len() != m.bins.len() {
            c.check(
                || "bin_count".into(),
                p.bins.len() as u64,
                m.bins.len() as u64,
            );
        }
        for (j, (pb, mb)) in p.bins.iter().zip(&m.bins).enumerate() {
            c.bin(&|| format!("bins.{j}"), pb, mb);
        }
        out.values -= 1; // the event check above is bookkeeping, not a statistic
        if out.mismatched_values > before {
            out.mismatched_snapshots += 1;
        }
    }
    out
}

/// Counts the values compared at one event into a [`Comparison`], keeping the first
/// `keep` mismatches (their names built only then).
pub(crate) struct Checker<'a> {
    out: &'a mut Comparison,
    event: u64,
    keep: usize,
}

impl<'a> Checker<'a> {
    pub fn new(out: &'a mut Comparison, event: u64, keep: usize) -> Self {
        Checker { out, event, keep }
    }

    /// One value compared.
    pub fn check(&mut self, name: impl FnOnce() -> String, predicted: u64, measured: u64) {
        self.out.values += 1;
        if predicted != measured {
            self.note(name(), predicted, measured);
        }
    }

    /// One mismatch (not counted as a value compared).
    pub fn note(&mut self, statistic: String, predicted: u64, measured: u64) {
        self.out.mismatched_values += 1;
        if self.out.first.len() < self.keep {
            self.out.first.push(Mismatch {
                event: self.event,
                statistic,
                predicted,
                measured,
            });
        }
    }

    /// A bin's three counters, named `<prefix>.curregs` and so on.
    pub fn bin(&mut self, prefix: &dyn Fn() -> String, p: &BinStats, m: &BinStats) {
        self.check(|| format!("{}.curregs", prefix()), p.curregs, m.curregs);
        self.check(|| format!("{}.curslabs", prefix()), p.curslabs, m.curslabs);
        self.check(
            || format!("{}.nonfull_slabs", prefix()),
            p.nonfull_slabs,
            m.nonfull_slabs,
        );
    }
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
