use super::{AllocatorArgs, OutputArgs};
use crate::export::Table;
use crate::sizeclass::SizeClasses;
use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct ClassesArgs {
    #[command(flatten)]
    allocator: AllocatorArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(args: ClassesArgs) -> Result<i32> {
    let classes = args.allocator.classes()?;
    args.output.emit(&class_table(&classes))?;
    Ok(0)
}

/// The class table (columns begin `index,size,kind,slab_size,nregs`).
pub fn class_table(classes: &SizeClasses) -> Table {
    let mut table = Table::new(
        format!("jemalloc size classes, {}", classes.config().label()),
        &[
            "index",
            "size",
            "kind",
            "slab_size",
            "nregs",
            "lg_base",
            "lg_delta",
            "ndelta",
        ],
    );
    for c in classes.all() {
        table.push(vec![
            (c.index as u64).into(),
            c.size.into(),
            c.kind.as_str().into(),
            c.slab_size.into(),
            c.nregs.into(),
            u64::from(c.lg_base).into(),
            u64::from(c.lg_delta).into(),
            c.ndelta.into(),
        ]);
    }
    table
}
