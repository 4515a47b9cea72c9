//! Footprint change against value size: the seed's printed table, our reproduction of its
//! model, and the physically exact ratios.

use super::{
    captioned, draw_plot, frame, palette, plot_err, Chart, Corner, F64Chart, Layout, Series, Shape,
    FONT,
};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One line (or set of markers) on the chart.
#[derive(Clone, Debug)]
pub struct SeedSeries {
    pub label: String,
    /// (sizeof(value_type), after / before).
    pub points: Vec<(u64, f64)>,
    /// Markers only (printed values) rather than a line.
    pub markers: bool,
    /// Line width in pixels (wider lines under narrower ones show where series coincide).
    pub width: u32,
}

#[derive(Clone, Debug)]
pub struct SeedChart {
    pub series: Vec<SeedSeries>,
}

impl Chart for SeedChart {
    fn name(&self) -> &str {
        "seed-vs-fragsim"
    }

    fn title(&self) -> String {
        "F14VectorMap: footprint change of one allocation (after / before)".into()
    }

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let all = self.series.iter().flat_map(|s| s.points.iter());
        let (lo, hi) = all.fold((1.0f64, 1.0f64), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
        let (x_lo, x_hi) = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .fold((u64::MAX, 0), |(a, b), x| (a.min(x), b.max(x)));
        let (x_lo, x_hi) = (x_lo.saturating_sub(4) as f64, (x_hi + 4) as f64);
        let area = captioned(area, &self.title(), 30, (20, 20, 20, 20))?;
        let mesh = |chart: &mut F64Chart<'_, DB>| {
            chart
                .configure_mesh()
                .x_desc("sizeof(value_type), bytes")
                .y_desc("footprint after / before")
                .x_labels(16)
                .y_labels(12)
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .y_label_formatter(&|y| format!("{y:.2}"))
                .x_label_formatter(&|x| format!("{x:.0}"))
                .draw()
                .map_err(plot_err)
        };
        let build = frame(|a| {
            ChartBuilder::on(a)
                .x_label_area_size(60)
                .y_label_area_size(90)
                .build_cartesian_2d(x_lo..x_hi, (lo - 0.02)..(hi + 0.03))
                .map_err(plot_err)
        });
        let series = self.plotted(x_lo, x_hi);
        draw_plot(&area, build, mesh, &series, Some(Corner::UpperLeft), layout)
    }
}

impl SeedChart {
    /// The dashed line at 1 from `x_lo` to `x_hi`, then each series: printed values as
    /// large dots, lines with small dots on their points (under the line, which the legend
    /// names).
    fn plotted(&self, x_lo: f64, x_hi: f64) -> Vec<Series> {
        let one = Shape::Line {
            points: vec![(x_lo, 1.0), (x_hi, 1.0)],
            width: 2,
            dashed: true,
        };
        let mut series = vec![Series::new(None, palette::GREY, one)];
        for (i, s) in self.series.iter().enumerate() {
            let color = palette::SERIES[i % palette::SERIES.len()];
            let points: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (x as f64, y)).collect();
            let label = Some(s.label.clone());
            if s.markers {
                let dots = Shape::Dots { points, radius: 7 };
                series.push(Series::new(label, color, dots));
            } else {
                let dots = Shape::Dots {
                    points: points.clone(),
                    radius: 3,
                };
                series.push(Series::new(None, color, dots));
                let line = Shape::Line {
                    points,
                    width: s.width,
                    dashed: false,
                };
                series.push(Series::new(label, color, line));
            }
        }
        series
    }
}
