use super::AllocatorArgs;
use crate::arena::{
    arena_charts, arena_markdown, arena_table, header_bytes, measure, predict, ArenaResult,
    ArenaSpec,
};
use crate::charts::write_chart;
use crate::export::{write_atomic, Csv, TableFormat};
use crate::live::LiveBuild;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ArenaArgs {
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
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Only predict; run nothing.
    #[arg(long)]
    model_only: bool,
    /// Also write arena.md, arena.csv and the charts into this folder.
    #[arg(long)]
    out: Option<PathBuf>,
    /// File stem for --out (arena -> arena.md, arena.csv, charts/arena-time.png, ...).
    #[arg(long, default_value = "arena")]
    name: String,
    /// Model this build instead of the running one (prediction only makes sense then).
    #[command(flatten)]
    allocator: AllocatorArgs,
}

/// Predicts, measures (unless `model_only`), and returns both.
pub fn run_scenario(
    spec: ArenaSpec,
    runs: usize,
    model_only: bool,
    allocator: Option<&AllocatorArgs>,
) -> Result<ArenaResult> {
    spec.validate()?;
    let config = match allocator {
        Some(a) if a.preset.is_some() || a.lg_quantum.is_some() || a.lg_page.is_some() => {
            a.config()?
        }
        _ => LiveBuild::read()?.config()?,
    };
    let classes = crate::sizeclass::SizeClasses::new(config)?;
    let (std_header, bump_header) = header_bytes();
    let predictions = predict(&classes, &spec, std_header, bump_header)?;
    let measurements = if model_only {
        Vec::new()
    } else {
        measure(&spec, runs)?
    };
    let decay_ms = match (
        crate::live::read_isize("opt.dirty_decay_ms"),
        crate::live::read_isize("opt.muzzy_decay_ms"),
    ) {
        (Ok(dirty), Ok(muzzy)) => Some((dirty, muzzy)),
        _ => None,
    };
    Ok(ArenaResult {
        spec,
        model: config.label(),
        predictions,
        measurements,
        decay_ms,
    })
}

/// Writes `<stem>.md`, `<stem>.csv` and the two charts into `dir`; returns the files written.
pub fn write_arena(
    result: &ArenaResult,
    dir: &std::path::Path,
    stem: &str,
    command: &str,
) -> Result<Vec<PathBuf>> {
    if stem.is_empty()
        || !stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        anyhow::bail!("bad name '{stem}': use letters, digits, '-' and '_'");
    }
    std::fs::create_dir_all(dir.join("charts"))
        .with_context(|| format!("cannot create folder '{}'", dir.join("charts").display()))?;
    let md = dir.join(format!("{stem}.md"));
    let csv = dir.join(format!("{stem}.csv"));
    write_atomic(&md, arena_markdown(result, command)?.as_bytes())?;
    write_atomic(&csv, Csv.render(&arena_table(result))?.as_bytes())?;
    let mut written = vec![md, csv];
    if !result.measurements.is_empty() {
        let (time, bytes) = arena_charts(result, stem);
        written.extend(write_chart(&time, &dir.join("charts"))?);
        written.extend(write_chart(&bytes, &dir.join("charts"))?);
    }
    Ok(written)
}

pub fn run(args: ArenaArgs) -> Result<i32> {
    let spec = ArenaSpec {
        vectors: args.vectors,
        elements: args.elements,
        elem_bytes: args.elem_bytes,
    };
    let result = run_scenario(spec, args.runs, args.model_only, Some(&args.allocator))?;
    let mut table = arena_table(&result);
    table.title.clear();
    print!("{}", crate::export::Markdown.render(&table)?);
    if !result.measurements.is_empty() {
        println!();
        for (what, ours, seed) in result.ratios() {
            println!("{what}: {ours:.3} (seed: about {seed:.1})");
        }
    }
    if let Some(dir) = &args.out {
        let command: Vec<String> = std::env::args().skip(1).collect();
        let command = format!("fragsim {}", command.join(" "));
        for path in write_arena(&result, dir, &args.name, &command)? {
            println!("wrote {}", path.display());
        }
    }
    let bad = result.mismatches();
    if !result.measurements.is_empty() && !bad.is_empty() {
        eprintln!("predicted and measured usable bytes differ for: {bad:?}");
        return Ok(1);
    }
    Ok(0)
}
