use super::AllocatorArgs;
use crate::export::{write_atomic, Csv, TableFormat};
use crate::validate::{validate, validation_markdown, validation_table, ValidateOptions};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Allocate every row of the full physical table (tables up to 10·2^20 values).
    #[arg(long)]
    full: bool,
    /// Folder for validation.md and validation.csv.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Name the reports validation-NAME.md/.csv (for build variants).
    #[arg(long)]
    variant: Option<String>,
    /// Check this model instead of the one derived from the live build (to see a mismatch).
    #[command(flatten)]
    allocator: AllocatorArgs,
}

pub fn run(args: ValidateArgs) -> Result<i32> {
    let mut options = if args.full {
        ValidateOptions::full()
    } else {
        ValidateOptions::reduced()
    };
    options.model = args.allocator.explicit_config()?;
    options.progress = true;
    let v = validate(&options)?;
    let stem = match &args.variant {
        Some(name) => format!("validation-{name}"),
        None => "validation".to_string(),
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create folder '{}'", args.out.display()))?;
    let command: Vec<String> = std::env::args().skip(1).collect();
    let command = format!("fragsim {}", command.join(" "));
    let md = validation_markdown(&v, &command)?;
    let csv = Csv.render(&validation_table(&v))?;
    let md_path = args.out.join(format!("{stem}.md"));
    write_atomic(&md_path, md.as_bytes())?;
    write_atomic(&args.out.join(format!("{stem}.csv")), csv.as_bytes())?;
    println!(
        "validated model {} against jemalloc {}: {} comparisons, {} mismatches ({})",
        v.model.label(),
        v.live.version,
        v.compared(),
        v.mismatches(),
        md_path.display()
    );
    if v.passed() {
        Ok(0)
    } else {
        for line in v.first_mismatches(5) {
            eprintln!("mismatch: {line}");
        }
        Ok(1)
    }
}
