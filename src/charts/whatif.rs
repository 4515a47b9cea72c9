//! Stacked bars: one bar per category (e.g. build), split into parts (e.g. requested bytes,
//! rounding, slab fragmentation), the total printed on top.

use super::timeline::{stack_total, stacked_scale};
use super::{
    captioned, category_frame, category_mesh, draw_plot, named_chart, stacked_series, Chart,
    Corner, Layout, Series,
};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let n = self.categories.len();
        let (max, unit, unit_name) = stacked_scale(&self.parts, n);
        let top = max * 1.35 / unit;
        let mut series = stacked_series(&self.parts, n, unit, 0, |i, from, to| {
            [(i as f64 + 0.2, from), (i as f64 + 0.8, to)]
        });
        let totals = (0..n)
            .map(|i| {
                let total = stack_total(&self.parts, i) as f64 / unit;
                let at = (i as f64 + 0.5, total + top * 0.01);
                (format!("{total:.2} {unit_name}"), at)
            })
            .collect();
        series.push(Series::texts(
            totals,
            18,
            Pos::new(HPos::Center, VPos::Bottom),
        ));
        let area = captioned(area, &self.title(), 28, (20, 20, 20, 20))?;
        let y_desc = format!("{}, {unit_name}", self.y_desc);
        draw_plot(
            &area,
            |a| category_frame(a, n.max(1) as f64, top),
            |chart| category_mesh(chart, &self.categories, &y_desc),
            &series,
            Some(Corner::UpperRight),
            layout,
        )
    }
}
