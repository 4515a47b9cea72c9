use crate::bump_timing::{
    cxx_table, measure_all, ratio_table, run_strategy, stats_table, summarize, summarize_cxx,
    timing_table, JemallocSetting, MatrixOptions, TimedStrategy,
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
    /// Also write every run (Rust children and C++) as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
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
    let script = (!args.no_cxx).then_some(args.seed_script.as_path());
    let run = measure_all(&options, script, &mut |setting, report| {
        eprintln!("measured {} / {}", setting.key(), report.strategy.key());
    })?;
    let summaries = summarize(&run.children);
    let mut tables = vec![
        timing_table(&summaries, true),
        ratio_table(&summaries),
        stats_table(&run.children),
    ];
    if !run.cxx.runs.is_empty() {
        tables.push(cxx_table(&summarize_cxx(&run.cxx.runs), true));
    }
    for mut table in tables {
        println!("{}\n", table.title);
        table.title.clear();
        println!("{}", Markdown.render(&table)?);
    }
    for reason in &run.cxx.skipped {
        println!("C++ skipped: {reason}");
    }
    if let Some(path) = &args.json {
        let children: Vec<serde_json::Value> = run
            .children
            .iter()
            .map(|(setting, report)| serde_json::json!({"setting": setting, "report": report}))
            .collect();
        let all = serde_json::json!({"children": children, "cxx": run.cxx.runs});
        crate::export::write_atomic(path, serde_json::to_string(&all)?.as_bytes())?;
    }
    Ok(0)
}
