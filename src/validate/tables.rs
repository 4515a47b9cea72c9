//! The replay checks as tables, one row per trace and allocator: the one-arena model's
//! random traces (`live::arena_replay`'s checks) and the process model's threaded traces
//! (`validate/process.rs`). Both share the allocator and seed in front and what the
//! comparison found at the end.

use super::ProcessCheck;
use crate::check::arena_replay::ReplayCheck;
use crate::export::{Cell, Table};
use crate::sim::Comparison;

/// A table of checks: `allocator` and `seed`, then the `columns` that describe each check,
/// then the values compared, mismatched and the first mismatch. `row` gives a check's
/// allocator, seed, cells for `columns` and comparison.
fn checks_table<'a, C>(
    title: &str,
    columns: &[&str],
    checks: &'a [C],
    row: impl Fn(&'a C) -> (&'a str, u64, Vec<Cell>, &'a Comparison),
) -> Table {
    let mut names = vec!["allocator", "seed"];
    names.extend_from_slice(columns);
    names.extend(["values_compared", "values_mismatched", "first_mismatch"]);
    let mut t = Table::new(title, &names);
    for c in checks {
        let (allocator, seed, cells, comparison) = row(c);
        let mut r: Vec<Cell> = vec![allocator.to_string().into(), seed.into()];
        r.extend(cells);
        r.extend([
            comparison.values.into(),
            comparison.mismatched_values.into(),
            comparison.first_text().into(),
        ]);
        t.push(r);
    }
    t
}

/// The one-arena checks as a table: one row per trace and allocator.
pub fn replay_validation_table(checks: &[ReplayCheck]) -> Table {
    checks_table(
        "arena model vs live jemalloc, random traces, every event",
        &["events", "large_share", "snapshots"],
        checks,
        |c| {
            let cells = vec![
                c.spec.events.into(),
                Cell::Float(c.spec.large_share, 2),
                c.comparison.snapshots.into(),
            ];
            (&c.allocator, c.spec.seed, cells, &c.comparison)
        },
    )
}

/// The process checks as a table: one row per trace and jemalloc.
pub fn process_validation_table(checks: &[ProcessCheck]) -> Table {
    checks_table(
        "process model vs live jemalloc, generated threaded traces, every event",
        &[
            "malloc_conf",
            "threads",
            "narenas",
            "cross_thread_frees",
            "huge_requests",
            "thread_exits",
            "events",
        ],
        checks,
        |c| {
            let cells = vec![
                c.conf.clone().into(),
                u64::from(c.shape.threads).into(),
                u64::from(c.narenas).into(),
                c.shape.cross_thread_frees.into(),
                c.shape.huge_requests.into(),
                c.shape.thread_exits.into(),
                c.events.into(),
            ];
            (&c.allocator, c.spec.seed, cells, &c.comparison)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{Markdown, TableFormat};

    /// The committed report's row for `check` (found by its first cells), with the table's
    /// header and alignment lines: what `fragsim report` wrote with the tables as they were.
    fn committed(header_start: &str, row_start: &str) -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/reports/validation.md");
        let report = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = report.lines().collect();
        let h = lines
            .iter()
            .position(|l| l.starts_with(header_start))
            .unwrap();
        let row = lines[h..]
            .iter()
            .find(|l| l.starts_with(row_start))
            .unwrap();
        format!("{}\n{}\n{row}\n", lines[h], lines[h + 1])
    }

    fn comparison(snapshots: u64, values: u64) -> Comparison {
        Comparison {
            snapshots,
            values,
            ..Comparison::default()
        }
    }

    fn markdown(mut t: Table) -> String {
        t.title.clear();
        Markdown.render(&t).unwrap()
    }

    #[test]
    fn the_replay_table_writes_the_committed_row() {
        let check = ReplayCheck {
            allocator: "jemalloc 5.3.1 (linked), disable_large_size_classes:true (5.3.1)".into(),
            spec: crate::sim::WorkloadSpec {
                seed: 2,
                large_share: 0.4,
                ..crate::sim::WorkloadSpec::default()
            },
            comparison: comparison(20_000, 2_200_000),
        };
        let want = committed(
            "| allocator | seed | events | large_share |",
            "| jemalloc 5.3.1 (linked), disable_large_size_classes:true (5.3.1) | 2 |",
        );
        assert_eq!(markdown(replay_validation_table(&[check])), want);
    }

    #[test]
    fn the_process_table_writes_the_committed_row() {
        let check = ProcessCheck {
            allocator: "linked jemalloc (5.3.1)".into(),
            spec: crate::process::ThreadedSpec {
                seed: 21,
                ..crate::process::ThreadedSpec::default()
            },
            conf: "narenas:4".into(),
            narenas: 4,
            shape: super::super::TraceShape {
                threads: 12,
                cross_thread_frees: 1217,
                huge_requests: 9,
                thread_exits: 11,
                ..super::super::TraceShape::default()
            },
            events: 6011,
            comparison: comparison(6011, 3_326_347),
        };
        let want = committed(
            "| allocator | seed | malloc_conf |",
            "| linked jemalloc (5.3.1) | 21 |",
        );
        assert_eq!(markdown(process_validation_table(&[check])), want);
    }
}
