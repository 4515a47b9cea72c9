//! Horizontal grouped bars: one row per category (e.g. a run-time setting, whose label may be
//! long), one bar per series (e.g. peak and mean active bytes), values in bytes.

use super::{
    captioned, draw_plot, frame, named_chart, palette, plot_err, Chart, Corner, F64Chart, Layout,
    Series, Shape, FONT,
};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

#[derive(Clone, Debug)]
pub struct HorizontalBars {
    pub name: String,
    pub title: String,
    pub x_desc: String,
    /// Top row first.
    pub categories: Vec<String>,
    /// (series label, one value in bytes per category).
    pub series: Vec<(String, Vec<f64>)>,
    /// Label each bar with its change against this row's bar of the same series (`+1.2%`):
    /// a difference of 1% is invisible in a bar's length.
    pub changes_against: Option<usize>,
}

impl HorizontalBars {
    /// The label of series `s`'s bar in row `i`: the value in `unit` (one decimal below 100,
    /// so that small values keep three digits), and its change where asked.
    fn label(&self, s: usize, i: usize, unit: f64) -> String {
        let values = &self.series[s].1;
        let v = values[i] / unit;
        let mut text = match v < 100.0 {
            true => format!("{v:.1}"),
            false => format!("{v:.0}"),
        };
        if let Some(base) = self.changes_against.and_then(|b| values.get(b).copied()) {
            if i != self.changes_against.unwrap_or(usize::MAX) && base > 0.0 {
                text.push_str(&format!(" ({:+.1}%)", (values[i] / base - 1.0) * 100.0));
            }
        }
        text
    }
}

/// The unit the largest value reads best in.
fn unit_of(max: f64) -> (f64, &'static str) {
    // Labels are whole numbers: KiB up to 10 MiB keeps three or four digits apart.
    if max >= (10u64 << 30) as f64 {
        ((1u64 << 30) as f64, "GiB")
    } else if max >= (10u64 << 20) as f64 {
        ((1u64 << 20) as f64, "MiB")
    } else {
        (1024.0, "KiB")
    }
}

impl Chart for HorizontalBars {
    named_chart!();

    fn size(&self) -> (u32, u32) {
        // Each bar tall enough for its label's text.
        let per_row = 16 + 18 * self.series.len().max(1) as u32;
        (1400, 160 + per_row * self.categories.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let max = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(0.0f64, f64::max)
            .max(1.0);
        let (unit, unit_name) = unit_of(max);
        let right = max / unit * 1.6;
        let n = self.categories.len();
        let longest = self.categories.iter().map(|c| c.len()).max().unwrap_or(0) as u32;
        let area = captioned(area, &self.title(), 26, (20, 20, 20, 20))?;
        let categories = &self.categories;
        let x_desc = format!("{}, {unit_name}", self.x_desc);
        let mesh = |chart: &mut F64Chart<'_, DB>| {
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(n * 2 + 1)
                .y_label_formatter(&|y| {
                    // Row i (from the top) is centred on n - i - 0.5.
                    let i = (n as f64 - 0.5 - y).round();
                    if (n as f64 - 0.5 - y - i).abs() < 1e-6 && i >= 0.0 {
                        categories.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .x_label_formatter(&|x| format!("{x:.0}"))
                .x_desc(&x_desc)
                .label_style((FONT, 16))
                .axis_desc_style((FONT, 20))
                .draw()
                .map_err(plot_err)
        };
        let build = frame(|a| {
            ChartBuilder::on(a)
                .x_label_area_size(50)
                .y_label_area_size(40 + 10 * longest)
                .build_cartesian_2d(0f64..right, 0f64..n.max(1) as f64)
                .map_err(plot_err)
        });
        let series = self.bars(unit, right);
        draw_plot(
            &area,
            build,
            mesh,
            &series,
            Some(Corner::UpperRight),
            layout,
        )
    }
}

impl HorizontalBars {
    /// Each series' bars (in the legend) and their labels, in `unit`s on an axis to `right`.
    fn bars(&self, unit: f64, right: f64) -> Vec<Series> {
        let n = self.categories.len();
        let height = 0.8 / self.series.len().max(1) as f64;
        let mut series = Vec::new();
        for (s, (label, values)) in self.series.iter().enumerate() {
            let color = palette::SERIES[s % palette::SERIES.len()];
            // Series 0 on top within each row.
            let y0 = |i: usize| (n - 1 - i) as f64 + 0.9 - height * (s as f64 + 1.0);
            let rects = (values.iter().enumerate())
                .map(|(i, &v)| [(0.0, y0(i)), (v / unit, y0(i) + height * 0.9)])
                .collect();
            series.push(Series::new(Some(label.clone()), color, Shape::Bars(rects)));
            let texts = (values.iter().enumerate())
                .map(|(i, &v)| {
                    let at = (v / unit + right * 0.005, y0(i) + height * 0.45);
                    (self.label(s, i, unit), at)
                })
                .collect();
            series.push(Series::texts(texts, 14, Pos::new(HPos::Left, VPos::Center)));
        }
        series
    }
}
