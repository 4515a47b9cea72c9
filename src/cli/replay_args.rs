//! `fragsim replay`'s command line: its arguments and the flag groups of each mode (what-if,
//! measure, process, blame), read by `replay.rs`, which picks the mode, and by each mode's
//! file, none of which is imported back here (hyperfine's `cli.rs`: the command, then the
//! code that runs it).

use super::{AllocatorArgs, OutputArgs};
use crate::measure::Allocator;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct ReplayArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// The build to model (default: the linked jemalloc's).
    #[command(flatten)]
    pub allocator: AllocatorArgs,
    /// jemalloc 5.3.1's `disable_large_size_classes` (the linked jemalloc's default: true).
    /// Under --live the real jemalloc runs with it (in a child process if needed).
    #[arg(long)]
    pub disable_large_size_classes: Option<bool>,
    /// Timeline rows (and, with --live, comparisons) every K events; always after the last.
    /// Default: about 1,000 timeline rows; under --live every event up to 10,000 events, then
    /// about 10,000 comparisons, at most 100 events apart (a few seconds per million events;
    /// --every 1 compares every event).
    #[arg(long, allow_negative_numbers = true)]
    pub every: Option<u64>,
    /// Write the timeline CSV here.
    #[arg(long)]
    pub timeline: Option<PathBuf>,
    /// Replay through the real jemalloc too and compare at every K-th event.
    #[arg(long)]
    pub live: bool,
    /// With --live: drive this jemalloc shared library (e.g. Debian's 5.3.0
    /// /usr/lib/x86_64-linux-gnu/libjemalloc.so.2) instead of the linked one.
    #[arg(long, requires = "live")]
    pub system_jemalloc: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub whatif: WhatifArgs,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub process: ProcessFlags,
    #[command(flatten)]
    pub blame: BlameFlags,
}

/// What every live child (one arena, or the process baton) is told: how often to read the
/// statistics and which jemalloc to drive.
#[derive(Args, Debug)]
pub(crate) struct LiveChildArgs {
    /// Compare every K events.
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// Drive the unprefixed jemalloc preloaded into this process, not the linked one.
    #[arg(long)]
    pub system: bool,
}

/// The what-if options of `fragsim replay` (the builds come from `--preset a,b,c`).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct WhatifArgs {
    /// One row per size class the trace used (one build only), most bytes lost first.
    #[arg(long)]
    pub by_class: bool,
    /// With --by-class: only the first N classes.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub top: Option<usize>,
    /// Write the timeline, what-if and per-class charts (PNG and SVG) into DIR.
    #[arg(long, value_name = "DIR")]
    pub charts: Option<PathBuf>,
}

/// `--measure`: which allocators to measure the trace under.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct MeasureArgs {
    /// Measure the trace live under these allocators, one child process each (glibc,
    /// jemalloc, tcmalloc, mimalloc, jemalloc-5.3.1, or all); --every K sets the sampling
    /// (default: about 1,000 samples), --charts DIR writes the resident-bytes chart.
    #[arg(long, value_delimiter = ',', value_name = "ALLOCATORS", value_parser = parse_allocators)]
    pub measure: Vec<Vec<Allocator>>,
}

fn parse_allocators(text: &str) -> Result<Vec<Allocator>, String> {
    if text == "all" {
        return Ok(Allocator::ALL.to_vec());
    }
    text.parse::<Allocator>()
        .map(|a| vec![a])
        .map_err(|e| e.to_string())
}

impl MeasureArgs {
    pub fn wanted(&self) -> bool {
        !self.measure.is_empty()
    }
}

/// The flags `fragsim replay` takes for the process model.
#[derive(Args, Debug, Default)]
pub(crate) struct ProcessFlags {
    /// Model the whole process: thread caches, automatic arenas, the huge arena, threads.
    /// Not the default, even for traces with threads (without it every call replays on one
    /// private arena with no cache, the model `--live` has always checked).
    #[arg(long)]
    pub process: bool,
    /// With --process or --blame: jemalloc options, `k:v,...` (tcache, tcache_max,
    /// lg_tcache_nslots_mul, tcache_nslots_small_min/max, tcache_nslots_large, narenas,
    /// oversize_threshold, dirty_decay_ms, muzzy_decay_ms, experimental_tcache_gc,
    /// background_thread, max_background_threads). Decay is off (-1) unless given; above 0 it
    /// runs on the trace's clock (the trace needs times), background threads too.
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
    /// With --honour-clock: keep the live runs' band and each run's start-up as data (a CSV
    /// that `fragsim view --band` draws, and `fragsim report` compares the model with again:
    /// the report's are in data/decay/).
    #[arg(long, requires = "honour_clock")]
    pub save_band: Option<PathBuf>,
    /// With --process or --blame: CPUs for the default `narenas` (4 x CPUs); default: this machine's.
    #[arg(long, value_parser = super::args::cpus)]
    pub cpus: Option<u32>,
    /// With --process: the address bits the program's jemalloc was built for (`LG_VADDR`:
    /// the shape of its radix tree, part of its metadata and resident bytes), 48 or 57 on
    /// x86-64; default: this machine's. A library keeps the width of the machine it was
    /// built on: Debian's 5.3.0 is a 48-bit build also on a machine with 57.
    #[arg(long, requires = "process", value_parser = super::args::vaddr_bits)]
    pub vaddr_bits: Option<u32>,
    /// With --process: per-arena CSV (`event,arena,allocated_bytes,active_bytes,tcache_bytes`),
    /// one row per arena in use every --every K events and after the last.
    #[arg(long, requires = "process")]
    pub per_arena: Option<PathBuf>,
    /// With --process: route allocations to dedicated arenas, `RULE[;RULE...]`, a rule being
    /// selectors joined by `,` (`site:TEXT` a frame contains, `site:#N`, `size:LO-HI` bytes,
    /// `thread:N`): each rule's objects go to a manual arena of their own (`mallocx` with
    /// `MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE`); prints what each rule saves, cumulatively;
    /// with --live, the routed trace against the real allocator.
    #[arg(long, requires = "process", value_name = "RULES")]
    pub route: Option<String>,
    /// With --route: routed calls keep the thread's cache (`MALLOCX_ARENA(a)` alone).
    #[arg(long, requires = "route")]
    pub route_tcache: bool,
    /// With --process: write the model's statistics at the end (or --at EVENT) as jemalloc's
    /// `malloc_stats_print(.., "J")` JSON: its keys and nesting, only what the model knows
    /// (sizes, pages, bins, large extents, extent sets, bases; no operation counters, times,
    /// mutexes or HPA: docs/process-model.md). Counts the dump's own 64 KiB buffer, as
    /// jemalloc's does. With --live also the live jemalloc's own dump at the same event, in
    /// FILE with the extension `real.json` (it also counts the replayer's own arena).
    #[arg(long, requires = "process", value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
}

/// The flags of `fragsim replay --blame`.
#[derive(Args, Debug, Default)]
pub(crate) struct BlameFlags {
    /// Charge every byte of the process model's active memory to the call sites that hold
    /// it (requested, rounding, the free regions of the slabs they keep), with lines for
    /// thread caches, cache blocks and large padding and a total equal to active bytes.
    /// Takes --malloc-conf, --cpus and the build flags as --process does; --top N (20).
    #[arg(long)]
    pub blame: bool,
    /// With --blame: `peak` (the first event of the active peak, the default), `end`, or an
    /// event number from 1 (calls and thread exits, as --process counts them). With
    /// --stats-json: `end` (the default) or an event number.
    #[arg(long, value_name = "peak|end|EVENT")]
    pub at: Option<String>,
    /// With --blame: write folded stacks of waste bytes (`frame;frame value`, outermost
    /// frame first) for flame graph tools.
    #[arg(long, requires = "blame", value_name = "FILE")]
    pub folded: Option<PathBuf>,
    /// With --blame: write a gzipped pprof profile (`go tool pprof FILE`): one sample type per
    /// kind of bytes (waste, shown first; requested, rounding, empty_regions, pinned, held)
    /// and objects, one sample per line of the blame.
    #[arg(long, requires = "blame", value_name = "FILE")]
    pub pprof: Option<PathBuf>,
    /// With --blame: write the same profile in speedscope's JSON format (one profile per kind).
    #[arg(long, requires = "blame", value_name = "FILE")]
    pub speedscope: Option<PathBuf>,
    /// With --blame: the frames a Markdown table shows per site, the first of the program's
    /// own (allocator entry points, libc, libstdc++ and the loader left out); CSV and JSON
    /// give the whole stack.
    #[arg(long, requires = "blame", default_value_t = crate::blame::TABLE_DEPTH, value_name = "N")]
    pub depth: usize,
    /// With --blame: write an SVG flame graph of waste bytes by stack.
    #[arg(long, requires = "blame", value_name = "FILE.svg")]
    pub flamegraph: Option<PathBuf>,
}
