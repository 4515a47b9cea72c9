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
pub(crate) struct TableArgs {
    /// Which model to tabulate.
    #[arg(long, value_enum, default_value_t = TableModel::Physical)]
    model: TableModel,
    /// Value sizes, as A..=B:STEP [default: 8..=256:8] (physical model only).
    #[arg(long)]
    sizes: Option<SizeRange>,
    /// The largest table capacity swept [default: 10485760] (physical model only).
    #[arg(long)]
    max_capacity: Option<u64>,
    /// alignof(value_type); by default the largest power of two dividing the size, up to 8
    /// (physical model only).
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

/// Options that belong to the other model are refused, not ignored. (clap's `conflicts_with`
/// cannot depend on --model's value, so this is checked here, before any work.)
fn check_applicable(args: &TableArgs) -> Result<()> {
    let given = |name: &'static str, present: bool| present.then_some(name);
    let misplaced: Vec<&str> = match args.model {
        TableModel::Physical => [given("--seed-file", args.seed_file.is_some())].to_vec(),
        TableModel::D8485933 => [
            given("--sizes", args.sizes.is_some()),
            given("--max-capacity", args.max_capacity.is_some()),
            given("--value-align", args.value_align.is_some()),
        ]
        .to_vec(),
    }
    .into_iter()
    .flatten()
    .collect();
    if misplaced.is_empty() {
        return Ok(());
    }
    let model = args.model.to_possible_value().expect("named model");
    let hint = match args.model {
        TableModel::Physical => "it belongs to --model d8485933",
        TableModel::D8485933 => {
            "the seed's table has its own sizes; they belong to --model physical"
        }
    };
    anyhow::bail!(
        "{} cannot be used with --model {}: {hint}",
        misplaced.join(", "),
        model.get_name()
    )
}

pub fn run(args: TableArgs) -> Result<i32> {
    check_applicable(&args)?;
    let table = match args.model {
        TableModel::Physical => {
            let classes = args.allocator.classes()?;
            let defaults = SweepSpec::default();
            let spec = SweepSpec {
                sizes: args.sizes.unwrap_or(defaults.sizes),
                max_capacity: args.max_capacity.unwrap_or(defaults.max_capacity),
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
