//! Horizontal stacked bars: the size classes that lose the most bytes, largest loss on top,
//! each bar split by cause (rounding, empty slab regions, large padding).

use super::timeline::{stack_total, stacked_scale};
use super::{draw_legend, draw_stacked, named_chart, plot_err, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

#[derive(Clone, Debug)]
pub struct ClassLoss {
    pub name: String,
    pub title: String,
    /// Row labels (e.g. `48 B`), top row first.
    pub rows: Vec<String>,
    /// (cause label, bytes per row).
    pub causes: Vec<(String, Vec<u64>)>,
}

impl Chart for ClassLoss {
    named_chart!();

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let n = self.rows.len();
        let (max, unit, unit_name) = stacked_scale(&self.causes, n);
        let right = max * 1.3 / unit;
        // Row i is drawn at y in (n - 1 - i, n - i), so the first row is on top.
        let y_of = move |i: usize| (n - 1 - i) as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(self.title(), (FONT, 28))
            .margin(20)
            .margin_right(40)
            .x_label_area_size(55)
            .y_label_area_size(130)
            .build_cartesian_2d(0f64..right, 0f64..n.max(1) as f64)
            .map_err(plot_err)?;
        let rows = self.rows.clone();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| {
                let k = (y - 0.5).round();
                if (y - 0.5 - k).abs() < 1e-6 && k >= 0.0 && (k as usize) < n {
                    rows[n - 1 - k as usize].clone()
                } else {
                    String::new()
                }
            })
            .x_desc(format!("{unit_name} lost at the peak of active bytes"))
            .y_desc("size class")
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .draw()
            .map_err(plot_err)?;
        // The causes start at the second colour.
        draw_stacked(&mut chart, &self.causes, n, unit, 1, |i, from, to| {
            [(from, y_of(i) + 0.15), (to, y_of(i) + 0.85)]
        })?;
        chart
            .draw_series((0..n).map(|i| {
                let total = stack_total(&self.causes, i) as f64 / unit;
                Text::new(
                    format!("{total:.1} {unit_name}"),
                    (total + right * 0.01, y_of(i) + 0.35),
                    (FONT, 16),
                )
            }))
            .map_err(plot_err)?;
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
    }
}
