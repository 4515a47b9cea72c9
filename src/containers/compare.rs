//! Every container side by side for one element type, and split vs unified per container.

use super::core::{ElementType, KeyOrder};
use super::growth::{grow, Growth, GrowthError};
use super::spec::{ContainerKind, ContainerSpec};
use crate::sizeclass::SizeClasses;
use serde::Serialize;

/// One container grown to N.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ContainerRun {
    pub kind: ContainerKind,
    /// The element the container stores (for `vec` beside maps: the `(K, V)` tuple).
    pub element: ElementType,
    pub growth: Growth,
}

/// The containers compared for a key and (optional) mapped type: with a mapped type every
/// map, plus `Vec`/`VecDeque` of the `(K, V)` tuple as the contiguous baseline; without one,
/// every set and `Vec`/`VecDeque` of the key.
pub(crate) fn comparable_specs(
    key: ElementType,
    value: Option<ElementType>,
    order: KeyOrder,
) -> Vec<ContainerSpec> {
    use super::spec::ValueRule;
    ContainerKind::ALL
        .into_iter()
        .filter_map(|kind| {
            let (k, v) = match (kind.value_rule(), value) {
                (ValueRule::Forbidden, Some(v)) => match kind {
                    ContainerKind::Vec | ContainerKind::Vecdeque => {
                        (ElementType::rust_tuple(key, v), None)
                    }
                    _ => return None,
                },
                (ValueRule::Required, None) => return None,
                (_, v) => (key, v),
            };
            ContainerSpec::new(kind, k, v, order).ok()
        })
        .collect()
}

/// Element counts 1, 2, 3, 4, 5, 6, 8, ... (four per doubling) up to `count`, for curves.
pub(crate) fn geometric_samples(count: u64) -> Vec<u64> {
    let mut samples: Vec<u64> = (0..)
        .map(|k: u32| 2f64.powf(f64::from(k) / 4.0).round() as u64)
        .take_while(|&n| n < count)
        .collect();
    samples.push(count);
    samples.dedup();
    samples
}

/// Grows every comparable container to `count` (no trace kept); a container whose model
/// cannot grow that far ([`ContainerKind::max_count`]) is left out.
pub(crate) fn compare_containers(
    key: ElementType,
    value: Option<ElementType>,
    count: u64,
    order: KeyOrder,
    classes: &SizeClasses,
) -> Result<Vec<ContainerRun>, GrowthError> {
    let samples = geometric_samples(count);
    comparable_specs(key, value, order)
        .into_iter()
        .filter(|spec| count <= spec.kind.max_count())
        .map(|spec| {
            Ok(ContainerRun {
                kind: spec.kind,
                element: spec.element(),
                growth: grow(&spec, count, classes, &samples, &mut |_| {})?,
            })
        })
        .collect()
}

/// Split vs unified over a container's growth steps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct SplitVerdict {
    /// Unified / split usable bytes of the table at N.
    pub at_n: f64,
    /// Geometric mean of the ratio over the growth steps.
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Steps where one allocation cost fewer usable bytes than two.
    pub unified_cheaper_steps: usize,
    pub steps: usize,
}

impl SplitVerdict {
    pub fn of(growth: &Growth) -> Option<SplitVerdict> {
        let ratios: Vec<(f64, bool)> = growth
            .steps
            .iter()
            .filter_map(|s| s.split)
            .map(|c| (c.usable_ratio(), c.unified.usable < c.split.usable))
            .collect();
        let at_n = growth.last().split?.usable_ratio();
        let n = ratios.len() as f64;
        Some(SplitVerdict {
            at_n,
            mean: (ratios.iter().map(|r| r.0.ln()).sum::<f64>() / n).exp(),
            min: ratios.iter().map(|r| r.0).fold(f64::INFINITY, f64::min),
            max: ratios.iter().map(|r| r.0).fold(0.0, f64::max),
            unified_cheaper_steps: ratios.iter().filter(|r| r.1).count(),
            steps: ratios.len(),
        })
    }

    /// One sentence a reader can act on.
    pub fn sentence(&self) -> String {
        let change = |r: f64| {
            if (r - 1.0).abs() < 5e-4 {
                "as much usable memory as".to_string()
            } else if r < 1.0 {
                format!("{:.1}% less usable memory than", (1.0 - r) * 100.0)
            } else {
                format!("{:.1}% more usable memory than", (r - 1.0) * 100.0)
            }
        };
        format!(
            "at N one allocation costs {} two; over the {} growth steps {} two on average \
             (geometric mean), fewer bytes at {} steps, ratio {:.3}..{:.3}",
            change(self.at_n),
            self.steps,
            change(self.mean),
            self.unified_cheaper_steps,
            self.min,
            self.max
        )
    }
}

/// A container and its (value size, unified/split ratio) points.
pub(crate) type RatioBySize = (ContainerKind, Vec<(u64, f64)>);

/// Geometric-mean unified/split ratio over the growth to `count`, for each mapped-type size
/// in `value_sizes` (natural alignment), for every container that has two arrays.
pub(crate) fn split_ratio_by_value_size(
    key: ElementType,
    value_sizes: &[u64],
    count: u64,
    classes: &SizeClasses,
) -> Result<Vec<RatioBySize>, GrowthError> {
    let mut out: Vec<RatioBySize> = Vec::new();
    // Maps whose two arrays depend on the value size (a node map's slots are pointers).
    let kinds = ContainerKind::ALL.into_iter().filter(|k| {
        k.has_two_arrays()
            && k.value_rule() != super::spec::ValueRule::Forbidden
            && *k != ContainerKind::AbslNodeHashMap
    });
    for kind in kinds {
        let mut points = Vec::new();
        for &size in value_sizes {
            let value = ElementType::new(size, super::core::natural_align(size))
                .expect("chart value sizes are valid");
            let spec = ContainerSpec::new(kind, key, Some(value), KeyOrder::Ascending)
                .expect("maps take a value");
            let growth = grow(&spec, count, classes, &[], &mut |_| {})?;
            if let Some(v) = SplitVerdict::of(&growth) {
                points.push((size, v.mean));
            }
        }
        if !points.is_empty() {
            out.push((kind, points));
        }
    }
    Ok(out)
}
