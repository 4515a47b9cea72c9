//! Measured minus predicted bytes from the live validation, against the predicted size.

use super::{
    captioned, draw_plot, frame, palette, plot_err, waste::human_bytes, Chart, Corner, F64Chart,
    Layout, Series, Shape, FONT,
};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One compared quantity.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub label: String,
    pub predicted: u64,
    pub measured: u64,
}

#[derive(Clone, Debug)]
pub struct PredictedVsMeasured {
    pub subtitle: String,
    /// Usable-byte comparisons.
    pub usable: Vec<Comparison>,
    /// Active-page comparisons.
    pub active: Vec<Comparison>,
}

impl Chart for PredictedVsMeasured {
    fn name(&self) -> &str {
        "predicted-vs-measured"
    }

    fn title(&self) -> String {
        format!("Measured minus predicted bytes, {}", self.subtitle)
    }

    fn size(&self) -> (u32, u32) {
        (1200, 850)
    }

    /// One panel per quantity: the residual (measured - predicted) against the predicted
    /// size, so a mismatch stands off the zero line instead of hiding under the other series.
    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let area = area.titled(&self.title(), (FONT, 30)).map_err(plot_err)?;
        let panels = area.split_evenly((2, 1));
        let sets = [
            ("usable bytes", &self.usable, palette::BLUE),
            ("active page bytes", &self.active, palette::GREEN),
        ];
        for (i, ((label, set, color), panel)) in sets.into_iter().zip(&panels).enumerate() {
            draw_residuals(panel, label, set, color, i == 1, layout)?;
        }
        Ok(())
    }
}

/// measured - predicted, as a signed number (both are at most 2^64 - 1).
fn residual(c: &Comparison) -> i128 {
    c.measured as i128 - c.predicted as i128
}

/// The x axis of a residual plot: the predictions' log2 span, to whole powers of two.
fn log2_span(set: &[Comparison]) -> (f64, f64) {
    let (lo, hi) = set
        .iter()
        .map(|c| (c.predicted.max(1) as f64).log2())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
    if lo.is_finite() {
        (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
    } else {
        (0.0, 1.0)
    }
}

fn residuals_caption(label: &str, compared: usize, bad: usize, worst: u128) -> String {
    if bad == 0 {
        format!("{label}: {compared} compared, measured = predicted for all")
    } else {
        format!("{label}: {compared} compared, {bad} differ (largest by {worst} B)")
    }
}

fn draw_residuals<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    label: &str,
    set: &[Comparison],
    color: RGBColor,
    last: bool,
    layout: &mut Layout,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (lo, hi) = log2_span(set);
    let worst = set
        .iter()
        .map(|c| residual(c).unsigned_abs())
        .max()
        .unwrap_or(0);
    let bad = set.iter().filter(|c| c.predicted != c.measured).count();
    let span = if worst == 0 { 1.0 } else { worst as f64 * 1.3 };
    let caption = residuals_caption(label, set.len(), bad, worst);
    let area = captioned(area, &caption, 20, (15, 15, 15, 30))?;
    let mesh = |chart: &mut F64Chart<'_, DB>| {
        let mut mesh = chart.configure_mesh();
        mesh.label_style((FONT, 16))
            .axis_desc_style((FONT, 18))
            .x_labels(((hi - lo) as usize + 1).min(16))
            .y_labels(if worst == 0 { 3 } else { 5 })
            .x_label_formatter(&|x| human_bytes(x.exp2()))
            .y_label_formatter(&|y| {
                if (y - y.round()).abs() < 1e-9 {
                    format!("{y:.0}")
                } else {
                    format!("{y:.1}")
                }
            })
            .y_desc("measured - predicted (B)");
        if last {
            mesh.x_desc("predicted by the model (bytes, log scale)");
        }
        mesh.draw().map_err(plot_err)
    };
    let build = frame(|a| {
        ChartBuilder::on(a)
            .x_label_area_size(if last { 55 } else { 30 })
            .y_label_area_size(100)
            .build_cartesian_2d(lo..hi, -span..span)
            .map_err(plot_err)
    });
    let series = residual_series(label, set, color, (lo, hi));
    draw_plot(&area, build, mesh, &series, Some(Corner::UpperLeft), layout)
}

/// The dashed zero line over `x`, the equal comparisons as dots on it, the mismatches as
/// crosses at their residual with their labels beside them.
fn residual_series(label: &str, set: &[Comparison], color: RGBColor, x: (f64, f64)) -> Vec<Series> {
    let lg = |v: u64| (v.max(1) as f64).log2();
    let zero = Shape::Line {
        points: vec![(x.0, 0.0), (x.1, 0.0)],
        width: 2,
        dashed: true,
    };
    let (equal, differ): (Vec<&Comparison>, Vec<&Comparison>) =
        set.iter().partition(|c| c.predicted == c.measured);
    let dots = Shape::Dots {
        points: equal.iter().map(|c| (lg(c.predicted), 0.0)).collect(),
        radius: 4,
    };
    let at = |c: &Comparison| (lg(c.predicted), residual(c) as f64);
    let crosses = Shape::Crosses {
        points: differ.iter().map(|c| at(c)).collect(),
        size: 9,
    };
    let names = Shape::Texts {
        texts: differ.iter().map(|c| (c.label.clone(), at(c))).collect(),
        size: 16,
        pos: Pos::new(HPos::Left, VPos::Top),
        offset: (10, -18),
    };
    let warn = palette::VERMILION;
    let mut series = vec![Series::new(None, palette::GREY, zero)];
    // A legend entry only for what the panel shows.
    if !equal.is_empty() {
        series.push(Series::new(Some(format!("{label}: equal")), color, dots));
    }
    if !differ.is_empty() {
        let mismatches = Some(format!("mismatch ({})", differ.len()));
        series.push(Series::new(mismatches, warn, crosses));
        series.push(Series::new(None, warn, names));
    }
    series
}
