use super::{AllocatorArgs, OutputArgs};
use crate::error::InputError;
use crate::experiments::sweep::{
    parse_seed_table, physical_sweep, physical_table, seed_comparison_table, seed_rows, SizeRange,
    SweepSpec,
};
use crate::sizeclass::{Preset, SizeClasses};
use anyhow::Result;
use clap::{Args, ValueEnum};

/// What `fragsim table` computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TableModel {
    /// Exact bytes of F14 vector tables under the chosen build, split vs unified.
    Physical,
    /// The seed's own model (folly D8485933), beside its printed table.
    #[value(name = "d8485933", alias = "seed")]
    D8485933,
}

#[derive(Args, Debug)]
pub struct TableArgs {
    /// Which model to tabulate.
    #[arg(long, value_enum, default_value_t = TableModel::Physical)]
    model: TableModel,
    /// Value sizes, as A..=B:STEP.
    #[arg(long, default_value = "8..=256:8")]
    sizes: SizeRange,
    /// The largest table capacity swept.
    #[arg(long, default_value_t = 10 << 20)]
    max_capacity: u64,
    /// alignof(value_type); by default the largest power of two dividing the size, up to 8.
    #[arg(long)]
    value_align: Option<u64>,
    /// With --model d8485933: compare with this printed table (CSV `value_size,footprint_change`,
    /// `#` comments) instead of the seed's, e.g. one measured for another build.
    #[arg(long)]
    seed_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    allocator: AllocatorArgs,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(args: TableArgs) -> Result<i32> {
    let table = match args.model {
        TableModel::Physical => {
            let classes = args.allocator.classes()?;
            let spec = SweepSpec {
                sizes: args.sizes,
                max_capacity: args.max_capacity,
                value_align: args.value_align,
            };
            physical_table(&classes, &physical_sweep(&classes, &spec)?)
        }
        TableModel::D8485933 => {
            // The seed's figures come from an 8-byte-quantum build unless told otherwise.
            let config = match args.allocator.explicit_config()? {
                Some(config) => config,
                None => Preset::Quantum8.config(),
            };
            let printed = match &args.seed_file {
                Some(path) => {
                    let text =
                        std::fs::read_to_string(path).map_err(|e| InputError::Unreadable {
                            path: path.display().to_string(),
                            reason: e.to_string(),
                        })?;
                    parse_seed_table(&text, &format!("'{}'", path.display()))?
                }
                None => seed_rows(),
            };
            seed_comparison_table(&SizeClasses::new(config)?, &printed)?
        }
    };
    args.output.emit(&table)?;
    Ok(0)
}
