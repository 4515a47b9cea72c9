//! The advice as a table (one row per setting), a chart, and the notes that go with them.

use super::{Advice, LiveCheck, Objective};
use crate::charts::HorizontalBars;
use crate::export::{Cell, Table};

/// What a replay cannot show, said with every advice.
pub const LIMITS: [&str; 4] = [
    "A replay shows memory, not speed: no thread cache (tcache:false), fewer cache slots and fewer arenas take more trips to the arenas' locks; measure the program's speed before adopting one.",
    "A replay shows the allocator's memory only: the program's other memory (code, stacks, memory-mapped files, other allocators) is outside it.",
    "Decay is modelled on the trace's clock, approximately: a setting naming neither dirty_decay_ms nor muzzy_decay_ms runs with decay off (the exact conditions; its dirty pages are never purged and count in its resident bytes), dirty_decay_ms:10000 is jemalloc's own default (muzzy 0), and a setting naming one decay option runs the other at that default. jemalloc decays on the wall clock with randomly spaced checks, so settings above 0 ms are approximate (live_check approximate: compare resident live with fragsim replay TRACE --process --live --honour-clock); 0 ms purges at once and stays exact. Background threads are off; resident = active + dirty + metadata (muzzy pages are not counted, as in jemalloc's stats.resident), the metadata as the process model counts it (the bases as measured live before the first event, the extent records and radix-tree leaves the trace adds; the tree's shape from the address width jemalloc was built for, --vaddr-bits).",
    "jemalloc 5.3.1's default thread-cache GC runs on a 10 ms wall clock, which no replay reproduces exactly: every 5.3.1 setting runs with experimental_tcache_gc:false added (exact_malloc_conf is the whole string the model and the live check use) unless it names experimental_tcache_gc:true, which the model runs on the trace's clock (approximate, as decay above 0 ms; skipped on a trace without times).",
];

/// The table's columns, in order: the setting, its place by the objective, each figure with
/// its change against the defaults (a percentage: -1.10 is 1.1% lower), each figure's own
/// place, the peak's parts, the live check.
pub fn columns() -> Vec<&'static str> {
    let mut c = vec!["malloc_conf", "preset", "narenas", "rank"];
    for o in Objective::ALL {
        c.extend([o.column(), o.change_column()]);
    }
    c.push("time_mean_active_bytes");
    c.extend(Objective::ALL.map(Objective::rank_column));
    c.extend([
        "requested_bytes",
        "rounding_bytes",
        "empty_region_bytes",
        "cached_bytes",
        "cache_block_bytes",
        "pad_bytes",
        "live_check",
        "live_predicted_peak_bytes",
        "live_peak_active_bytes",
        "exact_malloc_conf",
    ]);
    c
}

/// A figure as the table prints it: bytes whole, means to one decimal.
fn figure_cell(o: Objective, r: &super::SettingResult) -> Cell {
    match o {
        Objective::PeakResident | Objective::PeakActive => Cell::Int(o.of(r) as u64),
        Objective::MeanResident | Objective::MeanActive => Cell::Float(o.of(r), 1),
    }
}

/// One row per setting in grid order (the defaults first, `malloc_conf` empty), `live` one
/// check per row (or empty: every row `not-run`).
pub fn advice_table(advice: &Advice, title: &str, live: &[LiveCheck]) -> Table {
    let mut t = Table::new(title, &columns());
    let base = advice.defaults();
    let ranks = Objective::ALL.map(|o| o.ranks(&advice.results));
    for (i, r) in advice.results.iter().enumerate() {
        let p = &r.at_peak;
        let check = live.get(i);
        // Predicted beside measured: the model run beside the live child (from the child's
        // start, so with its start-up residue) and the child's own figure.
        let (live_predicted, live_peak) = match check {
            Some(LiveCheck::Ran(o)) => (
                Cell::Int(o.run.peak_active_predicted),
                Cell::Int(o.run.peak_active_measured),
            ),
            _ => (Cell::Missing(""), Cell::Missing("")),
        };
        let mut row: Vec<Cell> = vec![
            r.setting.malloc_conf.clone().into(),
            r.setting.preset.name().into(),
            u64::from(r.narenas).into(),
            (advice.rank[i] as u64).into(),
        ];
        for o in Objective::ALL {
            row.push(figure_cell(o, r));
            row.push(Cell::Float(o.change(r, base) * 100.0, 2));
        }
        row.push(
            r.time_mean_active_bytes
                .map_or(Cell::Missing(""), |m| Cell::Float(m, 1)),
        );
        row.extend(ranks.iter().map(|k| Cell::Int(k[i] as u64)));
        row.extend([
            p.requested.into(),
            p.rounding.into(),
            p.empty_regions.into(),
            p.cached.into(),
            p.cache_blocks.into(),
            p.pad.into(),
            check.map_or("not-run", LiveCheck::word).into(),
            live_predicted,
            live_peak,
            r.setting.exact_conf(advice.cpus).into(),
        ]);
        t.push(row);
    }
    t
}

/// A figure worse than the defaults' by more than this share is named in the recommendation.
pub(crate) const WORSE_TOLERANCE: f64 = 0.01;

/// ` BUT ...` naming each figure `r` makes worse than the defaults by more than
/// [`WORSE_TOLERANCE`] (a setting that lowers one figure may raise another: a
/// recommendation never hides it), else nothing.
fn worse_note(r: &super::SettingResult, base: &super::SettingResult) -> String {
    let worse: Vec<String> = Objective::ALL
        .iter()
        .map(|&o| (o, o.change(r, base)))
        .filter(|&(_, change)| change > WORSE_TOLERANCE)
        .map(|(o, change)| format!("{} {:+.1}%", o.words(), change * 100.0))
        .collect();
    match worse.is_empty() {
        true => String::new(),
        false => format!(
            " BUT it makes {} worse than the defaults (by more than {:.0}%): weigh that before adopting it.",
            worse.join(", "),
            WORSE_TOLERANCE * 100.0
        ),
    }
}

/// Every figure of `r` with its change against `base`: `peak resident 1,234 bytes (-1.1%),
/// ...`.
fn figures(r: &super::SettingResult, base: &super::SettingResult) -> String {
    Objective::ALL
        .iter()
        .map(|&o| {
            format!(
                "{} {:.0} bytes ({:+.1}%)",
                o.words(),
                o.of(r),
                o.change(r, base) * 100.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the default row is when no recording says otherwise.
pub const LINKED_BASELINE: &str = "jemalloc 5.3.1 with an empty MALLOC_CONF";

/// What the table means, the recommendations and their live checks, then `LIMITS`;
/// `baseline` says what the defaults row is (`LINKED_BASELINE`, or the recorded program's
/// allocator: `super::rebase`).
pub fn notes(advice: &Advice, live: &[LiveCheck], baseline: &str) -> Vec<String> {
    let base = advice.defaults();
    let narenas = match baseline {
        LINKED_BASELINE => format!(
            "narenas {} (4 x {} CPUs, --cpus)",
            base.narenas, advice.cpus
        ),
        _ => format!("narenas {}", base.narenas),
    };
    let mut out = vec![format!(
        "{} records replayed once under {} settings, ranked by {} bytes (--objective {}; rank: 1 is the lowest, equal figures share a place); the defaults are {baseline} and {narenas}. Each figure's _change_pct is its change against the defaults, in percent (negative: lower). Peak and mean resident are stats.resident (active + dirty + metadata) at its highest and its mean over the trace's time (over records when the trace has no times); peak and mean active are stats.active at its highest and its mean over records. The defaults row runs decay off (the exact baseline), dirty_decay_ms:10000 is jemalloc's own default decay. At the peak: requested + rounding + empty_region + cached + cache_block + pad bytes = peak_active_bytes. live_predicted_peak_bytes and live_peak_active_bytes: the peak the model predicts for the live child (from the child's start, its start-up residue included) and the peak the child measured, over the events compared.",
        advice.events,
        advice.results.len(),
        advice.objective.words(),
        advice.objective,
    )];
    for (s, why) in &advice.skipped {
        out.push(format!("Skipped {}: {why}.", s.label()));
    }
    let rec = advice.recommendations();
    if rec.is_empty() {
        out.push(format!(
            "No setting of the grid lowers the {} below the defaults': nothing recommended.",
            advice.objective.words()
        ));
    }
    for (i, why) in &rec {
        let i = *i;
        let r = &advice.results[i];
        out.push(format!(
            "Recommended ({why}): {}: {}.{}",
            r.setting.label(),
            figures(r, base),
            worse_note(r, base),
        ));
        match live.get(i) {
            Some(LiveCheck::Ran(o)) => {
                let c = &o.run.comparison;
                out.push(format!(
                    "Live check of {} ({}, MALLOC_CONF={}): {} ({} snapshots every {} events, {} values compared, {} mismatched); peak active predicted {} bytes, measured {} bytes{}.",
                    r.setting.label(),
                    o.version,
                    o.malloc_conf,
                    if o.passed() { "pass" } else { "FAIL" },
                    c.snapshots,
                    o.every,
                    c.values,
                    c.mismatched_values,
                    o.run.peak_active_predicted,
                    o.run.peak_active_measured,
                    if o.run.residue_bytes > 0 {
                        format!(" (both with the {} bytes the child's start-up leaves live in arena 0)", o.run.residue_bytes)
                    } else {
                        String::new()
                    }
                ));
                for mm in &c.first {
                    out.push(format!(
                        "  mismatch at event {}: {} predicted {}, measured {}",
                        mm.event, mm.statistic, mm.predicted, mm.measured
                    ));
                }
            }
            Some(LiveCheck::NotRun(why)) => out.push(format!(
                "Live check of {}: not run ({why}).",
                r.setting.label()
            )),
            Some(LiveCheck::Approximate(how)) => out.push(format!(
                "Live check of {}: approximate ({how}).",
                r.setting.label()
            )),
            None => {}
        }
    }
    out.extend(LIMITS.iter().map(|s| s.to_string()));
    out
}

/// Every figure per setting, one row each in grid order, each bar labelled with its change
/// against the defaults (the first row), so that a 1% difference reads on the chart.
pub fn advice_chart(advice: &Advice, name: &str, title: &str) -> HorizontalBars {
    HorizontalBars {
        name: name.to_string(),
        title: title.to_string(),
        x_desc: "bytes".into(),
        categories: advice.results.iter().map(|r| r.setting.label()).collect(),
        series: Objective::ALL
            .iter()
            .map(|&o| {
                (
                    o.words().to_string(),
                    advice.results.iter().map(|r| o.of(r)).collect(),
                )
            })
            .collect(),
        changes_against: Some(0),
    }
}
