use crate::report::{write_report, ReportOptions};
use crate::validate::ValidateOptions;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Folder to write into.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Validate the full physical table (tables up to 10·2^20 values) rather than a reduced one.
    #[arg(long)]
    full: bool,
    /// Inner vectors in the bump-arena scenario (the seed's million by default).
    #[arg(long, default_value_t = 1_000_000)]
    arena_vectors: u64,
    /// Timed runs per bump-arena strategy.
    #[arg(long, default_value_t = 5)]
    arena_runs: usize,
    /// Skip the seed's C++ program in the bump-arena timing.
    #[arg(long)]
    no_cxx: bool,
    /// The script that builds and runs the seed's C++ program (skipped with a message where
    /// g++ is missing).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/seed-pmr.sh"))]
    seed_script: PathBuf,
}

pub fn run(args: ReportArgs) -> Result<i32> {
    let mut options = ReportOptions::new(args.out.clone());
    if args.full {
        options.validate = ValidateOptions::full();
    }
    options.validate.progress = true;
    options.bump_arena.vectors = args.arena_vectors;
    options.bump_arena_runs = args.arena_runs;
    options.fragsim_exe = std::env::current_exe().ok();
    if !args.no_cxx {
        options.seed_script = Some(args.seed_script.clone());
    }
    let start = std::time::Instant::now();
    let summary = write_report(&options, &mut |step| {
        println!(
            "{:>24}  {:>8.2?}  {}",
            step.name,
            step.took,
            step.files.join(", ")
        );
    })?;
    println!(
        "wrote {} (index {}) in {:.2?}",
        args.out.display(),
        args.out.join("README.md").display(),
        start.elapsed()
    );
    if summary.validation_passed {
        Ok(0)
    } else {
        eprintln!(
            "live validation found {} mismatches: see {}",
            summary.mismatches,
            args.out.join("validation.md").display()
        );
        Ok(1)
    }
}
