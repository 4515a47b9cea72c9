use super::args::at_least_one;
use crate::experiments::bump_arena::check_fits_in_memory;
use crate::export::StagedDir;
use crate::outln;
use crate::report::{write_report, ReportOptions};
use crate::validate::ValidateOptions;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Folder to write into [default: reports/ of the fragsim project the current folder is
    /// in]: new, empty, or a previous report (it holds a .fragsim-report manifest). The report
    /// is built beside it and replaces the files of the previous one when complete; every
    /// other file in it stays.
    #[arg(long = "out-dir", alias = "out", value_name = "DIR")]
    out: Option<PathBuf>,
    /// Validate the full physical table (tables up to 10·2^20 values) rather than a reduced one.
    #[arg(long)]
    full: bool,
    /// Inner vectors in the bump-arena scenario (the seed's million by default).
    #[arg(long, default_value_t = 1_000_000)]
    arena_vectors: u64,
    /// Builds per strategy in the bump-arena timing (at least 2 are run: one cold, the rest
    /// warm; the reused arena's child runs at least 6, as it grows in builds 2 and 3;
    /// `Vec<Vec<i32>>` runs as children of two builds each).
    #[arg(long, default_value_t = ReportOptions::DEFAULT_BUMP_ARENA_RUNS, value_parser = at_least_one)]
    arena_runs: usize,
    /// Skip the seed's C++ program in the bump-arena timing.
    #[arg(long)]
    no_cxx: bool,
    /// The script that builds and runs the seed's C++ program (skipped with a message where
    /// g++ is missing) [default: scripts/seed-pmr.sh of the fragsim project around the
    /// current folder, else around the executable; checked before any work].
    #[arg(long, conflicts_with = "no_cxx")]
    seed_script: Option<PathBuf>,
}

/// The manifest a report folder holds: the files the report wrote (a folder without one is
/// not a report, and is refused unless empty).
pub(crate) const REPORT_MANIFEST: &str = ".fragsim-report";

/// `reports/` of the fragsim project around `start`.
fn project_reports(start: &Path) -> Option<PathBuf> {
    super::project::project_root(start).map(|root| root.join("reports"))
}

pub fn run(args: ReportArgs) -> Result<i32> {
    let out = match args.out {
        Some(out) => out,
        None => {
            let here = std::env::current_dir()?;
            project_reports(&here).ok_or_else(|| {
                anyhow::anyhow!(
                    "no --out-dir given and '{}' is not inside the fragsim project: pass --out-dir FOLDER",
                    here.display()
                )
            })?
        }
    };
    // A missing script fails now, not after the first sections' work.
    let seed_script = if args.no_cxx {
        None
    } else {
        Some(super::project::seed_script(args.seed_script.as_deref())?)
    };
    // The committed traces are found at run time too (an installed binary outlives its clone).
    let traces_root = super::project::traces_root()?;
    let mut options = ReportOptions::new(out.clone());
    options.programs = Some(crate::report::programs::ProgramsOptions::new(&traces_root));
    if args.full {
        options.validate = ValidateOptions::full();
    }
    options.validate.progress = super::validate::progress_bar();
    options.bump_arena_progress = super::progress::later_bar("bump-arena");
    options.bump_arena.vectors = args.arena_vectors;
    options.bump_arena_runs = args.arena_runs;
    if let Ok(exe) = std::env::current_exe() {
        options.run_children(exe);
    }
    // Checked before any file is written.
    check_fits_in_memory(&options.bump_arena)?;
    let staged = StagedDir::owned(&out, REPORT_MANIFEST)?;
    options.out = staged.path().to_path_buf();
    options.seed_script = seed_script;
    let start = std::time::Instant::now();
    let summary = write_report(&options, &mut |step| {
        outln!(
            "{:>30}  {:>8.2?}  {}",
            step.name,
            step.took,
            step.files.join(", ")
        )?;
        Ok(())
    })?;
    // Files other commands write into the folder (scripts/validate-variants.sh) and the
    // user's own files stay: only the files the old manifest lists are replaced.
    staged.commit()?;
    outln!(
        "wrote {} (index {}) in {:.2?}",
        out.display(),
        out.join("README.md").display(),
        start.elapsed()
    )?;
    if summary.validation_passed {
        Ok(0)
    } else {
        super::output::print_error(&format!(
            "live validation found {} mismatches: see {}",
            summary.mismatches,
            out.join("validation.md").display()
        ));
        Ok(1)
    }
}
