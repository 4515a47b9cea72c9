//! Stacked bars: one bar per category (e.g. build), split into parts (e.g. requested bytes,
//! rounding, slab fragmentation), the total printed on top.

use super::timeline::{stack_total, stacked_scale};
use super::{draw_legend, named_chart, palette, plot_err, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

#[derive(Clone, Debug)]
pub struct StackedBars {
    pub name: String,
    pub title: String,
    pub y_desc: String,
    pub categories: Vec<String>,
    /// (part label, one value in bytes per category), bottom part first.
    pub parts: Vec<(String, Vec<u64>)>,
}

impl Chart for StackedBars {
    named_chart!();

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let n = self.categories.len();
        let (max, unit, unit_name) = stacked_scale(&self.parts, n);
        let top = max * 1.35 / unit;
        let mut chart = ChartBuilder::on(area)
            .caption(self.title(), (FONT, 28))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(110)
            .build_cartesian_2d(0f64..n.max(1) as f64, 0f64..top)
            .map_err(plot_err)?;
        let categories = self.categories.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&|x| {
                let i = (x - 0.5).round();
                if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                    categories.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(format!("{}, {unit_name}", self.y_desc))
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .draw()
            .map_err(plot_err)?;
        let mut base = vec![0u64; n];
        for (p, (label, values)) in self.parts.iter().enumerate() {
            let color = palette::SERIES[p % palette::SERIES.len()];
            let bars: Vec<_> = (0..n)
                .map(|i| {
                    let v = values.get(i).copied().unwrap_or(0);
                    let (y0, y1) = (base[i], base[i] + v);
                    base[i] = y1;
                    Rectangle::new(
                        [
                            (i as f64 + 0.2, y0 as f64 / unit),
                            (i as f64 + 0.8, y1 as f64 / unit),
                        ],
                        color.filled(),
                    )
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(plot_err)?
                .label(label.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled())
                });
        }
        chart
            .draw_series((0..n).map(|i| {
                let total = stack_total(&self.parts, i) as f64 / unit;
                Text::new(
                    format!("{total:.2} {unit_name}"),
                    (i as f64 + 0.3, total + top * 0.02),
                    (FONT, 18),
                )
            }))
            .map_err(plot_err)?;
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
