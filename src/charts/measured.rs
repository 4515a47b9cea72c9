//! Measured resident bytes against event index, one line per allocator, with the model's
//! active bytes (dashed) and the requested bytes (thin, black) beside them.

use super::timeline::byte_unit;
use super::{
    captioned, draw_plot, events_frame, frame, palette, plot_err, Chart, Corner, F64Chart, Layout,
    Series, Shape, EVENTS_MARGINS, FONT,
};
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

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
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
        let series = self.series(unit);
        let area = captioned(area, &self.title(), 28, EVENTS_MARGINS)?;
        // What the baseline is: the charts' readers see no table beside them.
        let y_desc = format!("{unit_name} resident over the baseline (at event 0)");
        let mesh = |chart: &mut F64Chart<'_, DB>| {
            chart
                .configure_mesh()
                .x_desc("event")
                .y_desc(&y_desc)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .draw()
                .map_err(plot_err)
        };
        let build = frame(|a| events_frame(a, 0f64..x_max as f64, y(y_min) * 1.1..y(y_max) * 1.1));
        draw_plot(&area, build, mesh, &series, Some(Corner::UpperLeft), layout)
    }
}

impl MeasuredTimeline {
    /// One line per allocator, the model's (dashed, grey) and the requested bytes (thin,
    /// black), in `unit`s.
    fn series(&self, unit: f64) -> Vec<Series> {
        let y = |v: i64| v as f64 / unit;
        let colors = &palette::LINES[..6];
        let mut series: Vec<Series> = (self.measured.iter().enumerate())
            .map(|(i, (label, points))| {
                let points = points.iter().map(|&(x, v)| (x as f64, y(v)));
                Series::line(label.clone(), colors[i % colors.len()], points.collect())
            })
            .collect();
        let model = self.model.1.iter().map(|&(x, v)| (x as f64, y(v as i64)));
        let dashed = Shape::Line {
            points: model.collect(),
            width: 3,
            dashed: true,
        };
        series.push(Series::new(
            Some(self.model.0.clone()),
            palette::GREY,
            dashed,
        ));
        let requested = self.requested.iter().map(|&(x, v)| (x as f64, y(v as i64)));
        let thin = Shape::Line {
            points: requested.collect(),
            width: 1,
            dashed: false,
        };
        series.push(Series::new(Some("requested".into()), BLACK, thin));
        series
    }
}
