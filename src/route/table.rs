//! `advise --routes K` as one call and one table: the greedy search ([`search_routes`]) on the
//! linked build with jemalloc's default options, and its rows (the baseline, then one per site
//! added), shared by the CLI and `fragsim view --with routes`.

use super::{score, search_routes, RouteSearch, SearchError};
use crate::export::{Cell, Table};
use crate::process::{DecayClock, ProcessOptions, ProcessSummary};
use crate::sizeclass::{AllocatorConfig, Preset};
use crate::trace::Record;

/// `advise --routes k`'s search: the linked build, default options, `cpus` for `narenas`, the
/// decay model's seed `seed` on this machine's coarse clock. Gives the build it modelled.
pub fn advise_routes<I, E>(
    open: impl Fn() -> Result<I, E>,
    k: usize,
    cpus: u32,
    seed: u64,
) -> Result<(RouteSearch, AllocatorConfig), SearchError>
where
    I: Iterator<Item = Result<Record, E>>,
    E: std::fmt::Display,
{
    let config = Preset::LINKED.config();
    let clock = DecayClock {
        seed,
        resolution_ns: crate::process::machine_coarse_clock_ns(),
        start_ns: 0,
    };
    let options = ProcessOptions::default();
    let found = search_routes(open, k, false, config, &options, cpus, clock)?;
    Ok((found, config))
}

/// `v` against `base`: the change in bytes and in percent (negative: saved), two numbers.
pub fn change_cells(v: f64, base: f64) -> [Cell; 2] {
    let d = v - base;
    let pct = if base > 0.0 { 100.0 * d / base } else { 0.0 };
    [Cell::Float(d.round(), 0), Cell::Float(pct, 2)]
}

/// The search as `advise --routes` prints it: the baseline, then each site added with the
/// peak active and mean resident bytes, their changes and the score.
pub fn routes_table(found: &RouteSearch, name: &str, config: &AllocatorConfig) -> Table {
    let mut table = Table::new(
        format!(
            "advise --routes for {name}: sites routed to dedicated arenas (MALLOCX_ARENA | MALLOCX_TCACHE_NONE), {}, greedy over the {} sites with the most waste at the active peak",
            crate::sizeclass::build_title(config),
            found.candidates
        ),
        &[
            "sites",
            "site_added",
            "frames",
            "peak_active_bytes",
            "peak_active_change_bytes",
            "peak_active_change_pct",
            "mean_resident_bytes",
            "mean_resident_change_bytes",
            "mean_resident_change_pct",
            "score",
        ],
    );
    let base = &found.baseline;
    let mut push = |n: usize, rule: &str, frames: &str, s: &ProcessSummary| {
        let mut row = vec![
            Cell::Int(n as u64),
            Cell::Text(rule.to_string()),
            Cell::Text(frames.to_string()),
            Cell::Int(s.peak_active_bytes),
        ];
        row.extend(change_cells(
            s.peak_active_bytes as f64,
            base.peak_active_bytes as f64,
        ));
        row.push(Cell::Float(s.mean_resident_bytes(), 0));
        row.extend(change_cells(
            s.mean_resident_bytes(),
            base.mean_resident_bytes(),
        ));
        row.push(Cell::Float(score(s, base), 4));
        table.push(row);
    };
    push(0, "(baseline: none)", "", base);
    for (i, step) in found.steps.iter().enumerate() {
        push(i + 1, &step.rule.text, &step.frames, &step.summary);
    }
    table
}
