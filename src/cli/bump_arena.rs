use super::output::{print_error, print_text};
use super::AllocatorArgs;
use crate::experiments::bump_arena::timing::{
    cxx_table, measure_all, ratio_table, run_strategy, stats_table, summarize, summarize_cxx,
    timing_table, JemallocSetting, MatrixOptions, TimedStrategy, Workload,
};
use crate::experiments::bump_arena::{
    bump_arena_table, run_scenario, BumpArenaResult, BumpArenaSpec,
};
use crate::export::{Format, TableFormat};
use crate::outln;
use crate::report::bump_arena::write_files;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub(crate) struct BumpArenaArgs {
    /// Number of inner vectors (M).
    #[arg(long, default_value_t = 1_000_000)]
    vectors: u64,
    /// Elements per inner vector (K).
    #[arg(long, default_value_t = 100)]
    elements: u64,
    /// Bytes per element (E): 1, 2, 4, 8 or 16.
    #[arg(long, default_value_t = 4)]
    elem_bytes: u64,
    /// Timed runs per strategy (the median is reported; with --timing, builds per child
    /// process: the first cold, the rest warm; a reused arena still grows in builds 2 and 3,
    /// so 6 or more keep its warm median a steady-state build; `Vec<Vec<i32>>` runs as
    /// RUNS/2 children of two builds, which bounds its resident memory at two builds).
    #[arg(long, default_value_t = 6, value_parser = super::args::at_least_one, conflicts_with = "model_only")]
    runs: usize,
    /// Only predict; run nothing.
    #[arg(long)]
    model_only: bool,
    /// The table format (as every command's `--format`); --timing prints Markdown only (its
    /// runs as JSON go to --timing-json).
    #[arg(long, value_parser = super::choice::choice::<Format>(), default_value_t = Format::Md)]
    format: Format,
    /// Measure the time fairly: each jemalloc setting x strategy in its own child process,
    /// cold (first build) and warm (later builds) apart, with page faults and jemalloc's
    /// statistics, beside the seed's C++ program (i32 elements only).
    #[arg(long, conflicts_with = "model_only")]
    timing: bool,
    /// With --timing: the jemalloc settings to run.
    #[arg(long, value_parser = super::choice::choice::<JemallocSetting>(), value_delimiter = ',', default_values_t = JemallocSetting::ALL.to_vec())]
    settings: Vec<JemallocSetting>,
    /// With --timing: the strategies to run.
    #[arg(long, value_parser = super::choice::choice::<TimedStrategy>(), value_delimiter = ',', default_values_t = TimedStrategy::ALL.to_vec())]
    strategies: Vec<TimedStrategy>,
    /// With --timing: skip the seed's C++ program.
    #[arg(long)]
    no_cxx: bool,
    /// With --timing: the script that builds and runs the seed's C++ program [default:
    /// scripts/seed-pmr.sh of the fragsim project around the current folder, else around the
    /// executable].
    #[arg(long, requires = "timing", conflicts_with = "no_cxx")]
    seed_script: Option<PathBuf>,
    /// With --timing: also write every run (Rust children and C++) as JSON to this file.
    #[arg(long)]
    timing_json: Option<PathBuf>,
    /// Internal: one timing child (run this strategy, print its runs as JSON).
    #[arg(long, hide = true, value_parser = super::choice::choice::<TimedStrategy>())]
    timing_child: Option<TimedStrategy>,
    /// Also write arena.md, arena.csv and the charts into this folder (times into its
    /// timing/ subfolder, which is not committed).
    #[arg(long)]
    out: Option<PathBuf>,
    /// File stem for --out (arena -> arena.md, arena.csv, charts/arena-bytes.png, ...).
    #[arg(long, default_value = "arena", requires = "out", value_parser = super::args::file_stem)]
    name: String,
    /// Model this build instead of the running one (prediction only makes sense then).
    #[command(flatten)]
    allocator: AllocatorArgs,
}

pub fn run(args: BumpArenaArgs) -> Result<i32> {
    if let Some(strategy) = args.timing_child {
        let workload = Workload {
            vectors: args.vectors,
            elements: args.elements,
            runs: args.runs,
        };
        let report = run_strategy(strategy, workload)?;
        outln!("{}", serde_json::to_string(&report)?)?;
        return Ok(0);
    }
    let spec = BumpArenaSpec {
        vectors: args.vectors,
        elements: args.elements,
        elem_bytes: args.elem_bytes,
    };
    // Everything that can be refused is refused before the measurement.
    spec.validate()?;
    let model = args.allocator.explicit_config()?;
    if args.timing && args.format != Format::Md {
        anyhow::bail!(
            "--format {} does not apply to --timing (its tables are Markdown; --timing-json FILE writes every run as JSON)",
            args.format
        );
    }
    // Found and checked before the measurement.
    let script = if args.timing && !args.no_cxx {
        Some(super::project::seed_script(args.seed_script.as_deref())?)
    } else {
        None
    };
    if let Some(script) = &script {
        super::args::refuse_outputs_over_inputs(
            &[("--seed-script", script)],
            &[("--timing-json", args.timing_json.as_deref())],
        )?;
    }
    if let Some(dir) = &args.out {
        super::args::prepare_folder(dir)?;
    }
    if args.timing {
        return timing(&args, spec, script.as_deref());
    }
    let result = run_scenario(spec, args.runs, args.model_only, model)?;
    let mut table = bump_arena_table(&result);
    // Markdown for a reader: the title and the ratios as lines around the table; CSV and
    // JSON the table whole (JSON's one shape for every command: {title, columns, rows}).
    if args.format == Format::Md {
        table.title.clear();
    }
    let mut text = args.format.render(&table)?;
    if args.format == Format::Md && !result.measurements.is_empty() {
        text.push('\n');
        for (what, ours, seed) in result.ratios() {
            text.push_str(&format!("{what}: {ours:.3} (seed: about {seed:.1})\n"));
        }
    }
    print_text(&text)?;
    if let Some(dir) = &args.out {
        for path in write_files(&result, None, dir, &args.name, &command_line())? {
            outln!("wrote {}", path.display())?;
        }
    }
    Ok(mismatch_code(&result))
}

fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("fragsim {}", args.join(" "))
}

/// `--timing`: the child processes, the C++ program, the tables; with --out, the files.
fn timing(args: &BumpArenaArgs, spec: BumpArenaSpec, script: Option<&Path>) -> Result<i32> {
    if spec.elem_bytes != 4 {
        anyhow::bail!(
            "bad element size {} for --timing: the timing run builds i32 vectors (--elem-bytes 4)",
            spec.elem_bytes
        );
    }
    spec.validate()?;
    let exe = std::env::current_exe()?;
    let mut options = MatrixOptions::all(&exe, spec.vectors, spec.elements, args.runs);
    options.workload.runs = args.runs;
    options.settings = args.settings.clone();
    options.strategies = args.strategies.clone();
    let run = measure_all(&options, script, &mut |setting, report| {
        print_error(&format!(
            "measured {} / {}",
            setting.key(),
            report.strategy.key()
        ));
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
        outln!("{}\n", table.title)?;
        table.title.clear();
        outln!("{}", crate::export::Markdown.render(&table)?)?;
    }
    for reason in &run.cxx.skipped {
        outln!("C++ skipped: {reason}")?;
    }
    if let Some(path) = &args.timing_json {
        let children: Vec<serde_json::Value> = run
            .children
            .iter()
            .map(|(setting, report)| serde_json::json!({"setting": setting, "report": report}))
            .collect();
        let all = serde_json::json!({"children": children, "cxx": run.cxx.runs});
        crate::export::write_atomic(path, serde_json::to_string(&all)?.as_bytes())?;
    }
    if let Some(dir) = &args.out {
        // The bytes side, measured in this process, goes into the same files.
        let result = run_scenario(spec, args.runs, false, None)?;
        for path in write_files(&result, Some(&run), dir, &args.name, &command_line())? {
            outln!("wrote {}", path.display())?;
        }
        return Ok(mismatch_code(&result));
    }
    Ok(0)
}

/// 1 (with a message) when measured usable bytes differ from the prediction.
fn mismatch_code(result: &BumpArenaResult) -> i32 {
    let bad = result.mismatches();
    if !result.measurements.is_empty() && !bad.is_empty() {
        print_error(&format!(
            "predicted and measured usable bytes differ for: {bad:?}"
        ));
        return 1;
    }
    0
}
