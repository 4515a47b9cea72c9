//! Charts. Each chart is data plus a `draw` onto any plotters drawing area; the writers here
//! put the same drawing into a PNG and an SVG. Text uses the DejaVu Sans font shipped in
//! `data/fonts/`, so no system font library is needed.

mod bars;
mod class_loss;
pub(crate) mod containers;
pub(crate) mod flame;
mod hbars;
mod heatmap;
pub(crate) mod layout;
mod legend;
mod measured;
mod resident;
mod seed;
mod series;
mod timeline;
mod validation;
mod waste;
mod whatif;

pub use crate::export::human::thousands;
pub(crate) use bars::GroupedBars;
pub(crate) use class_loss::ClassLoss;
pub(crate) use hbars::HorizontalBars;
pub use heatmap::RatioHeatmap;
pub use layout::collect_layouts;
pub use layout::Layout;
pub(crate) use legend::{draw_plot, frame, Corner};
pub(crate) use measured::MeasuredTimeline;
pub(crate) use resident::ResidentBand;
pub(crate) use resident::ResidentPoint;
pub use seed::SeedChart;
pub use seed::SeedSeries;
pub(crate) use series::{F64Chart, Series, Shape};
pub(crate) use timeline::BytesTimeline;
pub use validation::Comparison;
pub use validation::PredictedVsMeasured;
pub use waste::WasteCurve;
pub(crate) use whatif::StackedBars;

use crate::export::write_atomic;
use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// The font family every chart uses (registered on first use).
pub(crate) const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../data/fonts/DejaVuSans.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES)
            .unwrap_or_else(|_| panic!("shipped font data/fonts/DejaVuSans.ttf is invalid"));
        plotters::style::register_font(FONT, FontStyle::Bold, FONT_BYTES)
            .unwrap_or_else(|_| panic!("shipped font data/fonts/DejaVuSans.ttf is invalid"));
    });
}

/// A chart that can be drawn on any backend.
/// `name` and `title` of a chart whose struct has `name` and `title` fields.
macro_rules! named_chart {
    () => {
        fn name(&self) -> &str {
            &self.name
        }

        fn title(&self) -> String {
            self.title.clone()
        }
    };
}
pub(crate) use named_chart;

pub trait Chart {
    /// File name without extension.
    fn name(&self) -> &str;
    fn title(&self) -> String;
    fn size(&self) -> (u32, u32) {
        (1200, 750)
    }
    /// Draws the chart on `area`, recording its plots' legends and series in `layout`.
    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &mut Layout,
    ) -> Result<()>
    where
        DB::ErrorType: 'static;
}

/// Plotters' errors carry the backend's error type; we only need their text.
pub(crate) fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing failed: {e:?}")
}

/// `area` less `margins` (top, bottom, left, right) with `title` drawn on top, as plotters'
/// chart caption: the plot goes on what is returned (built without a caption, the frame
/// draws nothing until its mesh, so [`legend::draw_plot`] can try it twice).
pub(crate) fn captioned<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    size: u32,
    (top, bottom, left, right): (u32, u32, u32, u32),
) -> Result<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    area.margin(top, bottom, left, right)
        .titled(title, (FONT, size))
        .map_err(plot_err)
}

/// The label of category axis position `x`: category `i` at `i + 0.5`, nothing elsewhere
/// (the axis has a tick at every half unit).
pub(crate) fn category_label(categories: &[String], x: f64) -> String {
    let i = (x - 0.5).round();
    if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
        categories.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// The frame of the bar charts with one slot per category along x (grouped and stacked
/// bars): `0..x_end` by `0..top`, on an area already captioned.
pub(crate) fn category_frame<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x_end: f64,
    top: f64,
) -> Result<F64Chart<'_, DB>>
where
    DB::ErrorType: 'static,
{
    ChartBuilder::on(area)
        .x_label_area_size(50)
        .y_label_area_size(110)
        .build_cartesian_2d(0f64..x_end, 0f64..top)
        .map_err(plot_err)
}

/// The mesh of [`category_frame`]: the categories' names under their slots, no vertical
/// grid lines, `y_desc` on the value axis.
pub(crate) fn category_mesh<DB: DrawingBackend>(
    chart: &mut F64Chart<'_, DB>,
    categories: &[String],
    y_desc: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&|x| category_label(categories, *x))
        .y_desc(y_desc)
        .label_style((FONT, 18))
        .axis_desc_style((FONT, 22))
        .draw()
        .map_err(plot_err)
}

/// The margins (top, bottom, left, right) of the line charts over events or time.
pub(crate) const EVENTS_MARGINS: (u32, u32, u32, u32) = (20, 20, 20, 40);

/// The frame of the line charts over events or time: `x` by `y`, label areas for the axes.
pub(crate) fn events_frame<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<F64Chart<'_, DB>>
where
    DB::ErrorType: 'static,
{
    ChartBuilder::on(area)
        .x_label_area_size(55)
        .y_label_area_size(90)
        .build_cartesian_2d(x, y)
        .map_err(plot_err)
}

/// Stacked bars of bytes: for each part (bottom first), one rectangle per stack from the
/// stack's running total to that plus the part's value, in `unit`s; `corners(i, from, to)`
/// places stack `i`'s rectangle (horizontal or vertical bars). Part `p` takes colour
/// `SERIES[(p + first_color) % 5]`. A part that is zero in every stack draws nothing, so it
/// stays out of the legend.
pub(crate) fn stacked_series(
    parts: &[(String, Vec<u64>)],
    n: usize,
    unit: f64,
    first_color: usize,
    corners: impl Fn(usize, f64, f64) -> [(f64, f64); 2],
) -> Vec<Series> {
    let mut base = vec![0u64; n];
    let mut series = Vec::new();
    for (p, (label, values)) in parts.iter().enumerate() {
        let color = palette::SERIES[(p + first_color) % palette::SERIES.len()];
        let bars: Vec<_> = (0..n)
            .filter_map(|i| {
                let v = values.get(i).copied().unwrap_or(0);
                let (from, to) = (base[i], base[i] + v);
                base[i] = to;
                (v > 0).then(|| corners(i, from as f64 / unit, to as f64 / unit))
            })
            .collect();
        if !bars.is_empty() {
            series.push(Series::new(Some(label.clone()), color, Shape::Bars(bars)));
        }
    }
    series
}

/// Draws `chart` on `area` and returns where its legend and series went.
fn draw_chart<C: Chart, DB: DrawingBackend>(
    chart: &C,
    area: &DrawingArea<DB, Shift>,
) -> Result<Layout>
where
    DB::ErrorType: 'static,
{
    let mut layout = Layout {
        name: chart.name().to_string(),
        plots: Vec::new(),
    };
    area.fill(&WHITE).map_err(plot_err)?;
    chart.draw(area, &mut layout)?;
    area.present().map_err(plot_err)?;
    Ok(layout)
}

/// Renders `chart` as an SVG document.
pub fn render_svg<C: Chart>(chart: &C) -> Result<String> {
    register_font();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, chart.size()).into_drawing_area();
        draw_chart(chart, &area)?;
    }
    Ok(svg)
}

/// Renders `chart` as PNG bytes.
pub fn render_png<C: Chart>(chart: &C) -> Result<Vec<u8>> {
    Ok(png_and_layout(chart)?.0)
}

fn png_and_layout<C: Chart>(chart: &C) -> Result<(Vec<u8>, Layout)> {
    register_font();
    let (w, h) = chart.size();
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    let layout = {
        let area = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw_chart(chart, &area)?
    };
    let mut png_bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png_bytes, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        // Charts are flat colours: the best compression keeps the committed files small.
        encoder.set_compression(png::Compression::Best);
        encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut writer = encoder.write_header().context("encoding PNG")?;
        writer.write_image_data(&rgb).context("encoding PNG")?;
    }
    Ok((png_bytes, layout))
}

/// Writes `dir/<name>.png` and `dir/<name>.svg` (each atomically); returns both paths.
/// The chart's layout goes to [`collect_layouts`] when it runs.
pub(crate) fn write_chart<C: Chart>(chart: &C, dir: &Path) -> Result<Vec<PathBuf>> {
    let png_path = dir.join(format!("{}.png", chart.name()));
    let svg_path = dir.join(format!("{}.svg", chart.name()));
    let (png_bytes, layout) = png_and_layout(chart)?;
    layout::collected(layout);
    let svg = render_svg(chart)?;
    write_atomic(&png_path, &png_bytes)?;
    write_atomic(&svg_path, svg.as_bytes())?;
    Ok(vec![png_path, svg_path])
}

/// Colours shared by the charts, chosen to stay apart for colour-blind readers (Okabe-Ito).
pub(crate) mod palette {
    use plotters::style::RGBColor;
    pub(crate) const BLUE: RGBColor = RGBColor(0, 114, 178);
    pub(crate) const ORANGE: RGBColor = RGBColor(230, 159, 0);
    pub(crate) const GREEN: RGBColor = RGBColor(0, 158, 115);
    pub(crate) const VERMILION: RGBColor = RGBColor(213, 94, 0);
    pub(crate) const PURPLE: RGBColor = RGBColor(204, 121, 167);
    pub(crate) const GREY: RGBColor = RGBColor(120, 120, 120);
    pub(crate) const SERIES: [RGBColor; 5] = [BLUE, VERMILION, GREEN, ORANGE, PURPLE];
    /// Line colours: the series colours, then more for charts with many lines.
    pub(crate) const LINES: [RGBColor; 10] = [
        BLUE,
        VERMILION,
        GREEN,
        ORANGE,
        PURPLE,
        RGBColor(86, 180, 233),
        RGBColor(0, 0, 0),
        RGBColor(240, 200, 40),
        GREY,
        RGBColor(140, 80, 20),
    ];
}
