//! jemalloc's own account of where the chunks lived and what happened to their pages.

use super::{ChildReport, JemallocSetting};
use crate::export::{Cell, Table};

const MIB: f64 = (1u64 << 20) as f64;

/// Per (setting, strategy), from the child's statistics: the arena that held the large
/// allocations at the peak (is it the huge arena?), the dirty and muzzy pages left after the
/// reset, and how many pages jemalloc purged per warm run.
pub fn stats_table(results: &[(JemallocSetting, ChildReport)]) -> Table {
    let mut table = Table::new(
        "jemalloc statistics per child (last run unless stated)",
        &[
            "jemalloc",
            "strategy",
            "huge_arena",
            "large_arena_at_peak",
            "large_at_peak_mib",
            "dirty_after_reset_mib",
            "muzzy_after_reset_mib",
            "purged_per_warm_run_mib",
            "mapped_after_reset_mib",
        ],
    );
    for (setting, report) in results {
        let Some(last) = report.runs.last() else {
            continue;
        };
        let page = report.jemalloc.page as f64;
        let huge = report.jemalloc.huge_arena;
        let largest = last.at_peak.iter().max_by_key(|a| a.large_allocated);
        let where_large = largest.map_or("-".to_string(), |a| {
            if Some(a.arena) == huge {
                format!("{} (huge)", a.arena)
            } else {
                a.arena.to_string()
            }
        });
        let sum = |f: fn(&super::ArenaPages) -> u64, pages: &[super::ArenaPages]| -> u64 {
            pages.iter().map(f).sum()
        };
        // The counter is per process: each warm run adds what it purged since the run before
        // it in the same process (a report may hold several children's runs).
        let purged: u64 = report
            .runs
            .windows(2)
            .filter(|w| w[1].run == w[0].run + 1)
            .map(|w| {
                sum(|a| a.dirty_purged, &w[1].after_reset)
                    .saturating_sub(sum(|a| a.dirty_purged, &w[0].after_reset))
            })
            .sum();
        let warm_runs = report.runs.iter().filter(|r| r.run > 1).count().max(1) as f64;
        table.push(vec![
            setting.key().into(),
            report.strategy.key().into(),
            huge.map_or(Cell::Text("none".into()), |h| Cell::Int(h as u64)),
            where_large.into(),
            Cell::Float(largest.map_or(0.0, |a| a.large_allocated as f64 / MIB), 1),
            Cell::Float(sum(|a| a.pdirty, &last.after_reset) as f64 * page / MIB, 1),
            Cell::Float(sum(|a| a.pmuzzy, &last.after_reset) as f64 * page / MIB, 1),
            Cell::Float(purged as f64 * page / MIB / warm_runs, 1),
            Cell::Float(sum(|a| a.mapped, &last.after_reset) as f64 / MIB, 1),
        ]);
    }
    table
}
