use super::output::{print_error, print_text};
use super::AllocatorArgs;
use crate::experiments::bump_arena::{
    bump_arena_table, run_scenario, BumpArenaResult, BumpArenaSpec,
};
use crate::export::TableFormat;
use crate::outln;
use crate::report::bump_arena::write_files;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BumpArenaArgs {
    /// Number of inner vectors (M).
    #[arg(long, default_value_t = 1_000_000)]
    vectors: u64,
    /// Elements per inner vector (K).
    #[arg(long, default_value_t = 100)]
    elements: u64,
    /// Bytes per element (E): 1, 2, 4, 8 or 16.
    #[arg(long, default_value_t = 4)]
    elem_bytes: u64,
    /// Timed runs per strategy (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = super::args::at_least_one, conflicts_with = "model_only")]
    runs: usize,
    /// Only predict; run nothing.
    #[arg(long)]
    model_only: bool,
    /// Print the result as JSON instead of a table (what `fragsim report` reads back from
    /// the run it starts with decay off).
    #[arg(long, conflicts_with = "out")]
    json: bool,
    /// Also write arena.md, arena.csv and the charts into this folder.
    #[arg(long)]
    out: Option<PathBuf>,
    /// File stem for --out (arena -> arena.md, arena.csv, charts/arena-time.png, ...).
    #[arg(long, default_value = "arena", requires = "out", value_parser = super::args::file_stem)]
    name: String,
    /// Model this build instead of the running one (prediction only makes sense then).
    #[command(flatten)]
    allocator: AllocatorArgs,
}

pub fn run(args: BumpArenaArgs) -> Result<i32> {
    let spec = BumpArenaSpec {
        vectors: args.vectors,
        elements: args.elements,
        elem_bytes: args.elem_bytes,
    };
    // Everything that can be refused is refused before the measurement.
    spec.validate()?;
    let model = args.allocator.explicit_config()?;
    if let Some(dir) = &args.out {
        super::args::prepare_folder(dir)?;
    }
    let result = run_scenario(spec, args.runs, args.model_only, model)?;
    if args.json {
        outln!("{}", serde_json::to_string(&result)?)?;
        return Ok(mismatch_code(&result));
    }
    let mut table = bump_arena_table(&result);
    table.title.clear();
    let mut text = crate::export::Markdown.render(&table)?;
    if !result.measurements.is_empty() {
        text.push('\n');
        for (what, ours, seed) in result.ratios() {
            text.push_str(&format!("{what}: {ours:.3} (seed: about {seed:.1})\n"));
        }
    }
    print_text(&text)?;
    if let Some(dir) = &args.out {
        let command: Vec<String> = std::env::args().skip(1).collect();
        let command = format!("fragsim {}", command.join(" "));
        for path in write_files(&result, dir, &args.name, &command)? {
            outln!("wrote {}", path.display())?;
        }
    }
    Ok(mismatch_code(&result))
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
