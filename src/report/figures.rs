//! The data behind each chart of the report, gathered from the sweeps and the validation.

use crate::charts::{
    Comparison, PredictedVsMeasured, RatioHeatmap, SeedChart, SeedSeries, WasteCurve,
};
use crate::experiments::sweep::{seed_model_ratio, PhysicalRow, SeedRow};
use crate::layout::F14Vector;
use crate::sizeclass::{AllocatorConfig, Preset, SizeClasses};
use crate::validate::{F14Measurement, Validation};

/// The physical sweeps the report makes, one per modelled build.
pub struct Sweeps {
    pub default: Vec<PhysicalRow>,
    pub quantum8: Vec<PhysicalRow>,
    /// jemalloc 5.3.1 as tikv-jemalloc-sys ships it (large requests rounded to pages).
    pub v5_3_1: Vec<PhysicalRow>,
}

/// 64 KiB pages with 5.3.1's rounding of large requests to pages.
fn page64k_dev() -> SizeClasses {
    let config = AllocatorConfig {
        large_page_rounding: true,
        ..Preset::Page64k.config()
    };
    SizeClasses::new(config).expect("64 KiB pages with page rounding is a valid build")
}

/// The ratio for the largest table swept, at each of the seed's value sizes (24..=256).
fn largest_table(rows: &[PhysicalRow]) -> Vec<(u64, f64)> {
    let top = rows.iter().map(|r| r.table.capacity).max().unwrap_or(0);
    rows.iter()
        .filter(|r| r.table.capacity == top && (24..=256).contains(&r.table.value_size))
        .map(|r| (r.table.value_size, r.ratio()))
        .collect()
}

/// Bytes as the chart labels print them: `128 B`, `224 KiB`.
fn bytes_label(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

/// The size above which two builds have the same classes: the largest class of `a` that
/// `b` lacks (every class above it is in both).
fn same_classes_above(a: &SizeClasses, b: &SizeClasses) -> u64 {
    a.all()
        .iter()
        .map(|c| c.size)
        .filter(|&size| b.usable_size(size) != Some(size))
        .max()
        .unwrap_or(0)
}

/// Chart 1: the seed's printed values, our reproduction, and the physical ratios.
pub(crate) fn seed_chart(sweeps: &Sweeps, seed: &[SeedRow]) -> SeedChart {
    let q8 = Preset::Quantum8.classes();
    let q8_quantum = bytes_label(q8.config().quantum());
    let same_above = bytes_label(same_classes_above(&q8, &Preset::V5_3_0.classes()));
    let top = sweeps
        .default
        .iter()
        .map(|r| r.table.capacity)
        .max()
        .unwrap_or(0);
    let line = |label: String, points, width| SeedSeries {
        label,
        points,
        markers: false,
        width,
    };
    SeedChart {
        series: vec![
            SeedSeries {
                label: "seed's printed table (D8485933)".into(),
                points: seed.iter().map(|r| (r.value_size, r.ratio)).collect(),
                markers: true,
                width: 0,
            },
            line(
                format!("fragsim: seed model, {q8_quantum} quantum"),
                seed.iter()
                    .filter_map(|r| Some((r.value_size, seed_model_ratio(&q8, r.value_size)?)))
                    .collect(),
                3,
            ),
            // Drawn wide: the 8 B quantum line lies on top of it.
            line(
                format!("fragsim: physical, default build, {top} values"),
                largest_table(&sweeps.default),
                9,
            ),
            line(
                format!(
                    "fragsim: physical, {q8_quantum} quantum (same classes above {same_above})"
                ),
                largest_table(&sweeps.quantum8),
                3,
            ),
            line(
                "fragsim: physical, 5.3.1 (large requests in pages)".into(),
                largest_table(&sweeps.v5_3_1),
                3,
            ),
        ],
    }
}

/// Chart 2: the ratio for every value size and capacity step of one sweep.
pub(crate) fn ratio_heatmap(rows: &[PhysicalRow], max_capacity: u64) -> RatioHeatmap {
    let mut value_sizes: Vec<u64> = rows.iter().map(|r| r.table.value_size).collect();
    value_sizes.dedup();
    let capacities = F14Vector::capacity_steps(max_capacity);
    let ratio = |s: u64, c: u64| {
        rows.iter()
            .find(|r| r.table.value_size == s && r.table.capacity == c)
            .map_or(1.0, |r| r.ratio())
    };
    let ratios = value_sizes
        .iter()
        .map(|&s| capacities.iter().map(|&c| ratio(s, c)).collect())
        .collect();
    RatioHeatmap {
        subtitle: "default jemalloc 5.3.0 build".into(),
        value_sizes,
        capacities,
        ratios,
    }
}

/// Chart 3: the sawtooth of three builds (64 KiB pages change the classes only where
/// 5.3.1 rounds large requests to pages, so that is the page64k panel).
pub(crate) fn waste_curve() -> WasteCurve {
    let default = Preset::V5_3_0.classes();
    let q8 = Preset::Quantum8.classes();
    let page64k = page64k_dev();
    let (d, p) = (default.config(), page64k.config());
    WasteCurve {
        builds: vec![
            (
                format!(
                    "default: {} quantum, {} pages ({} pages give the same classes)",
                    bytes_label(d.quantum()),
                    bytes_label(d.page()),
                    bytes_label(p.page())
                ),
                default,
            ),
            (
                format!("quantum8: {} quantum", bytes_label(q8.config().quantum())),
                q8,
            ),
            (
                format!(
                    "page64k as 5.3.1 rounds it: large requests (above {}) in whole {} pages",
                    bytes_label(page64k.small_maxclass()),
                    bytes_label(p.page())
                ),
                page64k,
            ),
        ],
        max_request: 4 << 20,
    }
}

/// Chart 4: measured against predicted bytes for every F14 row the validation allocated.
pub(crate) fn predicted_vs_measured(v: &Validation) -> PredictedVsMeasured {
    let label = |m: &F14Measurement| format!("{} B x {} {}", m.value_size, m.capacity, m.layout);
    let compare = |predicted: fn(&F14Measurement) -> u64, measured: fn(&F14Measurement) -> u64| {
        v.f14
            .iter()
            .map(|m| Comparison {
                label: label(m),
                predicted: predicted(m),
                measured: measured(m),
            })
            .collect()
    };
    PredictedVsMeasured {
        subtitle: format!("live {}", crate::sizeclass::build_title(&v.model)),
        usable: compare(|m| m.predicted_usable, |m| m.measured_usable),
        active: compare(|m| m.predicted_active, |m| m.measured_active),
    }
}
