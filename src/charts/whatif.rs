//! Stacked bars: one bar per category (e.g. build), split into parts (e.g. requested bytes,
//! rounding, slab fragmentation), the total printed on top.

use super::timeline::{stack_total, stacked_scale};
use super::{category_frame, draw_legend, draw_stacked, named_chart, plot_err, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

#[derive(Clone, Debug)]
pub struct StackedBars {
    pub name: String,
    pub title: String,
    pub y_desc: String,
    pub categories: Vec<String>,
    /// (part label, one value in bytes per category), bottom part first.
    pub parts: Vec<(String, Vec<u64>)>,
}

impl Chart for StackedBars {
    named_chart!();

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let n = self.categories.len();
        let (max, unit, unit_name) = stacked_scale(&self.parts, n);
        let top = max * 1.35 / unit;
        let mut chart = category_frame(
            area,
            self.title(),
            &self.categories,
            n.max(1) as f64,
            top,
            format!("{}, {unit_name}", self.y_desc),
        )?;
        draw_stacked(&mut chart, &self.parts, n, unit, 0, |i, from, to| {
            [(i as f64 + 0.2, from), (i as f64 + 0.8, to)]
        })?;
        chart
            .draw_series((0..n).map(|i| {
                let total = stack_total(&self.parts, i) as f64 / unit;
                Text::new(
                    format!("{total:.2} {unit_name}"),
                    (i as f64 + 0.3, total + top * 0.02),
                    (FONT, 18),
                )
            }))
            .map_err(plot_err)?;
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
