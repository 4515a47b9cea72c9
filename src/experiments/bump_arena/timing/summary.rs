//! Cold and warm, reported apart: the first run of a fresh process and the later runs.

use super::{ChildReport, CxxRun, JemallocSetting, TimedStrategy};
use crate::export::{Cell, Table};

/// One phase's numbers over the runs it covers.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSummary {
    /// Median build + reset time (ms) over the phase's runs (cold: run 1 of each process).
    pub total_ms: f64,
    pub build_ms: f64,
    pub reset_ms: f64,
    /// Fastest and slowest build + reset (ms).
    pub total_range_ms: (f64, f64),
    /// Fewest and most page faults of one build + reset.
    pub faults: (u64, u64),
    pub runs: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// (build ms, reset ms, faults) of each run summarised; `None` for no runs.
fn phase(runs: &[(f64, f64, u64)]) -> Option<PhaseSummary> {
    if runs.is_empty() {
        return None;
    }
    let totals: Vec<f64> = runs.iter().map(|r| r.0 + r.1).collect();
    let faults = runs.iter().map(|r| r.2);
    Some(PhaseSummary {
        total_ms: median(totals.clone()),
        build_ms: median(runs.iter().map(|r| r.0).collect()),
        reset_ms: median(runs.iter().map(|r| r.1).collect()),
        total_range_ms: (
            totals.iter().copied().fold(f64::INFINITY, f64::min),
            totals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ),
        faults: (faults.clone().min().unwrap_or(0), faults.max().unwrap_or(0)),
        runs: runs.len(),
    })
}

/// One (setting, strategy): the cold run and the warm runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub setting: JemallocSetting,
    pub strategy: TimedStrategy,
    pub cold: PhaseSummary,
    pub warm: PhaseSummary,
}

/// Splits each report's runs: run 1 of a process cold, its later runs warm (a report may
/// hold several children's runs, each numbered within its process).
pub fn summarize(results: &[(JemallocSetting, ChildReport)]) -> Vec<Summary> {
    results
        .iter()
        .filter_map(|(setting, report)| {
            let (cold, warm): (Vec<_>, Vec<_>) = report.runs.iter().partition(|r| r.run == 1);
            let phase_of = |runs: Vec<&super::RunSample>| {
                let rows: Vec<(f64, f64, u64)> = runs
                    .iter()
                    .map(|r| {
                        (
                            r.build_ns as f64 / 1e6,
                            r.reset_ns as f64 / 1e6,
                            r.build_faults + r.reset_faults,
                        )
                    })
                    .collect();
                phase(&rows)
            };
            Some(Summary {
                setting: *setting,
                strategy: report.strategy,
                cold: phase_of(cold)?,
                warm: phase_of(warm)?,
            })
        })
        .collect()
}

/// One C++ (allocator, strategy), cold and warm.
#[derive(Clone, Debug, PartialEq)]
pub struct CxxSummary {
    pub allocator: String,
    pub strategy: String,
    pub cold: PhaseSummary,
    pub warm: PhaseSummary,
}

/// The C++ runs grouped by (allocator, strategy) in the order they came.
pub fn summarize_cxx(runs: &[CxxRun]) -> Vec<CxxSummary> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in runs {
        let key = (r.allocator.clone(), r.strategy.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .filter_map(|(allocator, strategy)| {
            let mut mine: Vec<&CxxRun> = runs
                .iter()
                .filter(|r| r.allocator == allocator && r.strategy == strategy)
                .collect();
            mine.sort_by_key(|r| r.run);
            let rows: Vec<(f64, f64, u64)> = mine
                .iter()
                .map(|r| {
                    (
                        r.build_us / 1e3,
                        r.reset_us / 1e3,
                        r.build_faults + r.reset_faults,
                    )
                })
                .collect();
            Some(CxxSummary {
                allocator,
                strategy,
                cold: phase(rows.get(..1)?)?,
                warm: phase(rows.get(1..)?)?,
            })
        })
        .collect()
}

/// The seed's printed finding: build + reset about half the general allocator's.
pub const SEED_TOTAL_RATIO: f64 = 0.5;

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// Every measured (setting, strategy) with cold and warm times and page faults.
/// `with_times`: false leaves the time columns out (for committed, byte-stable files).
pub fn timing_table(summaries: &[Summary], with_times: bool) -> Table {
    let mut columns = vec!["jemalloc", "strategy"];
    if with_times {
        columns.extend(["cold_ms", "warm_ms", "warm_min_ms", "warm_max_ms"]);
        columns.extend(["warm_build_ms", "warm_reset_ms"]);
    }
    columns.extend([
        "cold_faults",
        "warm_faults_min",
        "warm_faults_max",
        "warm_runs",
    ]);
    let mut table = Table::new(
        "build + reset, cold (a process's first build) and warm (its later builds)",
        &columns,
    );
    for s in summaries {
        let mut row: Vec<Cell> = vec![s.setting.key().into(), s.strategy.key().into()];
        if with_times {
            row.extend([
                Cell::Float(s.cold.total_ms, 1),
                Cell::Float(s.warm.total_ms, 1),
                Cell::Float(s.warm.total_range_ms.0, 1),
                Cell::Float(s.warm.total_range_ms.1, 1),
                Cell::Float(s.warm.build_ms, 1),
                Cell::Float(s.warm.reset_ms, 2),
            ]);
        }
        row.extend([
            s.cold.faults.0.into(),
            s.warm.faults.0.into(),
            s.warm.faults.1.into(),
            (s.warm.runs as u64).into(),
        ]);
        table.push(row);
    }
    table
}

/// Each strategy's build + reset over the general allocator's under the same setting, cold
/// and warm, beside the seed's.
pub fn ratio_table(summaries: &[Summary]) -> Table {
    let mut table = Table::new(
        "build + reset time / general allocator's, same jemalloc setting",
        &[
            "jemalloc",
            "strategy",
            "cold_ratio",
            "warm_ratio",
            "seed_ratio",
        ],
    );
    for s in summaries
        .iter()
        .filter(|s| s.strategy != TimedStrategy::General)
    {
        let Some(general) = summaries
            .iter()
            .find(|g| g.setting == s.setting && g.strategy == TimedStrategy::General)
        else {
            continue;
        };
        table.push(vec![
            s.setting.key().into(),
            s.strategy.key().into(),
            Cell::Float(ratio(s.cold.total_ms, general.cold.total_ms), 2),
            Cell::Float(ratio(s.warm.total_ms, general.warm.total_ms), 2),
            Cell::Text(format!("about {SEED_TOTAL_RATIO}")),
        ]);
    }
    table
}

/// The C++ program's numbers: cold and warm per allocator and strategy, ratios to `std`.
pub fn cxx_table(summaries: &[CxxSummary], with_times: bool) -> Table {
    let mut columns = vec!["allocator", "strategy"];
    if with_times {
        columns.extend(["cold_ms", "warm_ms", "warm_build_ms", "warm_reset_ms"]);
    }
    columns.extend(["cold_ratio", "warm_ratio", "cold_faults", "warm_faults_min"]);
    columns.push("warm_faults_max");
    let mut table = Table::new("the seed's C++ program (g++ -O3 -std=c++17)", &columns);
    for s in summaries {
        let std = summaries
            .iter()
            .find(|g| g.allocator == s.allocator && g.strategy == "std");
        let (cold_ratio, warm_ratio) = std.map_or((f64::NAN, f64::NAN), |g| {
            (
                ratio(s.cold.total_ms, g.cold.total_ms),
                ratio(s.warm.total_ms, g.warm.total_ms),
            )
        });
        let mut row: Vec<Cell> = vec![s.allocator.as_str().into(), s.strategy.as_str().into()];
        if with_times {
            row.extend([
                Cell::Float(s.cold.total_ms, 1),
                Cell::Float(s.warm.total_ms, 1),
                Cell::Float(s.warm.build_ms, 1),
                Cell::Float(s.warm.reset_ms, 2),
            ]);
        }
        row.extend([
            Cell::Float(cold_ratio, 2),
            Cell::Float(warm_ratio, 2),
            s.cold.faults.0.into(),
            s.warm.faults.0.into(),
            s.warm.faults.1.into(),
        ]);
        table.push(row);
    }
    table
}
