//! Line charts for the container comparison: bytes per element against N (log x), and the
//! split-vs-unified ratio against the value size. Plain data in, no domain types.

use super::{
    captioned, draw_plot, frame, named_chart, palette, plot_err, Chart, Corner, F64Chart, Layout,
    Series, Shape, FONT,
};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;

/// One labelled line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Several lines over a shared x axis (log2 or linear), optional horizontal reference line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LinesChart {
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
    /// One panel per line (the others faint behind it) instead of every line in one frame:
    /// for lines that cross each other all along (sawtooths).
    pub panels: bool,
}

const COLORS: [RGBColor; 10] = palette::LINES;

/// Lines with exactly the same points, drawn as one: (label naming them all, the first
/// line's index, which picks the colour).
fn merged(lines: &[Line]) -> Vec<(String, usize)> {
    let mut groups: Vec<(Vec<&str>, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match groups
            .iter_mut()
            .find(|(_, first)| lines[*first].points == line.points)
        {
            Some((labels, _)) => labels.push(&line.label),
            None => groups.push((vec![&line.label], i)),
        }
    }
    let label = |labels: &[&str]| match labels {
        [one] => one.to_string(),
        [many @ .., last] => format!("{} and {last} (same values)", many.join(", ")),
        [] => String::new(),
    };
    groups.into_iter().map(|(l, i)| (label(&l), i)).collect()
}

impl LinesChart {
    fn x(&self, x: f64) -> f64 {
        if self.log_x {
            x.max(1e-9).log2()
        } else {
            x
        }
    }

    /// The axes' ranges over every line (and the reference), y padded by 5%.
    fn ranges(&self) -> (Range<f64>, Range<f64>) {
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
        (x0..x1.max(x0 + 1e-9), (y0 - pad)..(y1 + pad))
    }

    /// Line `i`'s points on the axes, clipped to `y`.
    fn points(&self, i: usize, y: &Range<f64>) -> Vec<(f64, f64)> {
        let line = &self.lines[i].points;
        line.iter()
            .map(|&(px, py)| (self.x(px), py.clamp(y.start, y.end)))
            .collect()
    }

    /// The dashed reference line across `x`, if any.
    fn reference(&self, x: &Range<f64>) -> Option<Series> {
        let shape = Shape::Line {
            points: vec![(x.start, self.reference_y?), (x.end, self.reference_y?)],
            width: 1,
            dashed: true,
        };
        Some(Series::new(None, BLACK, shape))
    }

    /// One plot on `area`: `series` over `x` by `y`, the axes' labels in `font` points.
    fn plot<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        (x, y): (Range<f64>, Range<f64>),
        series: &[Series],
        (font, legend): (u32, Option<Corner>),
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let log_x = self.log_x;
        let mesh = |chart: &mut F64Chart<'_, DB>| {
            chart
                .configure_mesh()
                .x_labels(12)
                .y_labels(10)
                .label_style((FONT, font))
                .axis_desc_style((FONT, font + 2))
                .x_label_formatter(&|x| match log_x {
                    true => format!("{:.0}", x.exp2()),
                    false => format!("{x:.0}"),
                })
                .x_desc(&self.x_label)
                .y_desc(&self.y_label)
                .draw()
                .map_err(plot_err)
        };
        let build = frame(|a| {
            ChartBuilder::on(a)
                .x_label_area_size(font * 3 + 12)
                .y_label_area_size(80)
                .build_cartesian_2d(x.clone(), y.clone())
                .map_err(plot_err)
        });
        draw_plot(area, build, mesh, series, legend, layout)
    }

    /// Every line in one frame, lines with the same points merged.
    fn draw_together<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let (x, y) = self.ranges();
        let lines = merged(&self.lines)
            .into_iter()
            .map(|(label, i)| Series::line(label, COLORS[i % COLORS.len()], self.points(i, &y)));
        let series: Vec<Series> = self.reference(&x).into_iter().chain(lines).collect();
        let area = captioned(area, &self.title, 26, (12, 12, 12, 30))?;
        let options = (16, Some(Corner::UpperRight));
        self.plot(&area, (x, y), &series, options, layout)
    }

    /// One panel per line, on the same axes, the other lines faint behind it.
    fn draw_panels<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let (x, y) = self.ranges();
        let area = captioned(area, &self.title, 26, (12, 12, 12, 12))?;
        let n = self.lines.len().max(1);
        let panels = area.split_evenly((n.div_ceil(PANEL_COLUMNS), PANEL_COLUMNS.min(n)));
        for (i, (line, panel)) in self.lines.iter().zip(&panels).enumerate() {
            let others = (0..self.lines.len()).filter(|&j| j != i).map(|j| {
                let faint = Shape::Line {
                    points: self.points(j, &y),
                    width: 1,
                    dashed: false,
                };
                Series::new(None, palette::GREY.mix(0.35), faint)
            });
            let this = Series::line(
                line.label.clone(),
                COLORS[i % COLORS.len()],
                self.points(i, &y),
            );
            let reference = self.reference(&x);
            let series: Vec<Series> = others.chain(reference).chain([this]).collect();
            // The panel's caption names its line: no legend.
            let panel = captioned(panel, &line.label, 18, (6, 6, 6, 16))?;
            self.plot(&panel, (x.clone(), y.clone()), &series, (13, None), layout)?;
        }
        Ok(())
    }
}

/// Panels side by side in [`LinesChart::panels`] mode.
const PANEL_COLUMNS: usize = 2;

impl Chart for LinesChart {
    named_chart!();

    fn size(&self) -> (u32, u32) {
        match self.panels {
            // Rows of 260 pixels, each panel still wide enough for a log axis of 20 steps.
            true => (
                1200,
                60 + 260 * self.lines.len().div_ceil(PANEL_COLUMNS).max(1) as u32,
            ),
            false => (1200, 750),
        }
    }

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        match self.panels {
            true => self.draw_panels(area, layout),
            false => self.draw_together(area, layout),
        }
    }
}
