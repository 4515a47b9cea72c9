//! The advice as a table (one row per setting), a chart, and the notes that go with them.

use super::{Advice, LiveCheck};
use crate::charts::HorizontalBars;
use crate::export::{Cell, Table};

/// What a replay cannot show, said with every advice.
pub const LIMITS: [&str; 4] = [
    "A replay shows memory, not speed: no thread cache (tcache:false), fewer cache slots and fewer arenas take more trips to the arenas' locks; measure the program's speed before adopting one.",
    "A replay shows the allocator's memory only: the program's other memory (code, stacks, memory-mapped files, other allocators) is outside it.",
    "Decay is modelled on the trace's clock, approximately: a setting naming neither dirty_decay_ms nor muzzy_decay_ms runs with decay off (the exact conditions; its dirty pages are never purged and count in its resident bytes), dirty_decay_ms:10000 is jemalloc's own default (muzzy 0), and a setting naming one decay option runs the other at that default. jemalloc decays on the wall clock with randomly spaced checks, so settings above 0 ms are approximate (live_check approximate: compare resident live with fragsim replay TRACE --process --live --honour-clock); 0 ms purges at once and stays exact. Background threads are off; resident = active + dirty + metadata (muzzy pages are not counted, as in jemalloc's stats.resident), the metadata as the process model counts it (the bases as measured live before the first event, the extent records and radix-tree leaves the trace adds; the tree's shape from the address width jemalloc was built for, --vaddr-bits).",
    "jemalloc 5.3.1's default thread-cache GC runs on a 10 ms wall clock, which no replay reproduces exactly: every 5.3.1 setting runs with experimental_tcache_gc:false added (exact_malloc_conf is the whole string the model and the live check use) unless it names experimental_tcache_gc:true, which the model runs on the trace's clock (approximate, as decay above 0 ms; skipped on a trace without times).",
];

/// The table's columns, in order.
pub const COLUMNS: [&str; 23] = [
    "malloc_conf",
    "preset",
    "narenas",
    "peak_active_bytes",
    "mean_active_bytes",
    "time_mean_active_bytes",
    "peak_resident_bytes",
    "mean_resident_bytes",
    "vs_defaults",
    "mean_vs_defaults",
    "rank_peak",
    "rank_mean",
    "rank_resident",
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
];

fn ratio(a: f64, b: f64) -> Cell {
    Cell::Float(if b == 0.0 { 1.0 } else { a / b }, 4)
}

/// One row per setting in grid order (the defaults first, `malloc_conf` empty), `live` one
/// check per row (or empty: every row `not-run`).
pub fn advice_table(advice: &Advice, title: &str, live: &[LiveCheck]) -> Table {
    let mut t = Table::new(title, &COLUMNS);
    let base = advice.defaults();
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
        t.push(vec![
            r.setting.malloc_conf.clone().into(),
            r.setting.preset_name().into(),
            u64::from(r.narenas).into(),
            r.peak_active_bytes.into(),
            Cell::Float(r.mean_active_bytes, 1),
            r.time_mean_active_bytes
                .map_or(Cell::Missing(""), |m| Cell::Float(m, 1)),
            r.peak_resident_bytes.into(),
            Cell::Float(r.mean_resident_bytes, 1),
            ratio(r.peak_active_bytes as f64, base.peak_active_bytes as f64),
            ratio(r.mean_active_bytes, base.mean_active_bytes),
            (advice.rank_peak[i] as u64).into(),
            (advice.rank_mean[i] as u64).into(),
            (advice.rank_resident[i] as u64).into(),
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
    }
    t
}

/// A figure worse than the defaults' by more than this share is named in the recommendation.
pub const WORSE_TOLERANCE: f64 = 0.01;

/// ` BUT ...` naming each figure `r` makes worse than the defaults by more than
/// [`WORSE_TOLERANCE`] (a setting that lowers one figure may raise another: a
/// recommendation never hides it), else nothing.
fn worse_note(r: &super::SettingResult, base: &super::SettingResult) -> String {
    let figures = [
        (
            "peak active",
            r.peak_active_bytes as f64,
            base.peak_active_bytes as f64,
        ),
        ("mean active", r.mean_active_bytes, base.mean_active_bytes),
        (
            "peak resident",
            r.peak_resident_bytes as f64,
            base.peak_resident_bytes as f64,
        ),
        (
            "mean resident",
            r.mean_resident_bytes,
            base.mean_resident_bytes,
        ),
    ];
    let worse: Vec<String> = figures
        .iter()
        .filter(|(_, v, b)| *b > 0.0 && v / b - 1.0 > WORSE_TOLERANCE)
        .map(|(name, v, b)| format!("{name} {:+.1}%", (v / b - 1.0) * 100.0))
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

fn share(a: u64, b: u64) -> String {
    if b == 0 {
        "0%".into()
    } else {
        format!("{:+.1}%", (a as f64 / b as f64 - 1.0) * 100.0)
    }
}

/// What the default row is when no recording says otherwise.
pub const LINKED_BASELINE: &str = "jemalloc 5.3.1 with an empty MALLOC_CONF";

/// What the table means, the recommendations and their live checks, then [`LIMITS`];
/// `baseline` says what the defaults row is ([`LINKED_BASELINE`], or the recorded program's
/// allocator: [`super::rebase`]).
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
        "{} records replayed once under {} settings; the defaults are {baseline} and {narenas}. vs_defaults = peak_active_bytes / the defaults' (below 1: lower); mean_vs_defaults the same for the mean over records. mean_resident_bytes is stats.resident's mean over the trace's time (over records when the trace has no times), rank_resident its place; the defaults row runs decay off (the exact baseline), dirty_decay_ms:10000 is jemalloc's own default decay. At the peak: requested + rounding + empty_region + cached + cache_block + pad bytes = peak_active_bytes. live_predicted_peak_bytes and live_peak_active_bytes: the peak the model predicts for the live child (from the child's start, its start-up residue included) and the peak the child measured, over the events compared.",
        advice.events,
        advice.results.len(),
    )];
    for (s, why) in &advice.skipped {
        out.push(format!("Skipped {}: {why}.", s.label()));
    }
    let rec = advice.recommendations();
    if rec.is_empty() {
        out.push("No setting of the grid lowers the peak or the mean below the defaults: nothing recommended.".into());
    }
    for &(i, why) in &rec {
        let r = &advice.results[i];
        out.push(format!(
            "Recommended ({why}): {}: peak {} bytes ({} vs the defaults), mean {:.0} bytes ({}), peak resident {} bytes ({}), mean resident {:.0} bytes ({}).{}",
            r.setting.label(),
            r.peak_active_bytes,
            share(r.peak_active_bytes, base.peak_active_bytes),
            r.mean_active_bytes,
            share(r.mean_active_bytes as u64, base.mean_active_bytes as u64),
            r.peak_resident_bytes,
            share(r.peak_resident_bytes, base.peak_resident_bytes),
            r.mean_resident_bytes,
            share(r.mean_resident_bytes as u64, base.mean_resident_bytes as u64),
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

/// Peak and mean active bytes and mean resident bytes per setting, one row each, in grid order.
pub fn advice_chart(advice: &Advice, name: &str, title: &str) -> HorizontalBars {
    HorizontalBars {
        name: name.to_string(),
        title: title.to_string(),
        x_desc: "bytes".into(),
        categories: advice.results.iter().map(|r| r.setting.label()).collect(),
        series: vec![
            (
                "peak active".into(),
                advice
                    .results
                    .iter()
                    .map(|r| r.peak_active_bytes as f64)
                    .collect(),
            ),
            (
                "mean active (over records)".into(),
                advice.results.iter().map(|r| r.mean_active_bytes).collect(),
            ),
            (
                "mean resident (over time)".into(),
                advice
                    .results
                    .iter()
                    .map(|r| r.mean_resident_bytes)
                    .collect(),
            ),
        ],
    }
}
