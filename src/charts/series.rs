//! A plot's series as data: lines, bands, bars, dots, crosses and text labels in the
//! plot's coordinates. One place draws them and one maps them to the pixels they cover, so
//! the legend can be put where it hides nothing ([`super::legend`]).

use super::layout::{PixelRect, SeriesMarks};
use super::{plot_err, FONT};
use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The charts' coordinate system: f64 by f64.
pub(crate) type F64Chart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What a series draws.
#[derive(Clone)]
pub(crate) enum Shape {
    /// A polyline `width` pixels wide, dashed or not.
    Line {
        points: Vec<(f64, f64)>,
        width: u32,
        dashed: bool,
    },
    /// The area between two lines over the same x values (upper and lower).
    Band {
        upper: Vec<(f64, f64)>,
        lower: Vec<(f64, f64)>,
    },
    /// Filled rectangles, each by two opposite corners.
    Bars(Vec<[(f64, f64); 2]>),
    /// Filled circles of `radius` pixels.
    Dots {
        points: Vec<(f64, f64)>,
        radius: u32,
    },
    /// Crosses of `size` pixels.
    Crosses { points: Vec<(f64, f64)>, size: u32 },
    /// Texts of `size` points, each anchored at `pos` on its point moved by `offset` pixels.
    Texts {
        texts: Vec<(String, (f64, f64))>,
        size: u32,
        pos: Pos,
        offset: (i32, i32),
    },
}

/// One series: its legend label (`None`: not in the legend), colour and shape.
#[derive(Clone)]
pub(crate) struct Series {
    pub label: Option<String>,
    pub color: RGBAColor,
    pub shape: Shape,
}

impl Series {
    pub fn new(label: Option<String>, color: impl Color, shape: Shape) -> Self {
        Series {
            label,
            color: color.to_rgba(),
            shape,
        }
    }

    /// A solid line.
    pub fn line(label: impl Into<String>, color: impl Color, points: Vec<(f64, f64)>) -> Self {
        let shape = Shape::Line {
            points,
            width: 2,
            dashed: false,
        };
        Series::new(Some(label.into()), color, shape)
    }

    /// Texts (e.g. bar labels) in black, in no legend.
    pub fn texts(texts: Vec<(String, (f64, f64))>, size: u32, pos: Pos) -> Self {
        let shape = Shape::Texts {
            texts,
            size,
            pos,
            offset: (0, 0),
        };
        Series::new(None, BLACK, shape)
    }

    /// Draws the series on `chart`.
    pub fn draw<DB: DrawingBackend>(&self, chart: &mut F64Chart<'_, DB>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let color = self.color;
        match &self.shape {
            Shape::Line {
                points,
                width,
                dashed: false,
            } => chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(*width)))
                .map(|_| ()),
            Shape::Line { points, width, .. } => {
                let style = color.stroke_width(*width);
                let dashed = DashedLineSeries::new(points.clone(), 8, 5, style);
                chart.draw_series(dashed).map(|_| ())
            }
            Shape::Band { upper, lower } => {
                let outline: Vec<_> = upper.iter().chain(lower.iter().rev()).copied().collect();
                let band = Polygon::new(outline, color.filled());
                chart.draw_series(std::iter::once(band)).map(|_| ())
            }
            Shape::Bars(bars) => chart
                .draw_series(bars.iter().map(|&c| Rectangle::new(c, color.filled())))
                .map(|_| ()),
            Shape::Dots { points, radius } => chart
                .draw_series(
                    points
                        .iter()
                        .map(|&p| Circle::new(p, *radius, color.filled())),
                )
                .map(|_| ()),
            Shape::Crosses { points, size } => chart
                .draw_series(
                    points
                        .iter()
                        .map(|&p| Cross::new(p, *size, color.stroke_width(3))),
                )
                .map(|_| ()),
            Shape::Texts {
                texts,
                size,
                pos,
                offset,
            } => {
                let style = (FONT, *size).into_font().color(&color).pos(*pos);
                chart
                    .draw_series(texts.iter().map(|(text, p)| {
                        EmptyElement::at(*p) + Text::new(text.clone(), *offset, style.clone())
                    }))
                    .map(|_| ())
            }
        }
        .map_err(plot_err)
    }

    /// The pixels the series covers inside `plot`; `area` measures texts.
    pub fn marks<DB: DrawingBackend>(
        &self,
        chart: &F64Chart<'_, DB>,
        area: &DrawingArea<DB, Shift>,
        plot: PixelRect,
    ) -> Result<SeriesMarks>
    where
        DB::ErrorType: 'static,
    {
        let px = |p: &(f64, f64)| chart.backend_coord(p);
        let mut pixels = Vec::new();
        let mut reach = 1;
        match &self.shape {
            Shape::Line { points, width, .. } => {
                let path: Vec<_> = points.iter().map(px).collect();
                path_pixels(&path, &mut pixels);
                reach = (*width as i32 + 1) / 2;
            }
            Shape::Band { upper, lower } => band_pixels(
                &upper.iter().map(px).collect::<Vec<_>>(),
                &lower.iter().map(px).collect::<Vec<_>>(),
                &mut pixels,
            ),
            Shape::Bars(bars) => {
                // A bar of no height (or width) shows nothing.
                for [a, b] in bars.iter().filter(|[a, b]| a.0 != b.0 && a.1 != b.1) {
                    let (a, b) = (px(a), px(b));
                    fill(
                        a.0.min(b.0),
                        a.1.min(b.1),
                        a.0.max(b.0),
                        a.1.max(b.1),
                        &mut pixels,
                    );
                }
            }
            Shape::Dots { points, radius } => {
                let r = *radius as i32;
                for (x, y) in points.iter().map(px) {
                    fill(x - r, y - r, x + r, y + r, &mut pixels);
                }
            }
            Shape::Crosses { points, size } => {
                let r = *size as i32;
                for (x, y) in points.iter().map(px) {
                    fill(x - r, y - r, x + r, y + r, &mut pixels);
                }
            }
            Shape::Texts {
                texts,
                size,
                pos,
                offset,
            } => {
                let font = (FONT, *size).into_font();
                for (text, p) in texts {
                    let style = TextStyle::from(font.clone());
                    let (w, h) = area.estimate_text_size(text, &style).map_err(plot_err)?;
                    let (w, h) = (w as i32, h as i32);
                    let (x, y) = px(p);
                    let (h_centre, v_centre) = (
                        matches!(pos.h_pos, HPos::Center),
                        matches!(pos.v_pos, VPos::Center),
                    );
                    let right = matches!(pos.h_pos, HPos::Right);
                    let bottom = matches!(pos.v_pos, VPos::Bottom);
                    let left = x + offset.0 - anchor(h_centre, right, w);
                    let top = y + offset.1 - anchor(v_centre, bottom, h);
                    fill(left, top, left + w, top + h, &mut pixels);
                }
            }
        }
        pixels.retain(|&p| plot.contains(p));
        Ok(SeriesMarks {
            label: self.label.clone(),
            pixels,
            reach,
        })
    }
}

/// How far a text's left (top) edge lies before its anchor: none, half its size when
/// centred, all of it when anchored at its end.
fn anchor(centre: bool, end: bool, size: i32) -> i32 {
    match (centre, end) {
        (true, _) => size / 2,
        (_, true) => size,
        _ => 0,
    }
}

/// Every pixel along the polyline `path`, one pixel apart.
fn path_pixels(path: &[(i32, i32)], out: &mut Vec<(i32, i32)>) {
    out.extend(path.first());
    for pair in path.windows(2) {
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        let steps = (x1 - x0).abs().max((y1 - y0).abs()).max(1);
        for k in 1..=steps {
            let x = x0 + (x1 - x0) * k / steps;
            let y = y0 + (y1 - y0) * k / steps;
            out.push((x, y));
        }
    }
}

/// Pixels of the rectangle from (left, top) to (right, bottom), 2 apart, edges included.
fn fill(left: i32, top: i32, right: i32, bottom: i32, out: &mut Vec<(i32, i32)>) {
    let along = |from: i32, to: i32| (from..to).step_by(2).chain(std::iter::once(to));
    for y in along(top, bottom) {
        out.extend(along(left, right).map(|x| (x, y)));
    }
}

/// Pixels of the band between `upper` and `lower` (in pixels, over the same x values): its
/// edges, and columns 2 apart between consecutive points.
fn band_pixels(upper: &[(i32, i32)], lower: &[(i32, i32)], out: &mut Vec<(i32, i32)>) {
    path_pixels(upper, out);
    path_pixels(lower, out);
    for (u, l) in upper.windows(2).zip(lower.windows(2)) {
        let (x0, x1) = (u[0].0, u[1].0);
        let span = (x1 - x0).max(1);
        for x in (x0..=x1).step_by(2) {
            let at = |a: i32, b: i32| a + (b - a) * (x - x0) / span;
            let (top, bottom) = (at(u[0].1, u[1].1), at(l[0].1, l[1].1));
            fill(x, top.min(bottom), x, top.max(bottom), out);
        }
    }
}
