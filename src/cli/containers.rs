//! `fragsim containers`: every container side by side for one element type.

use super::container::ElementArgs;
use super::{AllocatorArgs, OutputArgs};
use crate::containers::compare::compare_containers;
use crate::containers::section::write_charts;
use crate::containers::tables::{comparison_table, split_steps_table, verdict_table};
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Which table to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ContainersView {
    /// Bytes per element at N, peak during growth, allocator calls.
    Summary,
    /// Split vs unified at every growth step of every two-array container.
    Split,
    /// The split-vs-unified verdict per container.
    Verdict,
}

#[derive(Args, Debug)]
pub(crate) struct ContainersArgs {
    #[command(flatten)]
    elements: ElementArgs,
    /// Elements to insert.
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true)]
    count: u64,
    /// Which table to print.
    #[arg(long, value_enum, default_value = "summary")]
    view: ContainersView,
    /// Also draw the charts (PNG and SVG) into this folder.
    #[arg(long)]
    charts: Option<PathBuf>,
    #[command(flatten)]
    allocator: AllocatorArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(args: ContainersArgs) -> Result<i32> {
    let classes = args.allocator.classes()?;
    let key = args.elements.key()?;
    let value = args.elements.value()?;
    check_count(args.count, key, value, args.elements.order())?;
    let runs = compare_containers(key, value, args.count, args.elements.order(), &classes)?;
    let what = match value {
        Some(v) => format!("key {key}, value {v}"),
        None => format!("element {key}"),
    };
    let suffix = format!(
        "{what}, N = {}, {}",
        args.count,
        crate::sizeclass::build_title(classes.config())
    );
    let table = match args.view {
        ContainersView::Summary => comparison_table(format!("Containers at N: {suffix}"), &runs),
        ContainersView::Split => split_steps_table(format!("Split vs unified: {suffix}"), &runs),
        ContainersView::Verdict => {
            verdict_table(format!("Split vs unified verdict: {suffix}"), &runs)
        }
    };
    if let Some(dir) = &args.charts {
        crate::export::create_folder(dir)?;
        write_charts(dir, &runs, key, args.count, &classes)?;
    }
    args.output.emit(&table)?;
    Ok(0)
}

/// The count refused before any growth, in `container`'s words: above the largest limit of
/// the containers compared none of them would grow (those with a lower limit, the B-tree's,
/// are left out of the table above theirs).
fn check_count(
    count: u64,
    key: crate::containers::ElementType,
    value: Option<crate::containers::ElementType>,
    order: crate::containers::KeyOrder,
) -> Result<()> {
    let max = crate::containers::compare::comparable_specs(key, value, order)
        .iter()
        .map(|spec| spec.kind.max_count())
        .max()
        .unwrap_or(crate::containers::growth::MAX_COUNT);
    if count == 0 || count > max {
        bail!("--count {count} must be between 1 and {max} for containers");
    }
    Ok(())
}
