//! The after / before ratio over value size × table size, colours diverging around 1.0.

use super::{plot_err, Chart, Layout, FONT};
use crate::export::human::thousands;
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

#[derive(Clone, Debug)]
pub struct RatioHeatmap {
    pub subtitle: String,
    pub value_sizes: Vec<u64>,
    pub capacities: Vec<u64>,
    /// `ratios[i][j]`: value size i, capacity j.
    pub ratios: Vec<Vec<f64>>,
}

/// Blue when the unified block is cheaper, white at 1.0, vermilion when it is dearer;
/// `t` in [-1, 1].
fn diverging(t: f64) -> RGBColor {
    let t = t.clamp(-1.0, 1.0);
    let (end, s) = if t < 0.0 {
        ((33.0, 102.0, 172.0), -t)
    } else {
        ((178.0, 24.0, 43.0), t)
    };
    let mix = |a: f64, b: f64| (a + (b - a) * s).round() as u8;
    RGBColor(mix(247.0, end.0), mix(247.0, end.1), mix(247.0, end.2))
}

/// The label of a segment centre, every `step`-th counted back from the last (so the last
/// cell is always labelled); nothing elsewhere.
fn label(v: &SegmentValue<usize>, names: &[u64], step: usize) -> String {
    match v {
        SegmentValue::CenterOf(i)
            if names
                .len()
                .saturating_sub(1 + i)
                .is_multiple_of(step.max(1)) =>
        {
            names.get(*i).map_or(String::new(), |&n| thousands(n))
        }
        _ => String::new(),
    }
}

/// Most labels an axis of `cells` cells gets, one cell in `step` labelled.
const MAX_X_LABELS: usize = 17;

impl RatioHeatmap {
    /// The largest distance from 1.0, so the colour scale is symmetric.
    fn spread(&self) -> f64 {
        self.ratios
            .iter()
            .flatten()
            .map(|r| (r - 1.0).abs())
            .fold(0.01, f64::max)
    }
}

impl Chart for RatioHeatmap {
    fn name(&self) -> &str {
        "ratio-heatmap"
    }

    fn title(&self) -> String {
        format!("Unified / split footprint, {}", self.subtitle)
    }

    fn size(&self) -> (u32, u32) {
        (1400, 850)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        _layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let area = area.titled(&self.title(), (FONT, 30)).map_err(plot_err)?;
        let (main, legend) = area.split_horizontally(area.dim_in_pixel().0 - 190);
        let (nx, ny) = (self.value_sizes.len(), self.capacities.len());
        let mut chart = ChartBuilder::on(&main)
            .margin(15)
            .x_label_area_size(60)
            .y_label_area_size(110)
            // Segmented axes put each label at the centre of its cell.
            // (0..n - 1) segmented has n cells: plotters counts the range's end as a cell.
            .build_cartesian_2d(
                (0..nx.saturating_sub(1)).into_segmented(),
                (0..ny.saturating_sub(1)).into_segmented(),
            )
            .map_err(plot_err)?;
        let sizes = self.value_sizes.clone();
        let caps = self.capacities.clone();
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("sizeof(value_type), bytes")
            .y_desc("table capacity (values)")
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 22))
            // A key point on every cell; the formatter picks which to label.
            .x_labels(nx + 1)
            .y_labels(ny + 1)
            .x_label_formatter(&|v| label(v, &sizes, nx.div_ceil(MAX_X_LABELS)))
            .y_label_formatter(&|v| label(v, &caps, 1))
            .draw()
            .map_err(plot_err)?;
        let spread = self.spread();
        chart
            .draw_series(self.ratios.iter().enumerate().flat_map(|(i, row)| {
                row.iter().enumerate().map(move |(j, &r)| {
                    Rectangle::new(
                        [
                            (SegmentValue::Exact(i), SegmentValue::Exact(j)),
                            (SegmentValue::Exact(i + 1), SegmentValue::Exact(j + 1)),
                        ],
                        diverging((r - 1.0) / spread).filled(),
                    )
                })
            }))
            .map_err(plot_err)?;

        // The colour legend: a vertical strip from 1 - spread (bottom) to 1 + spread (top).
        let mut scale = ChartBuilder::on(&legend)
            .margin_top(40)
            .margin_bottom(75)
            .margin_right(20)
            .y_label_area_size(70)
            .caption("after / before", (FONT, 18))
            .build_cartesian_2d(0f64..1.0, (1.0 - spread)..(1.0 + spread))
            .map_err(plot_err)?;
        scale
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .label_style((FONT, 16))
            .y_labels(9)
            .y_label_formatter(&|y| format!("{y:.2}"))
            .draw()
            .map_err(plot_err)?;
        let steps = 100;
        scale
            .draw_series((0..steps).map(|k| {
                let lo = 1.0 - spread + 2.0 * spread * k as f64 / steps as f64;
                let hi = lo + 2.0 * spread / steps as f64;
                let t = ((lo + hi) / 2.0 - 1.0) / spread;
                Rectangle::new([(0.0, lo), (1.0, hi)], diverging(t).filled())
            }))
            .map_err(plot_err)?;
        Ok(())
    }
}
