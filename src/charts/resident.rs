//! Resident memory over time: the model's line, the live runs' band (min-max), and active
//! bytes beneath (the part decay cannot touch).

use super::timeline::byte_unit;
use super::{
    captioned, draw_plot, events_frame, frame, named_chart, palette, plot_err, Chart, Corner,
    F64Chart, Layout, Series, Shape, EVENTS_MARGINS, FONT,
};
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

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
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
        let at = |y: fn(&ResidentPoint) -> f64| -> Vec<(f64, f64)> {
            self.points
                .iter()
                .map(|p| (p.time_ms, y(p) / unit))
                .collect()
        };
        let band = Shape::Band {
            upper: at(|p| p.live_max),
            lower: at(|p| p.live_min),
        };
        let series = [
            Series::new(
                Some(self.labels[1].clone()),
                palette::ORANGE.mix(0.35),
                band,
            ),
            Series::line(
                self.labels[0].clone(),
                palette::BLUE,
                at(|p| p.model_resident),
            ),
            Series::line(self.labels[2].clone(), palette::GREY, at(|p| p.active)),
        ];
        let area = captioned(area, &self.title(), 26, EVENTS_MARGINS)?;
        let mesh = |chart: &mut F64Chart<'_, DB>| {
            chart
                .configure_mesh()
                .x_desc("time (ms, the trace's clock)")
                .y_desc(unit_name)
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .draw()
                .map_err(plot_err)
        };
        let build = frame(|a| events_frame(a, 0f64..x_max, 0f64..y_max * 1.1 / unit));
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
