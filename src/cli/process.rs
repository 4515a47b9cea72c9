//! `fragsim replay TRACE --process`: the whole-process model (thread caches, automatic and
//! huge arenas, threads), and with `--live` the baton replay in a child beside it.

use super::replay_args::{ProcessFlags, ReplayArgs};
use crate::analysis::process::{ProcessModel, ProcessModelRun};
use crate::analysis::{self, Analysis, TraceSource};
use crate::check::process::{compare_process_live_with, LiveRun, ProcessAllocator};
use crate::export::{write_atomic, Cell, Csv, Summary, TableFormat};
use crate::live::Api;
use crate::process::{
    machine_cpus, DecayClock, DumpAt, ModelSetup, ProcessOptions, ProcessRows, ProcessRun,
    ProcessRunResult, ReentrantTally,
};
use crate::sizeclass::AllocatorConfig;
use anyhow::{bail, Context, Result};
use std::path::Path;

pub fn run(args: &ReplayArgs) -> Result<i32> {
    let flags = &args.process;
    let options = ProcessOptions::parse(&flags.malloc_conf)?;
    if flags.runs == 0 {
        bail!("--runs 0: give at least one run");
    }
    if !(flags.time_scale.is_finite() && flags.time_scale > 0.0) {
        bail!("--time-scale {}: give a positive factor", flags.time_scale);
    }
    let name = args
        .trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string());
    if let Some(rules) = &flags.route {
        return super::route::run(args, rules, &options, &name);
    }
    if args.live {
        // Both sides stream the file: the model here, the child reading it itself.
        let trace = TraceSource::File(&args.trace).scaled(flags.time_scale);
        if flags.honour_clock {
            return super::clock_compare::run_live_clock(args, trace, &options, &name);
        }
        return run_live(args, trace, &options, &name);
    }
    // The model alone streams the trace (one counting pass, then one engine pass), so its
    // memory follows live objects, never the trace's length.
    let source = TraceSource::File(&args.trace);
    let shape = source.shape()?;
    let (last, threads) = (shape.events, shape.threads);
    let dump = super::stats_json::dump_at(args)?;
    super::stats_json::check_event(dump, last)?;
    let (config, model_options, note) = model_setup(args, &options)?;
    let runs = model_runs(args, source, last, (config, dump), &model_options, &name)?;
    let first = &runs[0];
    if let (Some(path), Some(view)) = (&flags.stats_json, &first.stats) {
        super::stats_json::write_model(path, view)?;
    }
    if let Some(rows) = &first.rows {
        if let Some(path) = &flags.per_arena {
            write_atomic(path, Csv.render(&rows.per_arena)?.as_bytes())?;
        }
        if let Some(path) = &args.timeline {
            write_atomic(path, Csv.render(&rows.timeline)?.as_bytes())?;
        }
    }
    let title = format!(
        "replay of {name}: {}. {}, {}, {} arenas{}{note}",
        first.summary.headline(),
        capitalized(&mode(threads)),
        crate::sizeclass::build_title(&config),
        first.narenas,
        decay_note(&model_options, flags)
    );
    let mut record = crate::analysis::process::summary_of(title, threads, &runs);
    if let Some(note) = model_options.background_note() {
        record.field("background_threads", "background threads", Cell::Text(note));
    }
    args.output.emit_summary(&record)?;
    Ok(0)
}

fn mode(threads: u32) -> String {
    if threads > 1 {
        format!("process model, {threads} threads")
    } else {
        "process model, one thread".into()
    }
}

/// The title's decay settings and seeds, when decay runs (or purges at once).
fn decay_note(options: &ProcessOptions, flags: &ProcessFlags) -> String {
    if !(options.needs_clock() || options.dirty_decay_ms == 0) {
        return String::new();
    }
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
}

/// The model runs over seeds `seed..seed+runs`, one analysis each in one pass (in
/// parallel); the first fills the per-arena and timeline rows when they are asked for.
pub(super) fn model_runs(
    args: &ReplayArgs,
    source: TraceSource<'_>,
    last: u64,
    (config, dump): (AllocatorConfig, Option<DumpAt>),
    options: &ProcessOptions,
    name: &str,
) -> Result<Vec<ProcessRunResult>> {
    let flags = &args.process;
    let cpus = flags.cpus.unwrap_or_else(machine_cpus);
    let every = args
        .every
        .unwrap_or_else(|| crate::sim::arena_replay::default_every(last));
    let want_rows = flags.per_arena.is_some() || args.timeline.is_some();
    let analyses = (0..flags.runs)
        .map(|k| {
            let clock = DecayClock {
                seed: flags.seed.wrapping_add(k),
                resolution_ns: coarse_clock_ns(),
                start_ns: 0,
            };
            let rows = (k == 0 && want_rows).then(|| ProcessRows::new(name));
            let mut run = ProcessRun::new(config, options, cpus, clock, every, rows)?;
            if let Some(bits) = flags.vaddr_bits {
                run.set_vaddr_bits(bits);
            }
            // The first run (seed) dumps its statistics when asked.
            let model = match dump {
                Some(DumpAt::Event(n)) if k == 0 => ProcessModel::new(run.dump_at(n)),
                Some(DumpAt::End) if k == 0 => ProcessModel::new(run).dump_at_end(),
                _ => ProcessModel::new(run),
            };
            Ok(Box::new(model) as Box<dyn Analysis>)
        })
        .collect::<Result<Vec<_>, crate::process::ProcessError>>()?;
    analysis::run(source.scaled(flags.time_scale), analyses)?
        .into_iter()
        .map(|f| {
            f.result::<ProcessModelRun>()
                .map(|m| m.run)
                .context("a process model's finding")
        })
        .collect()
}

/// This machine's `CLOCK_MONOTONIC_COARSE` resolution (what jemalloc's decay reads).
pub(super) fn coarse_clock_ns() -> u64 {
    crate::process::machine_coarse_clock_ns()
}

/// The build and options the process model runs with (also `--blame`'s): the build flags; else
/// the allocator the recording says its program ran with (its build, and its options under
/// `--malloc-conf`'s); else the linked jemalloc's. 5.3.1's deterministic cache GC unless asked
/// for the clock's. `note` says which, for the title.
pub(super) fn model_setup(
    args: &ReplayArgs,
    options: &ProcessOptions,
) -> Result<(AllocatorConfig, ProcessOptions, String)> {
    let explicit = args.allocator.explicit_config()?;
    let ModelSetup {
        mut config,
        options: model_options,
        note,
        ..
    } = setup_for(
        &args.trace,
        explicit,
        &args.process.malloc_conf,
        options,
        args.process.cpus.is_some(),
    )?;
    if let Some(v) = args.disable_large_size_classes {
        config.large_page_rounding = v;
    }
    Ok((config, model_options, note))
}

/// The build and options to model `trace` with ([`ModelSetup::for_trace`], the recording's
/// allocator read from the trace's header).
pub(super) fn setup_for(
    trace: &Path,
    explicit: Option<AllocatorConfig>,
    malloc_conf: &str,
    options: &ProcessOptions,
    cpus_given: bool,
) -> Result<ModelSetup> {
    let recorded = match explicit {
        Some(_) => None,
        None => crate::trace::open(trace)?.meta.and_then(|m| m.allocator),
    };
    ModelSetup::for_trace(
        explicit,
        recorded.as_deref(),
        || Api::linked().config(),
        malloc_conf,
        options,
        cpus_given,
    )
}

/// What every `--process --live` replay (with or without the trace's clock) runs: the live
/// jemalloc's own build (a preset or build flag is refused), `--cpus`' arenas, the allocator
/// and this executable to start as the child.
pub(super) struct LiveSetup {
    pub options: ProcessOptions,
    pub allocator: ProcessAllocator,
    pub exe: std::path::PathBuf,
}

pub(super) fn live_setup(args: &ReplayArgs, options: &ProcessOptions) -> Result<LiveSetup> {
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
    Ok(LiveSetup {
        options,
        allocator,
        exe,
    })
}

pub(super) fn run_live(
    args: &ReplayArgs,
    trace: TraceSource<'_>,
    options: &ProcessOptions,
    name: &str,
) -> Result<i32> {
    let LiveSetup {
        options,
        allocator,
        exe,
    } = live_setup(args, options)?;
    let shape = trace.shape()?;
    let every = args
        .every
        .unwrap_or_else(|| crate::check::arena_replay::default_live_every(shape.events));
    let threads = shape.threads;
    let dump = super::stats_json::dump_at(args)?;
    if let (Some(DumpAt::Event(_)), Some(path)) = (dump, trace.path()) {
        super::stats_json::check_event(dump, TraceSource::File(path).shape()?.events)?;
    }
    let bar = super::progress::later_bar("live replay");
    let run = LiveRun {
        every,
        keep: 5,
        dump,
    };
    let r = compare_process_live_with(&exe, &allocator, trace, &options, run, &bar)?;
    if let (Some(path), Some(dumps)) = (&args.process.stats_json, &r.dumps) {
        super::stats_json::write_both(path, dumps)?;
    }
    let c = &r.comparison;
    let title = format!(
        "{name}: process model vs live {} ({} threads, {} arenas, baton replay), every {every} events",
        r.build, threads.max(1), r.narenas
    );
    let mut record = c.summary(title, r.events);
    let (p, m) = (&r.totals.last_predicted, &r.totals.last_measured);
    for (key, label, model, live) in [
        (
            "metadata",
            "stats.metadata",
            p.metadata_bytes,
            m.metadata_bytes,
        ),
        (
            "resident",
            "stats.resident",
            p.resident_bytes,
            m.resident_bytes,
        ),
        ("mapped", "stats.mapped", p.mapped_bytes, m.mapped_bytes),
    ] {
        record
            .field(
                &format!("final_{key}_model"),
                &format!("final {label}, model"),
                model,
            )
            .field(
                &format!("final_{key}_live"),
                &format!("final {label}, live"),
                live,
            );
    }
    record.field(
        "worst_resident_difference",
        "largest |model - live| stats.resident over the comparisons",
        r.totals.worst_resident.0,
    );
    reentrant_fields(&mut record, &r.totals.reentrant);
    args.output.emit_comparison(&record, c)
}

/// How the live child replayed the trace's reentrant calls, when it has any: with `mallocx`
/// flags, exact unless a cache GC fell due at one of them (the program's allocator holds it
/// back to the thread's next call, the child's fires it at once).
pub(super) fn reentrant_fields(record: &mut Summary, r: &ReentrantTally) {
    if r.calls == 0 {
        return;
    }
    record.field(
        "reentrant_calls",
        "reentrant calls (replayed live as mallocx: arena 0, no cache)",
        r.calls,
    );
    if let Some(first) = r.first_held {
        record
            .field(
                "reentrant_held_events",
                "of which held a cache GC back (live fires it at once: not event-exact after)",
                r.held_events,
            )
            .field("first_held_event", "first such event", first);
    }
}

/// `Process model, ...` after a sentence's end.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
