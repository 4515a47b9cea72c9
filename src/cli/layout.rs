use super::{AllocatorArgs, OutputArgs};
use crate::export::{Cell, Table};
use crate::layout::{ArraysLayout, Layout, SplitOrUnified};
use crate::sizeclass::SizeClasses;
use anyhow::{Context, Result};
use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct LayoutArgs {
    /// An array the structure owns: NAME:SIZExCOUNT[:ALIGN], e.g. keys:8x1000. Repeat it.
    #[arg(long = "array", required = true)]
    arrays: Vec<String>,
    #[command(flatten)]
    allocator: AllocatorArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(args: LayoutArgs) -> Result<i32> {
    let classes = args.allocator.classes()?;
    let layout = ArraysLayout::parse(&args.arrays)?;
    args.output
        .emit(&split_vs_unified_table(&classes, &layout)?)?;
    Ok(0)
}

/// Every block of the split and unified layouts, then the totals and the ratio.
pub(crate) fn split_vs_unified_table(
    classes: &SizeClasses,
    layout: &impl SplitOrUnified,
) -> Result<Table> {
    let mut table = Table::new(
        format!(
            "Split vs unified, {}",
            crate::sizeclass::build_title(classes.config())
        ),
        &["layout", "block", "requested", "usable", "active", "calls"],
    );
    let mut totals = Vec::new();
    for (name, l) in [("split", layout.split()), ("unified", layout.unified())] {
        let cost = price(classes, &l)?;
        for block in &l.blocks {
            let one = price(classes, &Layout::new(vec![block.clone()]))?;
            table.push(vec![
                name.into(),
                block.name.clone().into(),
                one.requested.into(),
                one.usable.into(),
                one.active.into(),
                one.calls.into(),
            ]);
        }
        table.push(vec![
            name.into(),
            "total".into(),
            cost.requested.into(),
            cost.usable.into(),
            cost.active.into(),
            cost.calls.into(),
        ]);
        totals.push(cost);
    }
    let ratio = |a: u64, b: u64| Cell::Float(a as f64 / b as f64, 6);
    table.push(vec![
        "unified / split".into(),
        "ratio".into(),
        ratio(totals[1].requested, totals[0].requested),
        ratio(totals[1].usable, totals[0].usable),
        ratio(totals[1].active, totals[0].active),
        ratio(totals[1].calls, totals[0].calls),
    ]);
    Ok(table)
}

fn price(classes: &SizeClasses, layout: &Layout) -> Result<crate::layout::Cost> {
    layout.cost(classes).with_context(|| {
        format!(
            "a block of {} bytes is larger than the largest size class",
            layout.requested()
        )
    })
}
