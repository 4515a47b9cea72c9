//! The arena comparison as a table and a report.

use super::{BumpArenaSpec, Measurement, Prediction, Strategy};
use crate::export::{Cell, Markdown, Table, TableFormat};
use anyhow::Result;

/// The seed's reset finding: dropping the per-object deallocate cut the reset cost by just
/// over half (no-free reset / arena reset, a little under 0.5).
pub const SEED_RESET_RATIO: f64 = 0.5;
/// The seed's overall finding: about twice as fast as the general allocator (0.5).
pub const SEED_TOTAL_RATIO: f64 = 0.5;

/// Predictions and measurements of one run of the scenario.
#[derive(Clone, Debug)]
pub struct BumpArenaResult {
    pub spec: BumpArenaSpec,
    pub model: String,
    pub predictions: Vec<Prediction>,
    pub measurements: Vec<Measurement>,
    /// jemalloc's `opt.dirty_decay_ms` and `opt.muzzy_decay_ms` during the measurement.
    pub decay_ms: Option<(i64, i64)>,
}

impl BumpArenaResult {
    fn measured(&self, s: Strategy) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.strategy == s)
    }

    fn total_ms(&self, s: Strategy) -> Option<f64> {
        self.measured(s)
            .map(|m| (m.build + m.reset).as_secs_f64() * 1e3)
    }

    fn reset_ms(&self, s: Strategy) -> Option<f64> {
        self.measured(s).map(|m| m.reset.as_secs_f64() * 1e3)
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
    let opt = |v: Option<u64>| v.map_or(Cell::Text("-".into()), Cell::Int);
    for p in &r.predictions {
        let m = r.measured(p.strategy);
        let ms = |d: Option<std::time::Duration>| {
            d.map_or(Cell::Text("-".into()), |d| {
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
            ms(m.map(|m| m.build)),
            ms(m.map(|m| m.reset)),
            ms(m.map(|m| m.build + m.reset)),
        ]);
    }
    table
}

/// `reports/arena.md`.
pub fn bump_arena_markdown(r: &BumpArenaResult, command: &str) -> Result<String> {
    let mut out =
        String::from("# Arena scenario: general allocator vs monotonic arena vs no-free arena\n\n");
    out.push_str(&format!(
        "Produced by `{command}`. The second seed builds {} vectors of {} x {}-byte elements inside an outer vector and resets them three ways. Here: `Vec<Vec<T>>` under jemalloc; `bumpalo::collections::Vec` in a `bumpalo::Bump` with normal drops; and the same with the inner destructors skipped (`ManuallyDrop`) before the `Bump` is dropped. Times are medians of {} runs on this machine (2 cores, shared: expect noise); they vary from run to run, the byte counts do not.\n\n",
        r.spec.vectors, r.spec.elements, r.spec.elem_bytes,
        r.measurements.first().map_or(0, |m| m.runs)
    ));
    let mut table = bump_arena_table(r);
    table.title.clear();
    out.push_str(&Markdown.render(&table)?);
    out.push_str("\nUsable bytes: predicted by the size-class model (general allocator: the outer array plus every inner block; arenas: bumpalo's chunks, replayed from its growth policy); measured as the usable bytes of a private jemalloc arena the building thread was bound to, with its thread cache off. Active bytes are that arena's `pactive` x page.\n\n");
    if let Some((dirty, muzzy)) = r.decay_ms {
        out.push_str(&format!(
            "jemalloc ran with `dirty_decay_ms:{dirty}` and `muzzy_decay_ms:{muzzy}`. The decay settings decide the time ratios: with decay off (`_RJEM_MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1`) freed pages stay mapped for the next build and the arena wins; with the defaults the arena's large chunks are mapped afresh and most of the arena's time goes to the kernel (see the README for both measurements).\n\n"
        ));
    }
    let bad = r.mismatches();
    if bad.is_empty() {
        out.push_str("**Predicted usable bytes equal measured usable bytes for every strategy**, and bumpalo's own `allocated_bytes` equals the replayed chunk policy.\n\n");
    } else {
        let names: Vec<&str> = bad.iter().map(|s| s.name()).collect();
        out.push_str(&format!(
            "**Mismatch** between predicted and measured usable bytes for: {}.\n\n",
            names.join(", ")
        ));
    }
    out.push_str(
        "## Ratios beside the seed's\n\n| ratio | fragsim (measured) | seed |\n|---|---:|---:|\n",
    );
    for (what, ours, seed) in r.ratios() {
        out.push_str(&format!("| {what} | {ours:.3} | about {seed:.1} |\n"));
    }
    if let Some(arena) = r.predictions.iter().find(|p| p.strategy == Strategy::Bump) {
        let chunks = &arena.chunk_requests;
        out.push_str(&format!(
            "\n## The arena's chunks\n\nbumpalo asked jemalloc for {} chunks, from {} B to {} B. Each request is a chunk plus its {}-byte footer, sized as if malloc kept {} bytes of header per allocation; jemalloc keeps none, so every chunk request ends {} bytes below a power of two or a page multiple and is served by that class, wasting those bytes once per chunk, not per vector. The arena's overhead over the ideal is the unused tail of the last chunk: chunks double, so up to half of the last one.\n",
            chunks.len(),
            chunks.first().copied().unwrap_or(0),
            chunks.last().copied().unwrap_or(0),
            super::FOOTER_SIZE,
            super::MALLOC_OVERHEAD,
            super::MALLOC_OVERHEAD
        ));
    }
    Ok(out)
}

/// Bar charts of time and bytes per strategy.
pub fn bump_arena_charts(
    r: &BumpArenaResult,
    stem: &str,
) -> (crate::charts::GroupedBars, crate::charts::GroupedBars) {
    use crate::charts::GroupedBars;
    let categories: Vec<String> = r
        .predictions
        .iter()
        .map(|p| p.strategy.name().to_string())
        .collect();
    let ms = |f: fn(&Measurement) -> std::time::Duration| -> Vec<f64> {
        r.predictions
            .iter()
            .map(|p| {
                r.measured(p.strategy)
                    .map_or(0.0, |m| f(m).as_secs_f64() * 1e3)
            })
            .collect()
    };
    let decay = match r.decay_ms {
        Some((dirty, _)) if dirty < 0 => ", jemalloc decay off",
        _ => ", jemalloc defaults",
    };
    let workload = format!(
        "{} vectors of {} x {} B{decay}",
        r.spec.vectors, r.spec.elements, r.spec.elem_bytes
    );
    let time = GroupedBars {
        name: format!("{stem}-time"),
        title: format!("Build and reset time, {workload} (median)"),
        y_desc: "milliseconds".into(),
        categories: categories.clone(),
        series: vec![
            ("build".into(), ms(|m| m.build)),
            ("reset".into(), ms(|m| m.reset)),
        ],
        decimals: 1,
    };
    let mib = |v: u64| v as f64 / (1u64 << 20) as f64;
    let bytes = GroupedBars {
        name: format!("{stem}-bytes"),
        title: format!("Memory, {workload}"),
        y_desc: "MiB".into(),
        categories,
        series: vec![
            (
                "ideal".into(),
                r.predictions.iter().map(|p| mib(p.ideal)).collect(),
            ),
            (
                "predicted usable".into(),
                r.predictions.iter().map(|p| mib(p.usable)).collect(),
            ),
            (
                "measured usable".into(),
                r.predictions
                    .iter()
                    .map(|p| {
                        r.measured(p.strategy)
                            .map_or(0.0, |m| mib(m.usage.allocated))
                    })
                    .collect(),
            ),
            (
                "measured active pages".into(),
                r.predictions
                    .iter()
                    .map(|p| r.measured(p.strategy).map_or(0.0, |m| mib(m.usage.active)))
                    .collect(),
            ),
        ],
        decimals: 0,
    };
    (time, bytes)
}
