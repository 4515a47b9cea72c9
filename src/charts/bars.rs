//! Grouped bars: one group per category (e.g. strategy), one bar per series (e.g. build and
//! reset time).

use super::{
    captioned, category_frame, category_mesh, draw_plot, named_chart, palette, plot_err, Chart,
    Corner, Layout, Series, Shape, FONT,
};
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

/// A series of [`GroupedBars`] with its index among them all.
type Indexed<'a> = (usize, &'a (String, Vec<f64>));

impl GroupedBars {
    /// The series with a bar above zero somewhere (drawn), each with its index (which keeps
    /// its colour whichever others are left out), and the names of the others (zero
    /// everywhere: named in a note, since a bar of height zero shows nothing).
    fn drawn(&self) -> (Vec<Indexed<'_>>, Vec<&str>) {
        let (drawn, zero): (Vec<_>, Vec<_>) = (self.series.iter().enumerate())
            .partition(|(_, (_, values))| values.iter().any(|&v| v != 0.0));
        (
            drawn,
            zero.iter().map(|(_, (label, _))| label.as_str()).collect(),
        )
    }

    /// The bars (each series in its colour, in the legend) and their value labels.
    fn bars(&self, drawn: &[Indexed<'_>], top: f64) -> Vec<Series> {
        let width = 0.7 / drawn.len().max(1) as f64;
        let mut series = Vec::new();
        for (s, &(index, (label, values))) in drawn.iter().enumerate() {
            let color = palette::SERIES[index % palette::SERIES.len()];
            let x0 = |i: usize| i as f64 + 0.15 + width * s as f64;
            let bars = values.iter().enumerate();
            let rects = bars
                .clone()
                .map(|(i, &v)| [(x0(i), 0.0), (x0(i) + width * 0.92, v)])
                .collect();
            series.push(Series::new(Some(label.clone()), color, Shape::Bars(rects)));
            // Centred above each bar.
            let texts = bars
                .map(|(i, &v)| {
                    let at = (x0(i) + width * 0.46, v + top * 0.01);
                    (bar_label(v, self.decimals), at)
                })
                .collect();
            let bottom = Pos::new(HPos::Center, VPos::Bottom);
            series.push(Series::texts(texts, 16, bottom));
        }
        series
    }
}

impl Chart for GroupedBars {
    named_chart!();

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
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
        let (drawn, zero) = self.drawn();
        let mut area = captioned(area, &self.title(), 28, (20, 20, 20, 20))?;
        if !zero.is_empty() {
            let note = format!("0 everywhere, so no bars: {}", zero.join(", "));
            area = area.titled(&note, (FONT, 18)).map_err(plot_err)?;
        }
        let n = self.categories.len();
        draw_plot(
            &area,
            |a| category_frame(a, n as f64, top),
            |chart| category_mesh(chart, &self.categories, &self.y_desc),
            &self.bars(&drawn, top),
            Some(Corner::UpperRight),
            layout,
        )
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
