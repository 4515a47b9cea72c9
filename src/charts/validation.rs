//! Measured bytes against predicted bytes from the live validation, on log axes.

use super::{draw_legend, palette, plot_err, waste::human_bytes, Chart, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One compared quantity.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub label: String,
    pub predicted: u64,
    pub measured: u64,
}

#[derive(Clone, Debug)]
pub struct PredictedVsMeasured {
    pub subtitle: String,
    /// Usable-byte comparisons.
    pub usable: Vec<Comparison>,
    /// Active-page comparisons.
    pub active: Vec<Comparison>,
}

impl Chart for PredictedVsMeasured {
    fn name(&self) -> &str {
        "predicted-vs-measured"
    }

    fn title(&self) -> String {
        format!("Predicted vs measured bytes, {}", self.subtitle)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let all = self.usable.iter().chain(&self.active);
        let max = all
            .flat_map(|c| [c.predicted, c.measured])
            .max()
            .unwrap_or(1)
            .max(2) as f64;
        // log2 of the bytes on linear axes, so ticks fall on powers of two.
        let top = (max * 2.0).log2().ceil();
        let lg = |v: u64| (v.max(1) as f64).log2();
        let mut chart = ChartBuilder::on(area)
            .caption(self.title(), (FONT, 30))
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(100)
            .build_cartesian_2d(0f64..top, 0f64..top)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("predicted by the model (bytes, log scale)")
            .y_desc("measured in jemalloc (bytes, log scale)")
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .x_labels(12)
            .y_labels(12)
            .x_label_formatter(&|x| human_bytes(x.exp2()))
            .y_label_formatter(&|y| human_bytes(y.exp2()))
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, 0.0), (top, top)],
                8,
                6,
                palette::GREY.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label("y = x")
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 22, y)], palette::GREY.stroke_width(2))
            });
        for (label, set, color) in [
            ("usable bytes", &self.usable, palette::BLUE),
            ("active page bytes", &self.active, palette::GREEN),
        ] {
            let ok = set.iter().filter(|c| c.predicted == c.measured);
            chart
                .draw_series(
                    ok.map(|c| Circle::new((lg(c.predicted), lg(c.measured)), 4, color.filled())),
                )
                .map_err(plot_err)?
                .label(format!("{label} ({} compared)", set.len()))
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
        }
        let bad: Vec<&Comparison> = self
            .usable
            .iter()
            .chain(&self.active)
            .filter(|c| c.predicted != c.measured)
            .collect();
        let warn = palette::VERMILION;
        chart
            .draw_series(bad.iter().map(|c| {
                let at = (lg(c.predicted), lg(c.measured));
                EmptyElement::at(at)
                    + Cross::new((0, 0), 9, warn.stroke_width(3))
                    + Text::new(
                        c.label.clone(),
                        (10, -18),
                        (FONT, 16).into_font().color(&warn),
                    )
            }))
            .map_err(plot_err)?
            .label(format!("mismatch ({})", bad.len()))
            .legend(move |(x, y)| Cross::new((x + 10, y), 6, warn.stroke_width(3)));
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
