//! `fragsim replay TRACE --process`: the whole-process model (thread caches, automatic and
//! huge arenas, threads), and with `--live` the baton replay in a child beside it.

use super::replay::ReplayArgs;
use crate::export::{write_atomic, Cell, Csv, Table, TableFormat};
use crate::live::process::{compare_process_live, ProcessAllocator};
use crate::live::replay::Api;
use crate::process::{machine_cpus, Process, ProcessOptions, ProcessSummary};
use crate::sizeclass::JemallocVersion;
use crate::trace::Record;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// The flags `fragsim replay` takes for the process model.
#[derive(Args, Debug, Default)]
pub struct ProcessFlags {
    /// Model the whole process: thread caches, automatic arenas, the huge arena, threads.
    /// Not the default, even for traces with threads (without it every call replays on one
    /// private arena with no cache, the model `--live` has always checked).
    #[arg(long)]
    pub process: bool,
    /// With --process: jemalloc options, `k:v,...` (tcache, tcache_max,
    /// lg_tcache_nslots_mul, tcache_nslots_small_min/max, tcache_nslots_large, narenas,
    /// oversize_threshold, dirty_decay_ms:-1, muzzy_decay_ms:-1, experimental_tcache_gc).
    #[arg(long, requires = "process", default_value = "")]
    pub malloc_conf: String,
    /// With --process: CPUs for the default `narenas` (4 x CPUs); default: this machine's.
    #[arg(long, requires = "process")]
    pub cpus: Option<u32>,
    /// With --process: per-arena CSV (`event,arena,allocated_bytes,active_bytes,tcache_bytes`),
    /// one row per arena in use every --every K events and after the last.
    #[arg(long, requires = "process")]
    pub per_arena: Option<PathBuf>,
}

/// Reads any trace `fragsim replay` reads (binary v2 with threads, the text form with `t`
/// and `x` lines, valgrind) as records; call sites are dropped (the model has no use).
pub(super) fn load_records(path: &Path) -> Result<Vec<Record>> {
    let records = crate::trace::open(path)?
        .records()
        .collect::<Result<Vec<_>, _>>()?;
    Ok(records
        .into_iter()
        .filter(|r| !matches!(r, Record::Site { .. }))
        .collect())
}

pub fn run(args: &ReplayArgs) -> Result<i32> {
    let flags = &args.process;
    let options = ProcessOptions::parse(&flags.malloc_conf)?;
    let records = load_records(&args.trace)?;
    let name = args
        .trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string());
    let threads = records
        .iter()
        .filter_map(|r| match r {
            Record::Call(c) => Some(c.thread),
            _ => None,
        })
        .max()
        .map_or(0, |t| t + 1);
    if args.live {
        return run_live(args, &records, &options, &name, threads);
    }
    let mut config = match args.allocator.explicit_config()? {
        Some(c) => c,
        None => Api::linked().config()?,
    };
    if let Some(v) = args.disable_large_size_classes {
        config.large_page_rounding = v;
    }
    let mut model_options = options.clone();
    let mut note = String::new();
    if config.version == JemallocVersion::V5_3_1 && options.experimental_tcache_gc != Some(false) {
        // The experimental GC reads a 10 ms wall clock; the model runs the deterministic one.
        model_options.experimental_tcache_gc = Some(false);
        note =
            " (5.3.1's clock-driven cache GC is not modelled: experimental_tcache_gc:false)".into();
    }
    let cpus = flags.cpus.unwrap_or_else(machine_cpus);
    let mut model = Process::new(config, model_options, cpus)?;
    let every = args
        .every
        .unwrap_or_else(|| crate::sim::replay::default_every(records.len() as u64));
    let mut per_arena = Table::new(
        format!("per arena, {name}"),
        &[
            "event",
            "arena",
            "allocated_bytes",
            "active_bytes",
            "tcache_bytes",
        ],
    );
    let mut timeline = Table::new(
        format!("process timeline of {name}"),
        &[
            "event",
            "live_objects",
            "requested_bytes",
            "allocated_bytes",
            "active_bytes",
            "tcache_bytes",
        ],
    );
    let mut summary = ProcessSummary::default();
    let last = records.len() as u64;
    for (i, r) in records.iter().enumerate() {
        model.apply(r)?;
        let s = *model.stats();
        summary.observe(&s);
        let n = i as u64 + 1;
        if n.is_multiple_of(every) || n == last {
            if flags.per_arena.is_some() {
                for a in model.snapshot().arenas {
                    per_arena.push(vec![
                        n.into(),
                        u64::from(a.index).into(),
                        a.allocated_bytes.into(),
                        a.active_bytes.into(),
                        a.tcache_bytes.into(),
                    ]);
                }
            }
            if args.timeline.is_some() {
                timeline.push(
                    [
                        n,
                        s.live_objects,
                        s.requested_bytes,
                        s.allocated_bytes,
                        s.active_bytes,
                        s.tcache_bytes,
                    ]
                    .into_iter()
                    .map(Cell::Int)
                    .collect(),
                );
            }
        }
    }
    if let Some(path) = &flags.per_arena {
        write_atomic(path, Csv.render(&per_arena)?.as_bytes())?;
    }
    if let Some(path) = &args.timeline {
        write_atomic(path, Csv.render(&timeline)?.as_bytes())?;
    }
    let mode = if threads > 1 {
        format!("process model, {threads} threads")
    } else {
        "process model, one thread".into()
    };
    let mut t = Table::new(
        format!(
            "replay of {name}: {mode}, {}, {} arenas{note}",
            config.label(),
            model.narenas()
        ),
        &["statistic", "value"],
    );
    let p = &summary.at_active_peak;
    let rows: Vec<(&str, Cell)> = vec![
        ("events", summary.final_stats.events.into()),
        ("threads", u64::from(threads).into()),
        (
            "automatic arenas (narenas)",
            u64::from(model.narenas()).into(),
        ),
        ("thread cache block bytes", model.cache_block_bytes().into()),
        ("peak requested bytes", summary.peak_requested_bytes.into()),
        ("peak allocated bytes", summary.peak_allocated_bytes.into()),
        ("peak active bytes", summary.peak_active_bytes.into()),
        ("event of the active peak", p.events.into()),
        (
            "thread cache bytes at the active peak",
            p.tcache_bytes.into(),
        ),
        (
            "mean active bytes",
            Cell::Float(summary.mean_active_bytes(), 1),
        ),
        (
            "final allocated bytes",
            summary.final_stats.allocated_bytes.into(),
        ),
        (
            "final active bytes",
            summary.final_stats.active_bytes.into(),
        ),
        (
            "final thread cache bytes",
            summary.final_stats.tcache_bytes.into(),
        ),
    ];
    for (k, v) in rows {
        t.push(vec![k.into(), v]);
    }
    args.output.emit(&t)?;
    Ok(0)
}

fn run_live(
    args: &ReplayArgs,
    records: &[Record],
    options: &ProcessOptions,
    name: &str,
    threads: u32,
) -> Result<i32> {
    if args.allocator.explicit_config()?.is_some() || args.disable_large_size_classes.is_some() {
        bail!("--process --live models the live jemalloc's own build: drop --preset and the build flags");
    }
    let mut options = options.clone();
    if let Some(cpus) = args.process.cpus {
        options
            .narenas
            .get_or_insert(if cpus > 1 { cpus * 4 } else { 1 });
    }
    let allocator = match &args.system_jemalloc {
        Some(lib) => ProcessAllocator::System(lib.clone()),
        None => ProcessAllocator::Linked,
    };
    let exe = std::env::current_exe().context("the fragsim executable")?;
    let every = args.every.unwrap_or(1);
    let r = compare_process_live(&exe, &allocator, records, &options, every, 5)?;
    let c = &r.comparison;
    super::replay::emit_comparison(&args.output, format!(
            "{name}: process model vs live jemalloc {} ({} threads, {} arenas, baton replay), every {every} events",
            r.version, threads.max(1), r.narenas
        ), r.events, c)
}

/// Hidden: the child side of a live process replay.
#[derive(Args, Debug)]
pub struct ChildArgs {
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// Drive the unprefixed jemalloc preloaded into this process.
    #[arg(long)]
    pub system: bool,
    pub records: PathBuf,
}

pub fn run_child(args: ChildArgs) -> Result<i32> {
    crate::live::process::run_process_child(&args.records, args.every, args.system)?;
    Ok(0)
}
