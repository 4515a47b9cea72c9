//! Bytes against event index: one line per statistic (e.g. requested, allocated, active bytes
//! of one replay).

use super::{
    captioned, draw_plot, events_frame, named_chart, palette, plot_err, Chart, Corner, F64Chart,
    Layout, Series, EVENTS_MARGINS, FONT,
};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The height of stack `i` of a stacked-bar chart: the sum of every part's value there.
pub(crate) fn stack_total(parts: &[(String, Vec<u64>)], i: usize) -> u64 {
    parts
        .iter()
        .map(|(_, v)| v.get(i).copied().unwrap_or(0))
        .sum()
}

/// The tallest of `n` stacks (at least 1 byte) and the unit its axis is drawn in:
/// (max bytes, bytes per unit, unit name).
pub(crate) fn stacked_scale(parts: &[(String, Vec<u64>)], n: usize) -> (f64, f64, &'static str) {
    let max = (0..n)
        .map(|i| stack_total(parts, i))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (unit, name) = byte_unit(max);
    (max, unit, name)
}

/// The binary unit that keeps an axis up to `max` bytes in round ticks: (bytes per unit,
/// name). Plotting `bytes / unit` puts ticks on 1, 2, 5 ... of that unit.
pub(crate) fn byte_unit(max: f64) -> (f64, &'static str) {
    for (shift, name) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        let unit = (1u64 << shift) as f64;
        if max >= 2.0 * unit {
            return (unit, name);
        }
    }
    (1.0, "B")
}

#[derive(Clone, Debug)]
pub struct BytesTimeline {
    pub name: String,
    pub title: String,
    /// (label, (event index, bytes) points in event order).
    pub series: Vec<(String, Vec<(u64, u64)>)>,
}

impl Chart for BytesTimeline {
    named_chart!();

    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let points = self.series.iter().flat_map(|(_, p)| p.iter());
        let (x_max, y_max) = points.fold((1u64, 1u64), |(x, y), &(px, py)| (x.max(px), y.max(py)));
        let (unit, unit_name) = byte_unit(y_max as f64);
        let series: Vec<Series> = (self.series.iter().enumerate())
            .map(|(i, (label, points))| {
                let color = palette::SERIES[i % palette::SERIES.len()];
                let points = points.iter().map(|&(x, y)| (x as f64, y as f64 / unit));
                Series::line(label.clone(), color, points.collect())
            })
            .collect();
        let area = captioned(area, &self.title(), 28, EVENTS_MARGINS)?;
        let y_top = y_max as f64 * 1.1 / unit;
        let mesh = |chart: &mut F64Chart<'_, DB>| {
            chart
                .configure_mesh()
                .x_desc("event")
                .y_desc(unit_name)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .label_style((FONT, 18))
                .axis_desc_style((FONT, 22))
                .draw()
                .map_err(plot_err)
        };
        draw_plot(
            &area,
            |a| events_frame(a, 0f64..x_max as f64, 0f64..y_top),
            mesh,
            &series,
            Some(Corner::UpperLeft),
            layout,
        )
    }
}
