//! Footprint change against value size: the seed's printed table, our reproduction of its
//! model, and the physically exact ratios.

use super::{draw_legend, palette, plot_err, Chart, FONT};
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

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
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
        let mut chart = ChartBuilder::on(area)
            .caption(self.title(), (FONT, 30))
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(
                (x_lo.saturating_sub(4)) as f64..(x_hi + 4) as f64,
                (lo - 0.02)..(hi + 0.03),
            )
            .map_err(plot_err)?;
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
            .map_err(plot_err)?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x_lo as f64 - 4.0, 1.0), (x_hi as f64 + 4.0, 1.0)],
                8,
                6,
                palette::GREY.stroke_width(2),
            ))
            .map_err(plot_err)?;
        for (i, s) in self.series.iter().enumerate() {
            let color = palette::SERIES[i % palette::SERIES.len()];
            let points: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (x as f64, y)).collect();
            if s.markers {
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 7, color.filled())))
                    .map_err(plot_err)?
                    .label(s.label.clone())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 6, color.filled()));
            } else {
                let width = s.width;
                chart
                    .draw_series(LineSeries::new(points.clone(), color.stroke_width(s.width)))
                    .map_err(plot_err)?
                    .label(s.label.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(width))
                    });
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(plot_err)?;
            }
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
