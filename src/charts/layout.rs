//! Where a chart put its legend and its series, in the drawing's pixels: plain data, so a
//! test can check that the legend hides no data and that every series shows, without
//! reading pixels back from an image.

use std::sync::Mutex;

/// A rectangle of pixels of the whole drawing, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelRect {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl PixelRect {
    pub fn contains(&self, (x, y): (i32, i32)) -> bool {
        (self.left..=self.right).contains(&x) && (self.top..=self.bottom).contains(&y)
    }

    /// The rectangle grown by `by` pixels on every side.
    pub fn grown(&self, by: i32) -> PixelRect {
        PixelRect {
            left: self.left - by,
            top: self.top - by,
            right: self.right + by,
            bottom: self.bottom + by,
        }
    }
}

/// What one series drew inside its plot.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesMarks {
    /// The series' name in the legend (or the panel's caption); `None`: not named (a
    /// reference line, the labels of bars).
    pub label: Option<String>,
    /// Pixels on the series' path or inside its shapes, sampled at most 2 pixels apart,
    /// only those inside the plot.
    pub pixels: Vec<(i32, i32)>,
    /// How far from each of `pixels` the series' ink reaches (half a line's width).
    pub reach: i32,
}

/// One plot of a chart (a chart of several panels has one per panel), in drawing order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlotLayout {
    /// The plotting area (inside the axes).
    pub plot: Option<PixelRect>,
    /// The legend's box, inside or outside the plot; `None`: no legend.
    pub legend: Option<PixelRect>,
    /// Series in the order they were drawn (a later one draws over an earlier one).
    pub series: Vec<SeriesMarks>,
}

/// Every plot of one chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    /// The chart's file name (without extension).
    pub name: String,
    pub plots: Vec<PlotLayout>,
}

impl Layout {
    /// What is wrong with this chart for a reader: data under a legend, or a named series
    /// with nothing visible (outside the plot, under the legend, or under later series
    /// everywhere). Empty when nothing is.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (p, plot) in self.plots.iter().enumerate() {
            let at = |what: String| format!("{} (plot {p}): {what}", self.name);
            if let Some(legend) = plot.legend {
                for s in &plot.series {
                    let hidden = s
                        .pixels
                        .iter()
                        .filter(|&&px| legend.grown(s.reach).contains(px))
                        .count();
                    if hidden > 0 {
                        let name = s.label.as_deref().unwrap_or("an unnamed series");
                        problems.push(at(format!("legend covers {hidden} points of {name}")));
                    }
                }
            }
            for (i, s) in plot.series.iter().enumerate() {
                if let Some(label) = &s.label {
                    if !plot.shows(i) {
                        problems.push(at(format!("'{label}' has no visible mark")));
                    }
                }
            }
        }
        problems
    }
}

impl PlotLayout {
    /// Whether series `i` has a pixel inside the plot that neither the legend nor a series
    /// drawn after it covers.
    pub fn shows(&self, i: usize) -> bool {
        let Some(plot) = self.plot else {
            return false;
        };
        let width = (plot.right - plot.left + 1).max(0) as usize;
        let height = (plot.bottom - plot.top + 1).max(0) as usize;
        let mut covered = vec![false; width * height];
        let index = |(x, y): (i32, i32)| {
            plot.contains((x, y))
                .then(|| (y - plot.top) as usize * width + (x - plot.left) as usize)
        };
        for later in &self.series[i + 1..] {
            for &(x, y) in &later.pixels {
                for dy in -later.reach..=later.reach {
                    for dx in -later.reach..=later.reach {
                        if let Some(k) = index((x + dx, y + dy)) {
                            covered[k] = true;
                        }
                    }
                }
            }
        }
        let under_legend = |px| self.legend.is_some_and(|l| l.contains(px));
        // Any pixel of the series' ink, which reaches past its path (a wide line under a
        // narrow one shows at its edges).
        let own = &self.series[i];
        own.pixels.iter().any(|&(x, y)| {
            (-own.reach..=own.reach).any(|dy| {
                (-own.reach..=own.reach).any(|dx| {
                    let px = (x + dx, y + dy);
                    index(px).is_some_and(|k| !covered[k]) && !under_legend(px)
                })
            })
        })
    }
}

/// Layouts of the charts [`super::write_chart`] writes while [`collect_layouts`] runs.
static COLLECTED: Mutex<Option<Vec<Layout>>> = Mutex::new(None);
/// One collector at a time (the report writes charts from several threads).
static COLLECTOR: Mutex<()> = Mutex::new(());

/// Runs `f` and returns, beside its result, the layout of every chart written through
/// `super::write_chart` meanwhile (from any thread), in the order they were written.
pub fn collect_layouts<T>(f: impl FnOnce() -> T) -> (T, Vec<Layout>) {
    let _one = COLLECTOR.lock().unwrap_or_else(|e| e.into_inner());
    *COLLECTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    let result = f();
    let layouts = COLLECTED.lock().unwrap_or_else(|e| e.into_inner()).take();
    (result, layouts.unwrap_or_default())
}

/// Hands a written chart's layout to the running collector, if any.
pub(crate) fn collected(layout: Layout) {
    if let Some(all) = COLLECTED.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        all.push(layout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(left: i32, top: i32, right: i32, bottom: i32) -> PixelRect {
        PixelRect {
            left,
            top,
            right,
            bottom,
        }
    }

    fn series(label: &str, pixels: Vec<(i32, i32)>) -> SeriesMarks {
        SeriesMarks {
            label: Some(label.into()),
            pixels,
            reach: 1,
        }
    }

    #[test]
    fn a_legend_over_a_point_and_a_line_under_another_are_problems() {
        let layout = Layout {
            name: "t".into(),
            plots: vec![PlotLayout {
                plot: Some(rect(0, 0, 99, 99)),
                legend: Some(rect(80, 0, 99, 20)),
                series: vec![
                    series("under", vec![(10, 50), (11, 50)]),
                    series("over", vec![(10, 50), (11, 50), (90, 10)]),
                ],
            }],
        };
        let problems = layout.problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("legend covers 1 points of over"));
        assert!(problems[1].contains("'under' has no visible mark"));
        assert!(layout.plots[0].shows(1));
    }
}
