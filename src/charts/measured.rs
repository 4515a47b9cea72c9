//! Measured resident bytes against event index, one line per allocator, with the model's
//! active bytes (dashed) and the requested bytes (thin, black) beside them.

use super::timeline::byte_unit;
use super::{draw_legend, events_frame, palette, plot_err, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

#[derive(Clone, Debug)]
pub struct MeasuredTimeline {
    pub name: String,
    pub title: String,
    /// (allocator, (event, resident bytes over the baseline)).
    pub measured: Vec<(String, Vec<(u64, i64)>)>,
    /// (label, (event, modelled active bytes)).
    pub model: (String, Vec<(u64, u64)>),
    /// (event, requested bytes).
    pub requested: Vec<(u64, u64)>,
}

impl Chart for MeasuredTimeline {
    fn name(&self) -> &str {
        &self.name
    }

    fn title(&self) -> String {
        self.title.clone()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let measured = self.measured.iter().flat_map(|(_, p)| p.iter().copied());
        let others = self.model.1.iter().chain(&self.requested);
        let all = measured.chain(others.map(|&(x, y)| (x, y as i64)));
        let (x_max, y_min, y_max) = all.fold((1u64, 0i64, 1i64), |(x, lo, hi), (px, py)| {
            (x.max(px), lo.min(py), hi.max(py))
        });
        let (unit, unit_name) = byte_unit(y_max as f64);
        let y = |v: i64| v as f64 / unit;
        let mut chart = events_frame(area, self.title())
            .build_cartesian_2d(0f64..x_max as f64, y(y_min) * 1.1..y(y_max) * 1.1)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("event")
            .y_desc(format!("{unit_name} over the baseline"))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .draw()
            .map_err(plot_err)?;
        let colors = &palette::LINES[..6];
        for (i, (label, points)) in self.measured.iter().enumerate() {
            let color = colors[i % colors.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|&(x, v)| (x as f64, y(v))),
                    color.stroke_width(2),
                ))
                .map_err(plot_err)?
                .label(label.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(3))
                });
        }
        let grey = palette::GREY;
        chart
            .draw_series(DashedLineSeries::new(
                self.model.1.iter().map(|&(x, v)| (x as f64, y(v as i64))),
                8,
                5,
                grey.stroke_width(3),
            ))
            .map_err(plot_err)?
            .label(self.model.0.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], grey.stroke_width(3)));
        chart
            .draw_series(LineSeries::new(
                self.requested.iter().map(|&(x, v)| (x as f64, y(v as i64))),
                BLACK.stroke_width(1),
            ))
            .map_err(plot_err)?
            .label("requested")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(1)));
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
