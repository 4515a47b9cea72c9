//! Grouped bars: one group per category (e.g. strategy), one bar per series (e.g. build and
//! reset time).

use super::{category_frame, draw_legend, legend_box, named_chart, palette, plot_err, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

#[derive(Clone, Debug)]
pub struct GroupedBars {
    pub name: String,
    pub title: String,
    pub y_desc: String,
    pub categories: Vec<String>,
    /// (series label, one value per category).
    pub series: Vec<(String, Vec<f64>)>,
    /// Decimals on bar labels (more for small values, so each shows two significant digits).
    pub decimals: usize,
}

impl Chart for GroupedBars {
    named_chart!();

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let top = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.5;
        let n = self.categories.len();
        let mut chart = category_frame(
            area,
            self.title(),
            &self.categories,
            n as f64,
            top,
            self.y_desc.clone(),
        )?;
        let k = self.series.len().max(1) as f64;
        let width = 0.7 / k;
        for (s, (label, values)) in self.series.iter().enumerate() {
            let color = palette::SERIES[s % palette::SERIES.len()];
            let x0 = |i: usize| i as f64 + 0.15 + width * s as f64;
            chart
                .draw_series(values.iter().enumerate().map(|(i, &v)| {
                    Rectangle::new([(x0(i), 0.0), (x0(i) + width * 0.92, v)], color.filled())
                }))
                .map_err(plot_err)?
                .label(label.clone())
                .legend(legend_box(color));
            let decimals = self.decimals;
            // Centred above each bar.
            let style = (FONT, 16)
                .into_font()
                .into_text_style(area)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            chart
                .draw_series(values.iter().enumerate().map(|(i, &v)| {
                    Text::new(
                        bar_label(v, decimals),
                        (x0(i) + width * 0.46, v + top * 0.01),
                        style.clone(),
                    )
                }))
                .map_err(plot_err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// `v` with `decimals` decimals, or more when that would show fewer than two significant
/// digits (0.02 ms is "0.020", not "0.0"); exactly zero is "0".
pub(crate) fn bar_label(v: f64, decimals: usize) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v:.0}");
    }
    let needed = 1 - v.abs().log10().floor() as i64;
    let decimals = decimals.max(needed.clamp(0, 9) as usize);
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::bar_label;

    #[test]
    fn small_bars_keep_two_significant_digits() {
        assert_eq!(bar_label(0.02, 1), "0.020");
        assert_eq!(bar_label(0.0213, 1), "0.021");
        assert_eq!(bar_label(4.8, 1), "4.8");
        assert_eq!(bar_label(81.14, 1), "81.1");
        assert_eq!(bar_label(450.2, 0), "450");
        assert_eq!(bar_label(0.47, 0), "0.47");
        assert_eq!(bar_label(0.0, 1), "0");
    }
}
