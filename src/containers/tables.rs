//! The tables of the `container` and `containers` commands and the report section.

use super::compare::{ContainerRun, SplitVerdict};
use super::growth::Growth;
use crate::export::{Cell, Table};

fn per(bytes: u64, elements: u64) -> Cell {
    Cell::Float(bytes as f64 / elements.max(1) as f64, 2)
}

fn ratio(a: u64, b: u64) -> Cell {
    Cell::Float(a as f64 / b as f64, 4)
}

/// One row per growth step (and the state at N), then the peak during growth.
pub(crate) fn growth_table(title: String, growth: &Growth) -> Table {
    let split = growth.steps.iter().any(|s| s.split.is_some());
    let mut columns = vec![
        "elements",
        "capacity",
        "requested",
        "usable",
        "active",
        "requested_per_element",
        "usable_per_element",
        "active_per_element",
        "calls",
    ];
    if split {
        columns.extend(["split_usable", "unified_usable", "unified_over_split"]);
    }
    let mut table = Table::new(title, &columns);
    for s in &growth.steps {
        let mut row = vec![
            s.elements.into(),
            s.capacity.into(),
            s.live.requested.into(),
            s.live.usable.into(),
            s.live.active.into(),
            per(s.live.requested, s.elements),
            per(s.live.usable, s.elements),
            per(s.live.active, s.elements),
            s.calls.into(),
        ];
        if split {
            match s.split {
                Some(c) => row.extend([
                    c.split.usable.into(),
                    c.unified.usable.into(),
                    ratio(c.unified.usable, c.split.usable),
                ]),
                None => row.extend(["".into(), "".into(), "".into()]),
            }
        }
        table.push(row);
    }
    let n = growth.last().elements;
    let mut peak = vec![
        "peak during growth".into(),
        "".into(),
        growth.peak.requested.into(),
        growth.peak.usable.into(),
        growth.peak.active.into(),
        per(growth.peak.requested, n),
        per(growth.peak.usable, n),
        per(growth.peak.active, n),
        growth.calls.into(),
    ];
    if split {
        peak.extend(["".into(), "".into(), "".into()]);
    }
    table.push(peak);
    table
}

/// Every container at N: bytes per element, the peak during growth, allocator calls.
pub(crate) fn comparison_table(title: String, runs: &[ContainerRun]) -> Table {
    let mut table = Table::new(
        title,
        &[
            "container",
            "element",
            "elements",
            "capacity",
            "requested_per_element",
            "usable_per_element",
            "active_per_element",
            "peak_usable_per_element",
            "peak_active_per_element",
            "calls",
            "unified_over_split_at_n",
        ],
    );
    for run in runs {
        let last = run.growth.last();
        table.push(vec![
            run.kind.name().into(),
            run.element.to_string().into(),
            last.elements.into(),
            last.capacity.into(),
            per(last.live.requested, last.elements),
            per(last.live.usable, last.elements),
            per(last.live.active, last.elements),
            per(run.growth.peak.usable, last.elements),
            per(run.growth.peak.active, last.elements),
            run.growth.calls.into(),
            match last.split {
                Some(c) => ratio(c.unified.usable, c.split.usable),
                None => "".into(),
            },
        ]);
    }
    table
}

/// Split vs unified at every growth step of every container with two arrays.
pub(crate) fn split_steps_table(title: String, runs: &[ContainerRun]) -> Table {
    let mut table = Table::new(
        title,
        &[
            "container",
            "elements",
            "capacity",
            "split_requested",
            "unified_requested",
            "split_usable",
            "unified_usable",
            "split_active",
            "unified_active",
            "unified_over_split_usable",
        ],
    );
    for run in runs {
        for s in &run.growth.steps {
            let Some(c) = s.split else { continue };
            table.push(vec![
                run.kind.name().into(),
                s.elements.into(),
                s.capacity.into(),
                c.split.requested.into(),
                c.unified.requested.into(),
                c.split.usable.into(),
                c.unified.usable.into(),
                c.split.active.into(),
                c.unified.active.into(),
                ratio(c.unified.usable, c.split.usable),
            ]);
        }
    }
    table
}

/// The split-vs-unified verdict per container.
pub(crate) fn verdict_table(title: String, runs: &[ContainerRun]) -> Table {
    let mut table = Table::new(
        title,
        &[
            "container",
            "ratio_at_n",
            "geometric_mean_ratio",
            "min_ratio",
            "max_ratio",
            "steps_unified_cheaper",
            "steps",
            "verdict",
        ],
    );
    for run in runs {
        let Some(v) = SplitVerdict::of(&run.growth) else {
            continue;
        };
        table.push(vec![
            run.kind.name().into(),
            Cell::Float(v.at_n, 4),
            Cell::Float(v.mean, 4),
            Cell::Float(v.min, 4),
            Cell::Float(v.max, 4),
            (v.unified_cheaper_steps as u64).into(),
            (v.steps as u64).into(),
            v.sentence().into(),
        ]);
    }
    table
}
