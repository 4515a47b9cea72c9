//! One run of the bump-arena scenario, predicted and measured, and its table.

use super::{BumpArenaSpec, Measurement, Prediction, Strategy};
use crate::export::{Cell, Table};
use serde::{Deserialize, Serialize};

/// The seed's reset finding: dropping the per-object deallocate cut the reset cost by just
/// over half (no-free reset / arena reset, a little under 0.5).
pub const SEED_RESET_RATIO: f64 = 0.5;
/// The seed's overall finding: about twice as fast as the general allocator (0.5).
pub const SEED_TOTAL_RATIO: f64 = 0.5;

/// Predictions and measurements of one run of the scenario (`fragsim bump-arena` prints them
/// as [`bump_arena_table`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BumpArenaResult {
    pub spec: BumpArenaSpec,
    pub model: String,
    pub predictions: Vec<Prediction>,
    pub measurements: Vec<Measurement>,
    /// jemalloc's `opt.dirty_decay_ms` and `opt.muzzy_decay_ms` during the measurement.
    pub decay_ms: Option<(i64, i64)>,
    /// Threads the measuring process could run at once (`available_parallelism`).
    pub cores: Option<usize>,
}

impl BumpArenaResult {
    pub fn measured(&self, s: Strategy) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.strategy == s)
    }

    /// The measurement of `s` if its builds were timed.
    fn timed(&self, s: Strategy) -> Option<&Measurement> {
        self.measured(s).filter(|m| m.runs > 0)
    }

    fn total_ms(&self, s: Strategy) -> Option<f64> {
        self.timed(s)
            .map(|m| (m.build + m.reset).as_secs_f64() * 1e3)
    }

    fn reset_ms(&self, s: Strategy) -> Option<f64> {
        self.timed(s).map(|m| m.reset.as_secs_f64() * 1e3)
    }

    /// (what, ours, seed's) ratios.
    pub fn ratios(&self) -> Vec<(&'static str, f64, f64)> {
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => a / b,
            _ => f64::NAN,
        };
        vec![
            (
                "reset time, no-free / arena",
                ratio(
                    self.reset_ms(Strategy::BumpNoFree),
                    self.reset_ms(Strategy::Bump),
                ),
                SEED_RESET_RATIO,
            ),
            (
                "build + reset time, arena / general",
                ratio(
                    self.total_ms(Strategy::Bump),
                    self.total_ms(Strategy::General),
                ),
                SEED_TOTAL_RATIO,
            ),
            (
                "build + reset time, no-free / general",
                ratio(
                    self.total_ms(Strategy::BumpNoFree),
                    self.total_ms(Strategy::General),
                ),
                SEED_TOTAL_RATIO,
            ),
        ]
    }

    /// Strategies whose measured usable bytes differ from the prediction.
    pub fn mismatches(&self) -> Vec<Strategy> {
        self.predictions
            .iter()
            .filter(|p| {
                self.measured(p.strategy).is_none_or(|m| {
                    m.usage.allocated != p.usable || m.bump_allocated != p.bump_allocated
                })
            })
            .map(|p| p.strategy)
            .collect()
    }
}

/// One row per strategy: predicted beside measured, times, calls.
pub fn bump_arena_table(r: &BumpArenaResult) -> Table {
    let mut table = Table::new(
        format!(
            "{} vectors of {} x {} B: general allocator vs arena vs no-free arena (jemalloc {})",
            r.spec.vectors, r.spec.elements, r.spec.elem_bytes, r.model
        ),
        &[
            "strategy",
            "ideal_bytes",
            "predicted_usable",
            "measured_usable",
            "overhead",
            "predicted_active",
            "measured_active",
            "predicted_bump_bytes",
            "measured_bump_bytes",
            "allocator_calls",
            "build_ms",
            "reset_ms",
            "total_ms",
        ],
    );
    let opt = |v: Option<u64>| v.map_or(Cell::Missing("-"), Cell::Int);
    for p in &r.predictions {
        let m = r.measured(p.strategy);
        // Untimed (memory only): no time cells.
        let timed = m.filter(|m| m.runs > 0);
        let ms = |d: Option<std::time::Duration>| {
            d.map_or(Cell::Missing("-"), |d| {
                Cell::Float(d.as_secs_f64() * 1e3, 2)
            })
        };
        table.push(vec![
            p.strategy.name().into(),
            p.ideal.into(),
            p.usable.into(),
            opt(m.map(|m| m.usage.allocated)),
            Cell::Float(p.usable as f64 / p.ideal as f64 - 1.0, 4),
            p.active.into(),
            opt(m.map(|m| m.usage.active)),
            opt(p.bump_allocated),
            opt(m.and_then(|m| m.bump_allocated)),
            p.allocator_calls.into(),
            ms(timed.map(|m| m.build)),
            ms(timed.map(|m| m.reset)),
            ms(timed.map(|m| m.build + m.reset)),
        ]);
    }
    table
}
