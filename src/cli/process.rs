//! `fragsim replay TRACE --process`: the whole-process model (thread caches, automatic and
//! huge arenas, threads), and with `--live` the baton replay in a child beside it.

use super::replay::ReplayArgs;
use crate::export::{write_atomic, Cell, Csv, Table, TableFormat};
use crate::live::process::{compare_process_live, ProcessAllocator};
use crate::live::replay::Api;
use crate::process::{machine_cpus, DecayClock, Process, ProcessOptions, ProcessSummary};
use crate::sizeclass::{AllocatorConfig, JemallocVersion};
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
    /// With --process or --blame: jemalloc options, `k:v,...` (tcache, tcache_max,
    /// lg_tcache_nslots_mul, tcache_nslots_small_min/max, tcache_nslots_large, narenas,
    /// oversize_threshold, dirty_decay_ms, muzzy_decay_ms, experimental_tcache_gc). Decay is
    /// off (-1) unless given; above 0 it runs on the trace's clock (the trace needs times).
    #[arg(long, default_value = "")]
    pub malloc_conf: String,
    /// With --process and decay: the seed of the model's random numbers (jemalloc draws them
    /// from addresses: the ticks' spacing, the epochs' jitter, the coarse clock's phase).
    #[arg(long, requires = "process", default_value_t = 0)]
    pub seed: u64,
    /// With --process: model runs over seeds seed..seed+N (the summary gives min, mean and
    /// max); with --live --honour-clock also the number of live runs.
    #[arg(long, requires = "process", default_value_t = 1)]
    pub runs: u64,
    /// With --process: multiply the trace's times by this factor (stretch a short trace).
    #[arg(long, requires = "process", default_value_t = 1.0)]
    pub time_scale: f64,
    /// With --process --live: replay on the trace's clock (sleep to each event's time), with
    /// the decay options in the child, N (--runs) times; compare resident memory at every
    /// --every K events with the model's mean over N seeds. --timeline then writes the
    /// checkpoints (model and live band), --chart a PNG of resident over time.
    #[arg(long, requires = "live")]
    pub honour_clock: bool,
    /// With --honour-clock: a PNG chart of resident over time (model, live band, active).
    #[arg(long, requires = "honour_clock")]
    pub chart: Option<PathBuf>,
    /// With --process or --blame: CPUs for the default `narenas` (4 x CPUs); default: this machine's.
    #[arg(long)]
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
    if flags.runs == 0 {
        bail!("--runs 0: give at least one run");
    }
    if !(flags.time_scale.is_finite() && flags.time_scale > 0.0) {
        bail!("--time-scale {}: give a positive factor", flags.time_scale);
    }
    let mut records = load_records(&args.trace)?;
    if flags.time_scale != 1.0 {
        crate::process::scale_times(&mut records, flags.time_scale);
    }
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
    if args.live && flags.honour_clock {
        return super::decay::run_live_clock(args, &records, &options, &name);
    }
    if args.live {
        return run_live(args, &records, &options, &name, threads);
    }
    let (config, model_options, note) = model_setup(args, &options)?;
    let cpus = flags.cpus.unwrap_or_else(machine_cpus);
    let every = args
        .every
        .unwrap_or_else(|| crate::sim::replay::default_every(records.len() as u64));
    let want_rows = flags.per_arena.is_some() || args.timeline.is_some();
    let mut runs = Vec::new();
    for k in 0..flags.runs {
        let clock = DecayClock {
            seed: flags.seed.wrapping_add(k),
            resolution_ns: coarse_clock_ns(),
            start_ns: 0,
        };
        let first = k == 0 && want_rows;
        runs.push(model_run(
            &records,
            config,
            &model_options,
            cpus,
            clock,
            every,
            first,
            &name,
        )?);
    }
    let (summary, per_arena, timeline, narenas, block) = &runs[0];
    if let Some(path) = &flags.per_arena {
        write_atomic(path, Csv.render(per_arena)?.as_bytes())?;
    }
    if let Some(path) = &args.timeline {
        write_atomic(path, Csv.render(timeline)?.as_bytes())?;
    }
    let mode = if threads > 1 {
        format!("process model, {threads} threads")
    } else {
        "process model, one thread".into()
    };
    let decay = if options.needs_clock() || options.dirty_decay_ms == 0 {
        format!(
            ", dirty_decay_ms:{} muzzy_decay_ms:{}, seed {}{}",
            options.dirty_decay_ms,
            options.muzzy_decay_ms,
            flags.seed,
            if flags.runs > 1 {
                format!(" (+{} more)", flags.runs - 1)
            } else {
                String::new()
            }
        )
    } else {
        String::new()
    };
    let mut t = Table::new(
        format!(
            "replay of {name}: {mode}, {}, {narenas} arenas{decay}{note}",
            config.label(),
        ),
        &["statistic", "value"],
    );
    let p = &summary.at_active_peak;
    let mut rows: Vec<(String, Cell)> = vec![
        ("events".into(), summary.final_stats.events.into()),
        ("threads".into(), u64::from(threads).into()),
        (
            "automatic arenas (narenas)".into(),
            u64::from(*narenas).into(),
        ),
        ("thread cache block bytes".into(), (*block).into()),
        (
            "peak requested bytes".into(),
            summary.peak_requested_bytes.into(),
        ),
        (
            "peak allocated bytes".into(),
            summary.peak_allocated_bytes.into(),
        ),
        ("peak active bytes".into(), summary.peak_active_bytes.into()),
        ("event of the active peak".into(), p.events.into()),
        (
            "thread cache bytes at the active peak".into(),
            p.tcache_bytes.into(),
        ),
        (
            "mean active bytes".into(),
            Cell::Float(summary.mean_active_bytes(), 1),
        ),
    ];
    let spread = |f: &dyn Fn(&ProcessSummary) -> f64| -> (f64, f64, f64) {
        let v: Vec<f64> = runs.iter().map(|r| f(&r.0)).collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (min, mean, max)
    };
    let resident: [Figure; 2] = [
        ("peak resident bytes", &|s| s.peak_resident_bytes as f64),
        ("mean resident bytes over time", &|s| {
            s.mean_resident_bytes()
        }),
    ];
    for (label, f) in resident {
        if runs.len() > 1 {
            let (min, mean, max) = spread(f);
            rows.push((
                format!("{label} (mean of {} seeds)", runs.len()),
                Cell::Float(mean, 1),
            ));
            rows.push((
                format!("{label} (min-max over seeds)"),
                format!("{min:.0}-{max:.0}").into(),
            ));
        } else {
            rows.push((label.into(), Cell::Float(f(summary), 1)));
        }
    }
    let f = &summary.final_stats;
    rows.extend([
        ("final allocated bytes".into(), f.allocated_bytes.into()),
        ("final active bytes".into(), f.active_bytes.into()),
        ("final thread cache bytes".into(), f.tcache_bytes.into()),
        ("final dirty bytes".into(), f.dirty_bytes.into()),
        ("final muzzy bytes".into(), f.muzzy_bytes.into()),
        ("final retained bytes".into(), f.retained_bytes.into()),
        ("final resident bytes".into(), f.resident_bytes.into()),
    ]);
    for (k, v) in rows {
        t.push(vec![k.into(), v]);
    }
    args.output.emit(&t)?;
    Ok(0)
}

/// This machine's `CLOCK_MONOTONIC_COARSE` resolution (what jemalloc's decay reads).
pub(super) fn coarse_clock_ns() -> u64 {
    crate::process::machine_coarse_clock_ns()
}

type ModelRun = (ProcessSummary, Table, Table, u32, u64);

/// A summary row: its label and how to read it off a run's summary.
type Figure<'a> = (&'a str, &'a dyn Fn(&ProcessSummary) -> f64);

/// One model replay: its summary, the per-arena and timeline tables (filled when `rows`),
/// narenas and the cache block's size.
#[allow(clippy::too_many_arguments)]
fn model_run(
    records: &[Record],
    config: crate::sizeclass::AllocatorConfig,
    options: &ProcessOptions,
    cpus: u32,
    clock: DecayClock,
    every: u64,
    rows: bool,
    name: &str,
) -> Result<ModelRun> {
    let mut model = Process::new(config, options.clone(), cpus)?;
    model.set_decay_clock(clock);
    model.set_metadata(crate::process::Metadata::measured_default());
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
            "time_ns",
            "resident_bytes",
            "dirty_bytes",
            "muzzy_bytes",
            "retained_bytes",
        ],
    );
    let mut summary = ProcessSummary::default();
    let last = records.len() as u64;
    for (i, r) in records.iter().enumerate() {
        model.apply(r)?;
        let s = *model.stats();
        summary.observe(&s);
        let n = i as u64 + 1;
        if rows && (n.is_multiple_of(every) || n == last) {
            for a in model.snapshot().arenas {
                per_arena.push(vec![
                    n.into(),
                    u64::from(a.index).into(),
                    a.allocated_bytes.into(),
                    a.active_bytes.into(),
                    a.tcache_bytes.into(),
                ]);
            }
            timeline.push(
                [
                    n,
                    s.live_objects,
                    s.requested_bytes,
                    s.allocated_bytes,
                    s.active_bytes,
                    s.tcache_bytes,
                    s.time_ns,
                    s.resident_bytes,
                    s.dirty_bytes,
                    s.muzzy_bytes,
                    s.retained_bytes,
                ]
                .into_iter()
                .map(Cell::Int)
                .collect(),
            );
        }
    }
    Ok((
        summary,
        per_arena,
        timeline,
        model.narenas(),
        model.cache_block_bytes(),
    ))
}

/// The build and options the process model runs with (also `--blame`'s): the build flags or
/// the linked jemalloc's, and 5.3.1's deterministic cache GC; `note` says when it was forced.
pub(super) fn model_setup(
    args: &ReplayArgs,
    options: &ProcessOptions,
) -> Result<(AllocatorConfig, ProcessOptions, String)> {
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
    Ok((config, model_options, note))
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
    let every = args
        .every
        .unwrap_or_else(|| crate::live::replay::default_live_every(records.len() as u64));
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
    /// Replay on the clock: one time (ns from the first record) per record, one a line.
    #[arg(long)]
    pub times: Option<PathBuf>,
    pub records: PathBuf,
}

pub fn run_child(args: ChildArgs) -> Result<i32> {
    crate::live::process::run_process_child(
        &args.records,
        args.every,
        args.system,
        args.times.as_deref(),
    )?;
    Ok(0)
}
