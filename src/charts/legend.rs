//! Plots whose legend hides nothing: [`draw_plot`] maps the series to the pixels they will
//! cover, puts the legend in the first corner of the plot that none of them touches, and
//! otherwise in a strip under the plot (the plot shrinks to make room). The legend box and
//! the series' pixels go into the chart's [`Layout`].

use super::layout::{Layout, PixelRect, PlotLayout, SeriesMarks};
use super::series::{F64Chart, Series, Shape};
use super::{plot_err, FONT};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Where a legend inside the plot may go, in the order tried after the preferred one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Corner {
    UpperRight,
    UpperLeft,
    LowerRight,
    LowerLeft,
    UpperMiddle,
    LowerMiddle,
}

impl Corner {
    const ALL: [Corner; 6] = [
        Corner::UpperRight,
        Corner::UpperLeft,
        Corner::LowerRight,
        Corner::LowerLeft,
        Corner::UpperMiddle,
        Corner::LowerMiddle,
    ];

    /// The box of `(w, h)` pixels in this corner of `plot`, `INSET` pixels in.
    fn place(self, plot: PixelRect, (w, h): (i32, i32)) -> PixelRect {
        let left = match self {
            Corner::UpperLeft | Corner::LowerLeft => plot.left + INSET,
            Corner::UpperRight | Corner::LowerRight => plot.right - INSET - w,
            _ => (plot.left + plot.right - w) / 2,
        };
        let top = match self {
            Corner::UpperRight | Corner::UpperLeft | Corner::UpperMiddle => plot.top + INSET,
            _ => plot.bottom - INSET - h,
        };
        PixelRect {
            left,
            top,
            right: left + w,
            bottom: top + h,
        }
    }
}

/// Legend geometry, in pixels: the gap to the plot's edge, one entry's height, padding, the
/// mark's width, the gap between mark and text and between columns, the font size.
const INSET: i32 = 10;
const ROW: i32 = 24;
const PAD: i32 = 8;
const MARK: i32 = 24;
const GAP: i32 = 8;
const COLUMN_GAP: i32 = 24;
const FONT_SIZE: u32 = 18;

/// A legend entry's mark: how its series looks.
#[derive(Clone, Copy, Debug)]
enum Mark {
    Line { width: u32, dashed: bool },
    Patch,
    Dot,
    Cross,
}

fn mark_of(shape: &Shape) -> Option<Mark> {
    Some(match shape {
        Shape::Line { width, dashed, .. } => Mark::Line {
            width: *width,
            dashed: *dashed,
        },
        Shape::Band { .. } | Shape::Bars(_) => Mark::Patch,
        Shape::Dots { .. } => Mark::Dot,
        Shape::Crosses { .. } => Mark::Cross,
        Shape::Texts { .. } => return None,
    })
}

/// The legend's entries (label, mark, colour) and each label's width in pixels.
struct Entries<'s> {
    items: Vec<(&'s str, Mark, RGBAColor)>,
    widest: i32,
}

impl<'s> Entries<'s> {
    fn of<DB: DrawingBackend>(series: &'s [Series], area: &DrawingArea<DB, Shift>) -> Result<Self>
    where
        DB::ErrorType: 'static,
    {
        let items: Vec<_> = series
            .iter()
            .filter_map(|s| Some((s.label.as_deref()?, mark_of(&s.shape)?, s.color)))
            .collect();
        let font = (FONT, FONT_SIZE).into_font();
        let mut widest = 0;
        for (label, _, _) in &items {
            let style = TextStyle::from(font.clone());
            let (w, _) = area.estimate_text_size(label, &style).map_err(plot_err)?;
            widest = widest.max(w as i32);
        }
        Ok(Entries { items, widest })
    }

    /// One entry's width, column gap included.
    fn cell(&self) -> i32 {
        MARK + GAP + self.widest + COLUMN_GAP
    }

    /// The box of the entries in `columns` columns.
    fn size(&self, columns: usize) -> (i32, i32) {
        let rows = self.items.len().div_ceil(columns.max(1)) as i32;
        let w = columns as i32 * self.cell() - COLUMN_GAP + 2 * PAD;
        (w, rows * ROW + 2 * PAD)
    }
}

/// Draws one plot: `build` makes its frame on an area (drawing nothing: the caption goes on
/// the area before), `mesh` draws axes and grid, then the series in order and the legend of
/// the labelled ones where it covers none of them, trying `prefer` first (`None`: no legend,
/// the series are named elsewhere, e.g. in a panel's caption). Records the plot in `layout`.
pub(crate) fn draw_plot<DB, B, M>(
    area: &DrawingArea<DB, Shift>,
    build: B,
    mesh: M,
    series: &[Series],
    prefer: Option<Corner>,
    layout: &mut Layout,
) -> Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    B: for<'b> Fn(&'b DrawingArea<DB, Shift>) -> Result<F64Chart<'b, DB>>,
    M: Fn(&mut F64Chart<'_, DB>) -> Result<()>,
{
    let entries = Entries::of(series, area)?;
    let chart = build(area)?;
    let (plot, marks) = plot_marks(&chart, area, series)?;
    let Some(prefer) = prefer.filter(|_| !entries.items.is_empty()) else {
        return finish(area, chart, &mesh, series, (plot, marks), None, layout);
    };
    let size = entries.size(1);
    let corners = std::iter::once(prefer).chain(Corner::ALL.into_iter().filter(|&c| c != prefer));
    let free = corners
        .map(|c| c.place(plot, size))
        .find(|rect| fits(plot, rect) && touches_none(rect, &marks));
    if let Some(rect) = free {
        let legend = Some((rect, 1, &entries));
        return finish(area, chart, &mesh, series, (plot, marks), legend, layout);
    }
    // No free corner: a strip under the plot, entries side by side.
    let (w, h) = area.dim_in_pixel();
    let columns =
        (((w as i32 - 2 * INSET) / entries.cell()).max(1) as usize).min(entries.items.len());
    let (box_w, box_h) = entries.size(columns);
    let (upper, lower) = area.split_vertically(h as i32 - box_h - 2 * INSET);
    let chart = build(&upper)?;
    let (plot, marks) = plot_marks(&chart, &upper, series)?;
    let (x0, y0) = lower.get_base_pixel();
    let left = x0 + (w as i32 - box_w) / 2;
    let rect = PixelRect {
        left,
        top: y0 + INSET,
        right: left + box_w,
        bottom: y0 + INSET + box_h,
    };
    let legend = Some((rect, columns, &entries));
    finish(area, chart, &mesh, series, (plot, marks), legend, layout)
}

/// `f` as [`draw_plot`] takes a frame: a closure kept in a variable needs this to be
/// general over the area's lifetime.
pub(crate) fn frame<DB, F>(f: F) -> F
where
    DB: DrawingBackend,
    F: for<'b> Fn(&'b DrawingArea<DB, Shift>) -> Result<F64Chart<'b, DB>>,
{
    f
}

fn fits(plot: PixelRect, rect: &PixelRect) -> bool {
    rect.left >= plot.left
        && rect.right <= plot.right
        && rect.top >= plot.top
        && rect.bottom <= plot.bottom
}

fn touches_none(rect: &PixelRect, marks: &[SeriesMarks]) -> bool {
    marks.iter().all(|m| {
        let near = rect.grown(m.reach + 2);
        !m.pixels.iter().any(|&p| near.contains(p))
    })
}

/// The plotting area of `chart` and each series' pixels in it.
fn plot_marks<DB: DrawingBackend>(
    chart: &F64Chart<'_, DB>,
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> Result<(PixelRect, Vec<SeriesMarks>)>
where
    DB::ErrorType: 'static,
{
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let plot = PixelRect {
        left: xs.start,
        top: ys.start,
        right: xs.end - 1,
        bottom: ys.end - 1,
    };
    let marks = series
        .iter()
        .map(|s| s.marks(chart, area, plot))
        .collect::<Result<_>>()?;
    Ok((plot, marks))
}

type Placed<'e, 's> = Option<(PixelRect, usize, &'e Entries<'s>)>;

/// Draws mesh, series and the legend (its box, columns, entries), and records the plot.
fn finish<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    mut chart: F64Chart<'_, DB>,
    mesh: &dyn Fn(&mut F64Chart<'_, DB>) -> Result<()>,
    series: &[Series],
    (plot, marks): (PixelRect, Vec<SeriesMarks>),
    legend: Placed<'_, '_>,
    layout: &mut Layout,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    mesh(&mut chart)?;
    for s in series {
        s.draw(&mut chart)?;
    }
    if let Some((rect, columns, entries)) = legend {
        draw_legend_box(area, rect, columns, entries)?;
    }
    layout.plots.push(PlotLayout {
        plot: Some(plot),
        legend: legend.map(|l| l.0),
        series: marks,
    });
    Ok(())
}

/// The legend: a white box with a black border, entries filled row by row.
fn draw_legend_box<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rect: PixelRect,
    columns: usize,
    entries: &Entries<'_>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    // Elements on `area` are placed relative to its corner; the layout's pixels are absolute.
    let (dx, dy) = area.get_base_pixel();
    let at = |x: i32, y: i32| (x - dx, y - dy);
    let corners = [at(rect.left, rect.top), at(rect.right, rect.bottom)];
    area.draw(&Rectangle::new(corners, WHITE.mix(0.9).filled()))
        .map_err(plot_err)?;
    area.draw(&Rectangle::new(corners, BLACK))
        .map_err(plot_err)?;
    let style = (FONT, FONT_SIZE)
        .into_font()
        .into_text_style(area)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (k, &(label, mark, color)) in entries.items.iter().enumerate() {
        let (row, column) = ((k / columns) as i32, (k % columns) as i32);
        let (x, y) = at(
            rect.left + PAD + column * entries.cell(),
            rect.top + PAD + row * ROW + ROW / 2,
        );
        draw_mark(area, mark, color, (x, y))?;
        area.draw(&Text::new(label, (x + MARK + GAP, y), style.clone()))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// An entry's mark, `MARK` pixels wide from `(x, y)` (its vertical centre).
fn draw_mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    mark: Mark,
    color: RGBAColor,
    (x, y): (i32, i32),
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    match mark {
        Mark::Line {
            width,
            dashed: false,
        } => area.draw(&PathElement::new(
            [(x, y), (x + MARK, y)],
            color.stroke_width(width.clamp(2, 3)),
        )),
        Mark::Line { width, .. } => {
            let style = color.stroke_width(width.clamp(2, 3));
            area.draw(&PathElement::new([(x, y), (x + 9, y)], style))?;
            area.draw(&PathElement::new([(x + 15, y), (x + MARK, y)], style))
        }
        Mark::Patch => area.draw(&Rectangle::new(
            [(x + 2, y - 7), (x + 20, y + 7)],
            color.filled(),
        )),
        Mark::Dot => area.draw(&Circle::new((x + MARK / 2, y), 6, color.filled())),
        Mark::Cross => area.draw(&Cross::new((x + MARK / 2, y), 6, color.stroke_width(3))),
    }
    .map_err(plot_err)
}
