//! Resident memory over time: the model's line, the live runs' band (min-max), and active
//! bytes beneath (the part decay cannot touch).

use super::timeline::byte_unit;
use super::{draw_legend, named_chart, palette, plot_err, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One point of [`ResidentBand`]: time (ms) and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResidentPoint {
    pub time_ms: f64,
    pub model_resident: f64,
    pub live_min: f64,
    pub live_max: f64,
    pub active: f64,
}

#[derive(Clone, Debug)]
pub struct ResidentBand {
    pub name: String,
    pub title: String,
    /// Points in time order.
    pub points: Vec<ResidentPoint>,
    /// Legend labels: (model, live band, active).
    pub labels: [String; 3],
}

impl Chart for ResidentBand {
    named_chart!();

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let x_max = self.points.iter().map(|p| p.time_ms).fold(1.0f64, f64::max);
        let y_max = self
            .points
            .iter()
            .map(|p| p.model_resident.max(p.live_max).max(p.active))
            .fold(1.0f64, f64::max);
        let (unit, unit_name) = byte_unit(y_max);
        let mut chart = ChartBuilder::on(area)
            .caption(self.title(), (FONT, 26))
            .margin(20)
            .margin_right(40)
            .x_label_area_size(55)
            .y_label_area_size(90)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max * 1.1 / unit)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("time (ms, the trace's clock)")
            .y_desc(unit_name)
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .draw()
            .map_err(plot_err)?;
        // The band: the live maxima forward, the minima back.
        let band: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|p| (p.time_ms, p.live_max / unit))
            .chain(
                self.points
                    .iter()
                    .rev()
                    .map(|p| (p.time_ms, p.live_min / unit)),
            )
            .collect();
        let band_color = palette::ORANGE.mix(0.35);
        chart
            .draw_series(std::iter::once(Polygon::new(band, band_color.filled())))
            .map_err(plot_err)?
            .label(self.labels[1].clone())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 6), (x + 20, y + 6)], band_color.filled())
            });
        let lines = [
            (0, palette::BLUE, self.labels[0].clone()),
            (2, palette::GREY, self.labels[2].clone()),
        ];
        for (which, color, label) in lines {
            chart
                .draw_series(LineSeries::new(
                    self.points.iter().map(|p| {
                        let y = if which == 0 {
                            p.model_resident
                        } else {
                            p.active
                        };
                        (p.time_ms, y / unit)
                    }),
                    color.stroke_width(2),
                ))
                .map_err(plot_err)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(3))
                });
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
