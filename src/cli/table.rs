use super::{AllocatorArgs, OutputArgs};
use crate::sizeclass::{AllocatorConfig, SizeClasses};
use crate::sweep::{
    physical_sweep, physical_table, seed_comparison_table, seed_rows, SizeRange, SweepSpec,
};
use anyhow::{bail, Result};
use clap::Args;

#[derive(Args, Debug)]
pub struct TableArgs {
    /// physical (exact bytes under the chosen build) or d8485933 (the seed's own model,
    /// beside its printed table).
    #[arg(long, default_value = "physical")]
    model: String,
    /// Value sizes, as A..=B:STEP.
    #[arg(long, default_value = "8..=256:8")]
    sizes: SizeRange,
    /// The largest table capacity swept.
    #[arg(long, default_value_t = 10 << 20)]
    max_capacity: u64,
    /// alignof(value_type); by default the largest power of two dividing the size, up to 8.
    #[arg(long)]
    value_align: Option<u64>,
    #[command(flatten)]
    allocator: AllocatorArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(args: TableArgs) -> Result<i32> {
    let table = match args.model.as_str() {
        "physical" => {
            let classes = args.allocator.classes()?;
            let spec = SweepSpec {
                sizes: args.sizes,
                max_capacity: args.max_capacity,
                value_align: args.value_align,
            };
            physical_table(&classes, &physical_sweep(&classes, &spec)?)
        }
        "d8485933" | "seed" => {
            // The seed's figures come from an 8-byte-quantum build unless told otherwise.
            let config = match args.allocator.explicit_config()? {
                Some(config) => config,
                None => AllocatorConfig::preset("quantum8")?,
            };
            seed_comparison_table(&SizeClasses::new(config)?, &seed_rows())?
        }
        other => bail!("unknown model '{other}' (known: physical, d8485933)"),
    };
    args.output.emit(&table)?;
    Ok(0)
}
