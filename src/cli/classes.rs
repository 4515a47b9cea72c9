use super::{AllocatorArgs, OutputArgs};
use crate::sizeclass::class_table;
use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct ClassesArgs {
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
