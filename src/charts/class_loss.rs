//! Horizontal stacked bars: the size classes that lose the most bytes, largest loss on top,
//! each bar split by cause (rounding, empty slab regions, large padding).

use super::timeline::{stack_total, stacked_scale};
use super::{
    captioned, draw_plot, frame, named_chart, plot_err, stacked_series, Chart, Corner, F64Chart,
    Layout, Series, EVENTS_MARGINS, FONT,
};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

#[derive(Clone, Debug)]
pub struct ClassLoss {
    pub name: String,
    pub title: String,
    /// Row labels (e.g. `48 B`), top row first.
    pub rows: Vec<String>,
    /// (cause label, bytes per row).
    pub causes: Vec<(String, Vec<u64>)>,
}

impl Chart for ClassLoss {
    named_chart!();

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let n = self.rows.len();
        let (max, unit, unit_name) = stacked_scale(&self.causes, n);
        let right = max * 1.3 / unit;
        // Row i is drawn at y in (n - 1 - i, n - i), so the first row is on top.
        let y_of = move |i: usize| (n - 1 - i) as f64;
        // The causes start at the second colour.
        let mut series = stacked_series(&self.causes, n, unit, 1, |i, from, to| {
            [(from, y_of(i) + 0.15), (to, y_of(i) + 0.85)]
        });
        let totals = (0..n)
            .map(|i| {
                let total = stack_total(&self.causes, i) as f64 / unit;
                let at = (total + right * 0.01, y_of(i) + 0.5);
                (format!("{total:.1} {unit_name}"), at)
            })
            .collect();
        series.push(Series::texts(
            totals,
            16,
            Pos::new(HPos::Left, VPos::Center),
        ));
        let area = captioned(area, &self.title(), 28, EVENTS_MARGINS)?;
        let rows = &self.rows;
        let mesh = |chart: &mut F64Chart<'_, DB>| {
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(n * 2 + 1)
                .y_label_formatter(&|y| {
                    let k = (y - 0.5).round();
                    if (y - 0.5 - k).abs() < 1e-6 && k >= 0.0 && (k as usize) < n {
                        rows[n - 1 - k as usize].clone()
                    } else {
                        String::new()
                    }
                })
                .x_desc(format!("{unit_name} lost at the peak of active bytes"))
                .y_desc("size class")
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .draw()
                .map_err(plot_err)
        };
        let build = frame(|a| {
            ChartBuilder::on(a)
                .x_label_area_size(55)
                .y_label_area_size(130)
                .build_cartesian_2d(0f64..right, 0f64..n.max(1) as f64)
                .map_err(plot_err)
        });
        draw_plot(
            &area,
            build,
            mesh,
            &series,
            Some(Corner::LowerRight),
            layout,
        )
    }
}
