//! `fragsim replay`: a trace through the arena model (and, with --live, the real jemalloc).

use super::progress::replay_compare;
use super::replay_args::{LiveChildArgs, ReplayArgs};
use crate::analysis::{self, ArenaReplay, ArenaTimeline, TraceSource};
use crate::check::arena_replay::{
    compare_builds, default_live_every, serve_child, LiveAllocator, LiveOptions,
};
use crate::export::{write_atomic, Csv, Table, TableFormat};
use crate::live::Api;
use crate::sim::arena_replay::{default_every, timeline_row};
use crate::sizeclass::{build_name, build_title};
use crate::whatif::timeline_columns;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// What `replay` runs, chosen once from its options: the one place that says which option
/// wins. Each mode turns its options into analyses of one pass over the trace
/// (`crate::analysis`): the one-arena replay, a build per `--preset`, a process model per
/// seed, a setting per grid row, a comparison per live allocator, the blame's two readings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Blame,
    Process,
    Measure,
    LiveBuilds,
    Builds,
    Live,
    Model,
}

impl Mode {
    /// The mode as the user asked for it, for messages.
    fn said(self) -> &'static str {
        match self {
            Mode::Blame => "--blame",
            Mode::Process => "--process",
            Mode::Measure => "--measure",
            Mode::LiveBuilds => "--live with a --preset list",
            Mode::Builds => "a what-if replay (a --preset list, --by-class or --charts)",
            Mode::Live => "--live",
            Mode::Model => "a one-arena replay",
        }
    }

    fn of(args: &ReplayArgs) -> Mode {
        if args.blame.blame {
            Mode::Blame
        } else if args.process.process {
            Mode::Process
        } else if args.measure.wanted() {
            Mode::Measure
        } else if args.live && args.allocator.preset.len() > 1 {
            Mode::LiveBuilds
        } else if super::whatif::wanted(&args.allocator, &args.whatif) {
            Mode::Builds
        } else if args.live {
            Mode::Live
        } else {
            Mode::Model
        }
    }
}

/// The flags that belong to some modes only, whether each was given, and the modes it
/// applies to: the one place that says which flags combine with which mode (the flags clap
/// ties to `--process` or `--blame` themselves are not repeated here).
fn mode_flags(args: &ReplayArgs) -> [(&'static str, bool, &'static [Mode]); 11] {
    use Mode::*;
    [
        ("--measure", args.measure.wanted(), &[Measure]),
        ("--live", args.live, &[Live, LiveBuilds, Process]),
        (
            "--timeline",
            args.timeline.is_some(),
            &[Model, Builds, Process],
        ),
        (
            "--every",
            args.every.is_some(),
            &[Model, Builds, Live, LiveBuilds, Process, Measure],
        ),
        ("--by-class", args.whatif.by_class, &[Builds]),
        ("--charts", args.whatif.charts.is_some(), &[Builds, Measure]),
        (
            "--malloc-conf",
            !args.process.malloc_conf.is_empty(),
            &[Process, Blame],
        ),
        ("--cpus", args.process.cpus.is_some(), &[Process, Blame]),
        (
            "--vaddr-bits",
            args.process.vaddr_bits.is_some(),
            &[Process],
        ),
        ("--per-arena", args.process.per_arena.is_some(), &[Process]),
        (
            "--stats-json",
            args.process.stats_json.is_some(),
            &[Process],
        ),
    ]
}

/// A mode-specific flag given to a mode it does not apply to, as a one-line refusal naming
/// both and where the flag does apply.
fn refuse_other_modes(args: &ReplayArgs, mode: Mode) -> Result<()> {
    if mode == Mode::Blame && args.process.process {
        bail!("--blame runs the process model itself: drop --process");
    }
    if args.live && args.process.vaddr_bits.is_some() {
        bail!(
            "--vaddr-bits does not apply with --live: the live allocator's own start is measured"
        );
    }
    for (flag, given, modes) in mode_flags(args) {
        if given && !modes.contains(&mode) {
            let applies: Vec<&str> = modes.iter().map(|m| m.said()).collect();
            bail!(
                "{flag} does not apply to {} (it applies to {})",
                mode.said(),
                applies.join(", ")
            );
        }
    }
    Ok(())
}

pub fn run(args: ReplayArgs) -> Result<i32> {
    let mode = Mode::of(&args);
    refuse_other_modes(&args, mode)?;
    refuse_options(&args)?;
    let name = trace_name(&args.trace);
    match mode {
        Mode::Blame => super::blame::run(&args),
        Mode::Process => super::process::run(&args),
        Mode::Measure => super::measure::run(&args),
        Mode::LiveBuilds => run_live_builds(&args),
        Mode::Builds => {
            if args.disable_large_size_classes.is_some() {
                bail!("--disable-large-size-classes takes one build, not a --preset list or --by-class/--charts");
            }
            let builds = super::whatif::builds_from(&args.allocator)?;
            super::whatif::run(
                &args.trace,
                &builds,
                &args.whatif,
                &args.output,
                args.every,
                args.timeline.as_deref(),
            )
        }
        Mode::Live => run_live(&args, &name),
        Mode::Model => run_model(&args, &name),
    }
}

/// Options that do not apply are refused, not ignored; outputs never overwrite the trace.
fn refuse_options(args: &ReplayArgs) -> Result<()> {
    if args.every == Some(0) {
        bail!("--every 0: give a positive number of events");
    }
    if args.whatif.top.is_some()
        && !args.whatif.by_class
        && args.whatif.charts.is_none()
        && !args.blame.blame
    {
        bail!("--top applies to --by-class, --charts and --blame only");
    }
    if args.live && args.timeline.is_some() && !args.process.honour_clock {
        bail!("--timeline does not apply to --live (a live replay writes no timeline)");
    }
    if let Some(timeline) = &args.timeline {
        let summary_on_stdout = args
            .output
            .out
            .as_deref()
            .is_none_or(super::args::is_stdout);
        if summary_on_stdout && super::args::is_stdout(timeline) {
            bail!(
                "--timeline '{}' is standard output, where the summary goes: give the summary --out FILE or the timeline a file",
                timeline.display()
            );
        }
    }
    super::stats_json::check(args)?;
    super::args::refuse_outputs_over_inputs(
        &[("the trace", &args.trace)],
        &[
            ("--timeline", args.timeline.as_deref()),
            ("--out", args.output.out.as_deref()),
            ("--per-arena", args.process.per_arena.as_deref()),
            ("--folded", args.blame.folded.as_deref()),
            ("--flamegraph", args.blame.flamegraph.as_deref()),
            ("--pprof", args.blame.pprof.as_deref()),
            ("--speedscope", args.blame.speedscope.as_deref()),
            ("--chart", args.process.chart.as_deref()),
            ("--stats-json", args.process.stats_json.as_deref()),
        ],
    )?;
    Ok(())
}

/// The trace's file stem, the name tables and titles use.
fn trace_name(trace: &Path) -> String {
    trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string())
}

/// One build through the model, one analysis in one pass: the summary, and the timeline if
/// asked.
fn run_model(args: &ReplayArgs, name: &str) -> Result<i32> {
    // The default is the linked jemalloc's build, as for every command.
    let mut config = args.allocator.config()?;
    if let Some(v) = args.disable_large_size_classes {
        config.large_page_rounding = v;
    }
    let every = match args.every {
        Some(k) => k,
        None => default_every(TraceSource::File(&args.trace).calls()?),
    };
    let title = format!("replay of {name} on the model of {}", build_title(&config));
    let replay = ArenaReplay::new(config, every, args.timeline.is_some(), title)?;
    let finding = analysis::run(TraceSource::File(&args.trace), vec![Box::new(replay)])?.remove(0);
    let summary = finding.summary.clone();
    let found: ArenaTimeline = finding.result().context("the replay's finding")?;
    if let Some(path) = &args.timeline {
        let build = build_name(&config);
        let mut timeline = Table::new(
            format!("timeline of {name}, {}", build_title(&config)),
            &timeline_columns(),
        );
        for s in &found.rows {
            let mut row = vec![build.as_str().into()];
            row.extend(timeline_row(s));
            timeline.push(row);
        }
        write_atomic(path, Csv.render(&timeline)?.as_bytes())?;
    }
    args.output.emit_summary(&summary)?;
    Ok(0)
}

fn run_live(args: &ReplayArgs, name: &str) -> Result<i32> {
    let allocator = match (&args.system_jemalloc, args.disable_large_size_classes) {
        (Some(_), Some(_)) => {
            bail!("--disable-large-size-classes cannot be set for a system jemalloc")
        }
        (Some(lib), None) => LiveAllocator::System(lib.clone()),
        (None, Some(v)) => LiveAllocator::LinkedWith(v),
        (None, None) => LiveAllocator::Linked,
    };
    let calls = TraceSource::File(&args.trace).calls()?;
    let options = LiveOptions {
        every: args.every.unwrap_or_else(|| default_live_every(calls)),
        allocator,
        child_exe: Some(std::env::current_exe().context("the fragsim executable")?),
        keep: 5,
    };
    // Build flags must describe the live allocator: checked before a long replay where the
    // linked jemalloc is the one (a system library is known only from its child).
    if args.system_jemalloc.is_none() {
        let mut linked = Api::linked().config()?;
        if let Some(v) = args.disable_large_size_classes {
            linked.large_page_rounding = v;
        }
        check_build_flags(args, &linked)?;
    }
    let result = replay_compare(args.trace.as_path(), &options)?;
    check_build_flags(args, &result.config)?;
    let c = &result.comparison;
    let title = format!(
        "{name}: model vs live {}, every {} events",
        build_title(&result.config),
        options.every
    );
    args.output
        .emit_comparison(&c.summary(title, result.final_stats.events), c)
}

/// The live allocator that runs `build`'s model, or why none on this machine does: the
/// linked 5.3.1 (in process, or in a child for the other `disable_large_size_classes`), or
/// Debian's 5.3.0 preloaded in a child; other builds (another quantum or page size) have no
/// live jemalloc here.
fn live_allocator_for(
    build: &crate::whatif::Build,
    linked: &crate::sizeclass::AllocatorConfig,
) -> Result<LiveAllocator> {
    let mut other_rounding = *linked;
    other_rounding.large_page_rounding = !linked.large_page_rounding;
    if build.config == *linked {
        return Ok(LiveAllocator::Linked);
    }
    if build.config == other_rounding {
        return Ok(LiveAllocator::LinkedWith(build.config.large_page_rounding));
    }
    if build.config == crate::sizeclass::Preset::V5_3_0.config() {
        let lib = Path::new(crate::validate::DEBIAN_JEMALLOC);
        if lib.exists() {
            return Ok(LiveAllocator::System(lib.to_path_buf()));
        }
        bail!(
            "build '{}' (jemalloc 5.3.0) runs live only with Debian's libjemalloc2 at {}, which is not installed",
            build.name,
            lib.display()
        );
    }
    bail!(
        "no live jemalloc runs build '{}' ({}): the linked jemalloc is {} and Debian's is 5.3.0 with the default classes",
        build.name,
        build_title(&build.config),
        build_title(linked)
    )
}

/// `--preset a,b --live`: each build against the live allocator that runs it (all refused
/// up front when one cannot run), one row per build.
fn run_live_builds(args: &ReplayArgs) -> Result<i32> {
    if args.system_jemalloc.is_some() || args.disable_large_size_classes.is_some() {
        bail!("--system-jemalloc and --disable-large-size-classes pick one live allocator: with a --preset list each build picks its own");
    }
    if args.whatif.by_class || args.whatif.charts.is_some() {
        bail!("--live compares builds with the live allocator; --by-class, --charts and --top are views of a replay without --live");
    }
    let builds = super::whatif::builds_from(&args.allocator)?;
    let linked = Api::linked().config()?;
    let allocators = builds
        .iter()
        .map(|b| live_allocator_for(b, &linked))
        .collect::<Result<Vec<_>>>()?;
    let name = trace_name(&args.trace);
    let calls = TraceSource::File(&args.trace).calls()?;
    let every = args.every.unwrap_or_else(|| default_live_every(calls));
    let mut table = Table::new(
        format!(
            "{name}: each build's model vs the live jemalloc that runs it, every {every} events"
        ),
        &[
            "build",
            "live_jemalloc",
            "events",
            "snapshots_compared",
            "values_compared",
            "values_mismatched",
        ],
    );
    let options = LiveOptions {
        every,
        allocator: LiveAllocator::Linked,
        child_exe: Some(std::env::current_exe().context("the fragsim executable")?),
        keep: 5,
    };
    let named: Vec<_> = builds
        .iter()
        .map(|b| b.name.clone())
        .zip(allocators)
        .collect();
    let results = compare_builds(args.trace.as_path(), &named, &options)?;
    let mut mismatches = Vec::new();
    for (build, result) in builds.iter().zip(&results) {
        if result.config != build.config {
            bail!(
                "build '{}': the live allocator turned out to be {}",
                build.name,
                build_title(&result.config)
            );
        }
        let c = &result.comparison;
        table.push(vec![
            build.name.as_str().into(),
            build_title(&result.config).into(),
            result.final_stats.events.into(),
            c.snapshots.into(),
            c.values.into(),
            c.mismatched_values.into(),
        ]);
        for m in &c.first {
            mismatches.push(format!("mismatch: build '{}' {m}", build.name));
        }
    }
    args.output.emit(&table)?;
    for m in &mismatches {
        super::output::print_error(m);
    }
    Ok(if mismatches.is_empty() { 0 } else { 1 })
}

fn check_build_flags(args: &ReplayArgs, live: &crate::sizeclass::AllocatorConfig) -> Result<()> {
    if let Some(mut explicit) = args.allocator.explicit_config()? {
        if let Some(v) = args.disable_large_size_classes {
            explicit.large_page_rounding = v;
        }
        // The whole build, release included: the model of 5.3.0 is not the model of 5.3.1.
        if explicit != *live {
            bail!(
                "the build flags describe {} but the live jemalloc is {}: drop them under --live",
                build_title(&explicit),
                build_title(live)
            );
        }
    }
    Ok(())
}

/// Hidden: the child side of a live replay (the trace file opened here, snapshots to stdout).
#[derive(Args, Debug)]
pub(crate) struct ChildArgs {
    #[command(flatten)]
    pub live: LiveChildArgs,
    /// The trace (any form `trace::open` reads).
    pub trace: PathBuf,
}

pub(crate) fn run_child(args: ChildArgs) -> Result<i32> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let api = if args.live.system {
        Api::system()?
    } else {
        Api::linked()
    };
    serve_child(&args.trace, args.live.every, api, &mut out)?;
    Ok(0)
}
