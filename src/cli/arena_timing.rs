use crate::bump_timing::{
    cxx_table, ratio_table, run_cxx, run_matrix, run_strategy, stats_table, summarize,
    summarize_cxx, timing_table, JemallocSetting, MatrixOptions, TimedStrategy,
};
use crate::export::{Markdown, TableFormat};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ArenaTimingArgs {
    /// Number of inner vectors (M).
    #[arg(long, default_value_t = 1_000_000)]
    vectors: u64,
    /// i32 elements per inner vector (K).
    #[arg(long, default_value_t = 100)]
    elements: u64,
    /// Runs per child process: the first is cold, the rest warm (at least 2).
    #[arg(long, default_value_t = 6)]
    runs: usize,
    /// jemalloc settings, each in its own child process.
    #[arg(long, value_delimiter = ',', default_values_t = JemallocSetting::ALL.to_vec())]
    settings: Vec<JemallocSetting>,
    /// Strategies, each in its own child process.
    #[arg(long, value_delimiter = ',', default_values_t = TimedStrategy::ALL.to_vec())]
    strategies: Vec<TimedStrategy>,
    /// Skip the seed's C++ program.
    #[arg(long)]
    no_cxx: bool,
    /// The script that builds and runs the seed's C++ program.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/seed-pmr.sh"))]
    seed_script: PathBuf,
    /// Internal: run one strategy in this process and print its runs as JSON.
    #[arg(long, hide = true)]
    child: Option<TimedStrategy>,
}

impl std::fmt::Display for JemallocSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl std::fmt::Display for TimedStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

pub fn run(args: ArenaTimingArgs) -> Result<i32> {
    if let Some(strategy) = args.child {
        let report = run_strategy(strategy, args.vectors, args.elements, args.runs)?;
        println!("{}", serde_json::to_string(&report)?);
        return Ok(0);
    }
    let options = MatrixOptions {
        exe: std::env::current_exe()?,
        vectors: args.vectors,
        elements: args.elements,
        runs: args.runs,
        settings: args.settings,
        strategies: args.strategies,
    };
    let results = run_matrix(&options, &mut |setting, report| {
        eprintln!("measured {} / {}", setting.key(), report.strategy.key());
    })?;
    let summaries = summarize(&results);
    for mut table in [
        timing_table(&summaries, true),
        ratio_table(&summaries),
        stats_table(&results),
    ] {
        println!("{}\n", table.title);
        table.title.clear();
        println!("{}", Markdown.render(&table)?);
    }
    if !args.no_cxx {
        let cxx = run_cxx(&args.seed_script, args.vectors, args.elements, args.runs)?;
        for reason in &cxx.skipped {
            println!("C++ skipped: {reason}");
        }
        let mut table = cxx_table(&summarize_cxx(&cxx.runs), true);
        println!("{}\n", table.title);
        table.title.clear();
        println!("{}", Markdown.render(&table)?);
    }
    Ok(0)
}
