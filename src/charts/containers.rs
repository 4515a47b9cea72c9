//! Line charts for the container comparison: bytes per element against N (log x), and the
//! split-vs-unified ratio against the value size. Plain data in, no domain types.

use super::{draw_legend, named_chart, palette, plot_err, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One labelled line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Several lines over a shared x axis (log2 or linear), optional horizontal reference line.
#[derive(Clone, Debug, PartialEq)]
pub struct LinesChart {
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Plot log2(x) so that ticks fall on powers of two.
    pub log_x: bool,
    pub lines: Vec<Line>,
    /// A dashed horizontal line (e.g. ratio 1).
    pub reference_y: Option<f64>,
    /// Clip the y axis to this range (None: fit the data).
    pub y_range: Option<(f64, f64)>,
}

const COLORS: [RGBColor; 10] = palette::LINES;

impl LinesChart {
    fn x(&self, x: f64) -> f64 {
        if self.log_x {
            x.max(1e-9).log2()
        } else {
            x
        }
    }
}

impl Chart for LinesChart {
    named_chart!();

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let all = || self.lines.iter().flat_map(|l| l.points.iter());
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(x, y) in all() {
            x0 = x0.min(self.x(x));
            x1 = x1.max(self.x(x));
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if !x0.is_finite() {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        if let Some(r) = self.reference_y {
            y0 = y0.min(r);
            y1 = y1.max(r);
        }
        if let Some((lo, hi)) = self.y_range {
            (y0, y1) = (lo, hi);
        }
        let pad = ((y1 - y0) * 0.05).max(1e-3);
        let log_x = self.log_x;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, 26))
            .margin(12)
            .margin_right(30)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1.max(x0 + 1e-9), (y0 - pad)..(y1 + pad))
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_labels(12)
            .y_labels(10)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 18))
            .x_label_formatter(&|x| {
                if log_x {
                    format!("{:.0}", x.exp2())
                } else {
                    format!("{x:.0}")
                }
            })
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .draw()
            .map_err(plot_err)?;
        if let Some(r) = self.reference_y {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, r), (x1, r)],
                    6,
                    4,
                    BLACK.stroke_width(1),
                ))
                .map_err(plot_err)?;
        }
        for (i, line) in self.lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let points: Vec<(f64, f64)> = line
                .points
                .iter()
                .map(|&(x, y)| (self.x(x), y.clamp(y0 - pad, y1 + pad)))
                .collect();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(plot_err)?
                .label(line.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
