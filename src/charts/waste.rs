//! Internal fragmentation (usable / requested − 1) against request size: the sawtooth of the
//! size classes, for several builds.

use super::{palette, plot_err, Chart, Layout, FONT};
use crate::sizeclass::SizeClasses;
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

#[derive(Clone, Debug)]
pub struct WasteCurve {
    /// (label, builds' classes).
    pub builds: Vec<(String, SizeClasses)>,
    pub max_request: u64,
}

impl WasteCurve {
    /// The exact sawtooth: the waste is highest one byte past a class and zero at the next
    /// class, and falls as 1/request in between, so sample each gap at both ends and a few
    /// points inside.
    pub fn points(classes: &SizeClasses, max_request: u64) -> Vec<(f64, f64)> {
        let mut points = Vec::new();
        let mut start = 1u64;
        while start <= max_request {
            let Some(class) = classes.usable_size(start) else {
                break;
            };
            let end = class.min(max_request);
            let span = end - start;
            let samples: Vec<u64> = if span <= 4 {
                (start..=end).collect()
            } else {
                (0..=8).map(|k| start + span * k / 8).collect()
            };
            for r in samples {
                points.push((r as f64, class as f64 / r as f64 - 1.0));
            }
            start = class + 1;
        }
        points
    }
}

impl Chart for WasteCurve {
    fn name(&self) -> &str {
        "waste-curve"
    }

    fn title(&self) -> String {
        "Internal fragmentation of one allocation: usable / requested − 1".into()
    }

    fn size(&self) -> (u32, u32) {
        (1200, 300 * self.builds.len().max(1) as u32 + 60)
    }

    /// One panel per build, stacked: the sawtooths overlap too much to share one frame.
    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        _layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let area = area.titled(&self.title(), (FONT, 30)).map_err(plot_err)?;
        let panels = area.split_evenly((self.builds.len().max(1), 1));
        let curves: Vec<Vec<(f64, f64)>> = self
            .builds
            .iter()
            .map(|(_, classes)| Self::points(classes, self.max_request))
            .collect();
        // One y scale for every panel, up to the largest waste (700% for 1 B in an 8 B class).
        let top = curves
            .iter()
            .flatten()
            .map(|p| p.1)
            .fold(WASTE_TICKS[1], f64::max);
        let ticks: Vec<f64> = WASTE_TICKS
            .iter()
            .copied()
            .filter(|&t| t < top * 0.9)
            .chain([top])
            .collect();
        for (i, (((label, _), points), panel)) in
            self.builds.iter().zip(&curves).zip(&panels).enumerate()
        {
            let color = palette::SERIES[i % palette::SERIES.len()];
            let last = i + 1 == self.builds.len();
            let mut chart = ChartBuilder::on(panel)
                .caption(format!("{label}: {}", peaks(points)), (FONT, 18))
                .margin(8)
                .margin_right(30)
                .x_label_area_size(if last { 55 } else { 25 })
                .y_label_area_size(80)
                .build_cartesian_2d(
                    // log2 of the request on a linear axis, so ticks fall on powers of two.
                    0f64..(self.max_request as f64).log2(),
                    // A log scale shifted by 10%, so 0% has a place and both the 25% peaks
                    // of large requests and the 700% of tiny ones are readable.
                    (0f64..top)
                        .log_scale()
                        .zero_point(-LOG_SHIFT)
                        .with_key_points(ticks.clone()),
                )
                .map_err(plot_err)?;
            let mut mesh = chart.configure_mesh();
            mesh.x_labels(12)
                .label_style((FONT, 16))
                .axis_desc_style((FONT, 18))
                .x_label_formatter(&|x| human_bytes(x.exp2()))
                .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
                .y_desc("waste (log)");
            if last {
                mesh.x_desc("requested bytes (log scale)");
            }
            mesh.draw().map_err(plot_err)?;
            let points: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.log2(), y)).collect();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(1)))
                .map_err(plot_err)?;
        }
        Ok(())
    }
}

/// Waste levels marked on the y axis (fractions); the curve's maximum is added on top.
const WASTE_TICKS: [f64; 7] = [0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0];
/// The y axis is log(waste + LOG_SHIFT).
const LOG_SHIFT: f64 = 0.1;

/// "max 700% at 1 B, at most 25.0% above 64 B": the largest waste, and the largest past the
/// smallest power of two beyond which the waste stays within 25%.
fn peaks(points: &[(f64, f64)]) -> String {
    let Some(&(at, max)) = points.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return String::new();
    };
    let above = |bound: f64| {
        points
            .iter()
            .filter(|p| p.0 > bound)
            .map(|p| p.1)
            .fold(0.0, f64::max)
    };
    let bound = (0..40)
        .map(|k| (1u64 << k) as f64)
        .find(|&b| above(b) <= 0.25)
        .unwrap_or(0.0);
    format!(
        "max {:.0}% at {}, at most {:.1}% above {}",
        max * 100.0,
        human_bytes(at),
        above(bound) * 100.0,
        human_bytes(bound)
    )
}

/// 1 B, 4 KiB, 2 MiB ... for axis labels.
pub(crate) fn human_bytes(x: f64) -> String {
    let x = x.round();
    let units = [("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (unit, shift) in units {
        let scale = (1u64 << shift) as f64;
        if x >= scale {
            let v = x / scale;
            return if (v - v.round()).abs() < 0.05 {
                format!("{:.0} {unit}", v)
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{x:.0} B")
}
