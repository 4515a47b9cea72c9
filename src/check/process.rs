//! Live baton replay of a whole process: one real thread per trace thread, all created
//! before the first event, each call run on its thread strictly in trace order, in a child
//! process (`fragsim __process-live-child`) whose jemalloc runs with thread caches on and
//! decay off. The child prints the statistics every K events; the parent runs the
//! [`crate::process::Process`] model beside it and compares.
//!
//! Keeping the replayer out of the comparison: before Rust's `main` (an `.init_array`
//! constructor, when `FRAGSIM_PROCESS_CHILD` is set) the child's main thread creates a
//! manual arena, turns its own cache off and moves to that arena (design note). Its
//! start-up, its tables, `pthread_create`'s allocations and its output then touch no
//! automatic arena; the cache block jemalloc allocated for it in arena 0 at that first call
//! is freed, and moving away leaves arena 0 with no thread, which purges it to retained
//! (`arena_migrate`), so arena 0 is as a fresh one. Workers are raw pthreads that allocate
//! nothing but the trace's calls. `stats.allocated`/`stats.active` are read and the manual
//! arena's share subtracted.

use super::arena_replay::parse_config;
pub use super::process_child::{run_process_child, ProcessChildOptions};
pub(super) use super::process_line::parse_snapshot;
use super::process_trace::ProcessInput;
use crate::analysis::{self, Analysis, Finding, TraceSource};
use crate::engine::RunError;
use crate::process::{
    compare_snapshots, DumpAt, Process, ProcessOptions, ProcessSnapshot, StartupResidue, StatsView,
};
use crate::progress::Progress;
use crate::sim::Comparison;
use crate::sizeclass::AllocatorConfig;
use crate::trace::Record;
use anyhow::{bail, ensure, Context, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

/// Which jemalloc a live process replay drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessAllocator {
    /// The linked 5.3.1, in a child with `experimental_tcache_gc:false` and decay off.
    Linked,
    /// A system jemalloc (e.g. Debian's 5.3.0), preloaded into the child.
    System(std::path::PathBuf),
}

/// A model-versus-live process run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProcessLiveComparison {
    pub version: String,
    /// The live build as titles name it: `jemalloc 5.3.0`, or a deployed build's preset with
    /// its release (`redis (jemalloc 5.3.0)`).
    pub build: String,
    pub narenas: u32,
    pub threads: usize,
    pub events: u64,
    pub comparison: Comparison,
    /// The largest active bytes read from the live child and predicted by the model beside
    /// it, over the events compared (the replayer's start-up residue included in both).
    pub peak_active_measured: u64,
    pub peak_active_predicted: u64,
    /// Large bytes the child's start-up left live in arena 0 (modelled as such).
    pub residue_bytes: u64,
    /// The last comparison's totals and the largest resident difference (boxed: kept
    /// beside other outcomes).
    pub totals: Box<LiveTotals>,
    /// The statistics dumps, when [`LiveRun::dump`] asked for them.
    #[serde(skip)]
    pub dumps: Option<Box<StatsDumps>>,
}

/// The model's statistics and the live jemalloc's own JSON dump (`malloc_stats_print` with
/// opts `J`, as it printed it), at the same event. The live dump counts the replayer's own
/// manual arena (its main thread's: in `stats`, `merged` and its own entry), which the
/// model leaves out; both count the dump's buffer.
#[derive(Clone, Debug)]
pub struct StatsDumps {
    pub model: StatsView,
    pub live: String,
}

/// A live process comparison's totals.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct LiveTotals {
    /// The last comparison's totals, model and live (`stats.allocated`, `active`,
    /// `metadata`, `resident`, `mapped`; arenas left out).
    pub last_predicted: ProcessSnapshot,
    pub last_measured: ProcessSnapshot,
    /// The largest |model - live| `stats.resident` over the comparisons, and its event.
    pub worst_resident: (u64, u64),
    /// The trace's reentrant calls, which the child replays with flags (see
    /// [`crate::process::ReentrantTally`]).
    pub reentrant: crate::process::ReentrantTally,
}

/// Replays the trace through the process model and a live child side by side (the model an
/// engine consumer reading the child's snapshots), comparing every `every` events and after
/// the last. `exe` is the fragsim executable.
pub fn compare_process_live<'a>(
    exe: &Path,
    allocator: &ProcessAllocator,
    trace: impl Into<TraceSource<'a>>,
    options: &ProcessOptions,
    every: u64,
    keep: usize,
) -> Result<ProcessLiveComparison> {
    let run = LiveRun {
        every,
        keep,
        dump: None,
    };
    compare_process_live_with(exe, allocator, trace, options, run, &Progress::default())
}

/// How often a live process comparison compares, and how many first mismatches it keeps.
#[derive(Clone, Copy, Debug)]
pub struct LiveRun {
    pub every: u64,
    pub keep: usize,
    /// When both sides dump their statistics (the model and jemalloc's `malloc_stats_print`).
    pub dump: Option<DumpAt>,
}

/// [`compare_process_live`], telling `progress` of the records replayed (one step, "records").
pub(crate) fn compare_process_live_with<'a>(
    exe: &Path,
    allocator: &ProcessAllocator,
    trace: impl Into<TraceSource<'a>>,
    options: &ProcessOptions,
    run: LiveRun,
    progress: &Progress,
) -> Result<ProcessLiveComparison> {
    let trace = trace.into();
    progress.start("events", trace.calls()?);
    let result = compare_observed(exe, allocator, trace, options, run, progress);
    progress.finish();
    result
}

fn compare_observed(
    exe: &Path,
    allocator: &ProcessAllocator,
    trace: TraceSource<'_>,
    options: &ProcessOptions,
    run: LiveRun,
    progress: &Progress,
) -> Result<ProcessLiveComparison> {
    // The exact comparison runs the deterministic cache GC in the child and in the model;
    // the clock-driven one is compared approximately, on the trace's clock (--honour-clock).
    ensure!(
        options.experimental_tcache_gc != Some(true),
        "experimental_tcache_gc:true runs on a 10 ms wall clock and cannot be compared event by event: compare it on the trace's clock with --honour-clock"
    );
    // Opened first: a bad trace is refused before the child starts.
    let records = trace.replay_records()?;
    let input = trace.child_args()?;
    let mut command = child_command(exe, allocator, options)?;
    without_aslr(&mut command);
    command.args(["--every", &run.every.max(1).to_string()]);
    match run.dump {
        Some(DumpAt::Event(n)) => command.args(["--dump-at", &n.to_string()]),
        Some(DumpAt::End) => command.args(["--dump-at", "end"]),
        None => &mut command,
    };
    input.add_to(&mut command);
    let mut child = spawn_piped(exe, &mut command)?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let header = match read_header(&mut lines) {
        Ok(header) => header,
        Err(e) => {
            // The child may be blocked writing snapshots nobody reads: close its output and
            // stop it before reading its error output to the end.
            drop(lines);
            let _ = child.kill();
            let err = stderr_of(&mut child);
            let _ = child.wait();
            bail!("{e}: {}", err.trim());
        }
    };
    let compare = ProcessCompare::new(header, options, lines, run, child)?;
    let findings = analysis::run_stream(records, vec![Box::new(compare)], &|n| progress.advance(n))
        .map_err(|e| match e {
            RunError::Trace(e) => anyhow::Error::from(e),
            RunError::Consumer(e) => e,
        })?;
    findings
        .into_iter()
        .next()
        .and_then(|f| f.result::<ProcessLiveComparison>())
        .context("the live process comparison's finding")
}

/// `jemalloc VERSION` for a release's own defaults, `PRESET (jemalloc VERSION)` for another
/// named build, `LABEL (jemalloc VERSION)` for any other.
fn live_build_title(config: &AllocatorConfig) -> String {
    let version = config.version.as_str();
    match crate::sizeclass::build_name(config) {
        name if name == "default" || name == version => format!("jemalloc {version}"),
        _ => crate::sizeclass::build_title(config),
    }
}

/// Runs the child with its addresses not randomised (`personality(ADDR_NO_RANDOMIZE)`, as
/// `setarch -R`), where the system allows it. The radix tree's leaves follow where the kernel
/// maps the heap (one leaf per 1 GiB region its extents end in); the model places mappings
/// from the child's lowest worker stack down, which holes left above it can make wrong by
/// a few MiB: with random addresses a mapping then crossed a 1 GiB boundary on one side only
/// in about one run of 40 (a 20,000-event threaded trace). Fixed addresses make a
/// comparison repeatable: it passes or fails the same way every time.
fn without_aslr(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: personality is async-signal-safe and only changes this (forked) process's
    // execution domain; a failure leaves addresses random.
    unsafe {
        command.pre_exec(|| {
            let current = libc::personality(0xffff_ffff);
            if current != -1 {
                libc::personality((current | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong);
            }
            Ok(())
        });
    }
}

/// Starts the fragsim child `command` (`exe`) with its output piped back, stopped with the
/// parent if the run is interrupted.
pub(super) fn spawn_piped(
    exe: &Path,
    command: &mut Command,
) -> Result<crate::cleanup::GuardedChild> {
    crate::cleanup::GuardedChild::spawn(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .with_context(|| format!("cannot start '{}'", exe.display()))
}

fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// The process child's header: its build, `narenas`, and what its start-up left in arena 0.
pub(super) struct ChildHeader {
    pub config: AllocatorConfig,
    pub narenas: u32,
    /// What start-up left live (the model's `replayer_start_with`).
    pub residue: StartupResidue,
}

type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;

/// Reads and checks the header's three lines (`error ...` if the child refused the trace).
pub(super) fn read_header(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
) -> Result<ChildHeader> {
    let mut next = || -> Result<String> {
        match lines.next() {
            Some(l) => Ok(l?),
            None => bail!("the live process child printed nothing"),
        }
    };
    let (first, second, third) = (next(), next(), next());
    let (first, second, third) = (first?, second?, third?);
    parse_header(&first, &second, &third)
}

/// The header from its three lines.
pub(super) fn parse_header(first: &str, second: &str, third: &str) -> Result<ChildHeader> {
    if let Some(err) = first.strip_prefix("error ") {
        bail!("live process replay: {err}");
    }
    let config = parse_config(first)?;
    let narenas: u32 = second
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("bad child header '{second}'"))?;
    let base: Vec<u64> = third
        .split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse().ok())
        .collect();
    let (residue, small, huge_residue) = match base[..] {
        [residue, small] => (residue, small, 0),
        [residue, small, huge] => (residue, small, huge),
        _ => bail!("bad child header '{third}'"),
    };
    // One small region (one object: libstdc++'s pool) is modelled; more is not.
    let classes = crate::sizeclass::SizeClasses::new(config).map_err(anyhow::Error::from)?;
    ensure!(
        small == 0 || (small <= classes.small_maxclass() && classes.usable_size(small) == Some(small)),
        "the live child's start-up left {small} small bytes in arena 0, not one small region (not modelled)"
    );
    Ok(ChildHeader {
        config,
        narenas,
        residue: StartupResidue {
            large: residue,
            small,
            huge: huge_residue,
        },
    })
}

/// The process model beside the live child, compared at every `every`-th record (calls and
/// thread exits) and after the last: one engine consumer.
struct ProcessCompare {
    model: Process,
    lines: Lines,
    every: u64,
    keep: usize,
    records: u64,
    threads: usize,
    comparison: Comparison,
    peak_active_predicted: u64,
    peak_active_measured: u64,
    last: (ProcessSnapshot, ProcessSnapshot),
    worst_resident: (u64, u64),
    dump: Option<DumpAt>,
    dumps: Option<Box<StatsDumps>>,
    header: ChildHeader,
    child: crate::cleanup::GuardedChild,
}

/// The comparison as an analysis: its finding's result is the [`ProcessLiveComparison`]
/// (after the child has exited well), its summary the comparison's named fields.
impl Analysis for ProcessCompare {
    fn finish(mut self: Box<Self>) -> Result<Finding> {
        self.end()?;
        if let (Some(DumpAt::Event(n)), None) = (self.dump, &self.dumps) {
            bail!("--at {n}: the trace has {} events", self.records);
        }
        let status = self.child.wait()?;
        if !status.success() {
            let err = stderr_of(&mut self.child);
            bail!("the live process child failed: {}", err.trim());
        }
        let result = self.result();
        let title = format!("process model vs live {}", result.build);
        let summary = result.comparison.summary(title, result.events);
        Ok(Finding::new(summary, result))
    }

    fn record(&mut self, record: &Record) -> Result<()> {
        // The recorded program's mappings are not where the live child's memory lies (the
        // model starts from the child's own addresses): left out of both.
        if let Record::Mapping { .. } = record {
            return Ok(());
        }
        if let Record::Call(call) = record {
            self.threads = self.threads.max(call.thread as usize + 1);
        }
        self.step(record)
    }
}

impl ProcessCompare {
    fn new(
        header: ChildHeader,
        options: &ProcessOptions,
        lines: Lines,
        run: LiveRun,
        child: crate::cleanup::GuardedChild,
    ) -> Result<Self> {
        let mut model_options = options.clone();
        model_options.narenas = Some(header.narenas);
        model_options.experimental_tcache_gc = Some(false);
        let mut model = Process::new(header.config, model_options, 1)?;
        let mut lines = lines;
        let meta = lines
            .next()
            .context("the live process child stopped before its meta line")??;
        model.set_metadata(super::baton_meta::parse_meta(&meta)?);
        model.replayer_start_with(header.residue)?;
        Ok(ProcessCompare {
            model,
            lines,
            every: run.every.max(1),
            keep: run.keep,
            records: 0,
            threads: 0,
            comparison: Comparison::default(),
            peak_active_predicted: 0,
            peak_active_measured: 0,
            last: Default::default(),
            worst_resident: (0, 0),
            dump: run.dump,
            dumps: None,
            header,
            child,
        })
    }

    fn step(&mut self, record: &Record) -> Result<()> {
        self.model.apply(record)?;
        self.records += 1;
        // The child dumps before its snapshot of the same event: the model too.
        if self.dump == Some(DumpAt::Event(self.records)) {
            self.dump_both()?;
        }
        if self.records.is_multiple_of(self.every) {
            self.compare()?;
        }
        Ok(())
    }

    fn compare(&mut self) -> Result<()> {
        let line = self
            .lines
            .next()
            .context("the live process child stopped early")??;
        let (mut predicted, measured) = (self.model.snapshot(), parse_snapshot(&line)?);
        // The trace's manual arenas (`MALLOCX_ARENA`) are in the totals only: the child's
        // have other indices (its own manual arena comes first).
        let automatic = self.model.narenas() + u32::from(self.model.huge_arena().is_some());
        predicted.arenas.retain(|a| a.index < automatic);
        self.peak_active_predicted = self.peak_active_predicted.max(predicted.active_bytes);
        self.peak_active_measured = self.peak_active_measured.max(measured.active_bytes);
        compare_snapshots(&predicted, &measured, self.keep, &mut self.comparison);
        let off = predicted.resident_bytes.abs_diff(measured.resident_bytes);
        if off > self.worst_resident.0 || self.worst_resident == (0, 0) {
            self.worst_resident = (off, measured.event);
        }
        let totals = |s: ProcessSnapshot| ProcessSnapshot {
            arenas: Vec::new(),
            ..s
        };
        self.last = (totals(predicted), totals(measured));
        Ok(())
    }

    /// The comparison after the last record, if it fell between two, then a dump at the end.
    fn end(&mut self) -> Result<()> {
        if !self.records.is_multiple_of(self.every) {
            self.compare()?;
        }
        if self.dump == Some(DumpAt::End) {
            self.dump_both()?;
        }
        Ok(())
    }

    /// The model's dump (its buffer allocated and freed, as the child's) and the child's.
    fn dump_both(&mut self) -> Result<()> {
        let model = self.model.malloc_stats_print()?;
        let line = self
            .lines
            .next()
            .context("the live process child stopped before its statistics dump")??;
        if let Some(err) = line.strip_prefix("error ") {
            bail!("live process replay: {err}");
        }
        let live = line
            .strip_prefix("j ")
            .with_context(|| format!("bad statistics line from the child: '{line:.80}'"))?;
        self.dumps = Some(Box::new(StatsDumps {
            model,
            live: live.to_string(),
        }));
        Ok(())
    }

    fn result(self) -> ProcessLiveComparison {
        let header = &self.header;
        ProcessLiveComparison {
            version: header.config.version.as_str().to_string(),
            build: live_build_title(&header.config),
            narenas: header.narenas,
            threads: self.threads,
            events: self.records,
            comparison: self.comparison,
            peak_active_measured: self.peak_active_measured,
            peak_active_predicted: self.peak_active_predicted,
            residue_bytes: header.residue.in_arena0(),
            totals: Box::new(LiveTotals {
                last_predicted: self.last.0,
                last_measured: self.last.1,
                worst_resident: self.worst_resident,
                reentrant: self.model.reentrant_tally(),
            }),
            dumps: self.dumps,
        }
    }
}

/// The process child under `allocator`, its `MALLOC_CONF` from `options` (decay included):
/// the caller adds its own arguments.
pub(super) fn child_command(
    exe: &Path,
    allocator: &ProcessAllocator,
    options: &ProcessOptions,
) -> Result<Command> {
    let mut command = Command::new(exe);
    command.arg("__process-live-child");
    match allocator {
        ProcessAllocator::Linked => {
            command.env("FRAGSIM_PROCESS_CHILD", "linked").env(
                "_RJEM_MALLOC_CONF",
                options.to_conf(crate::sizeclass::JemallocVersion::V5_3_1),
            );
        }
        ProcessAllocator::System(lib) => {
            ensure!(lib.is_file(), "no jemalloc library at '{}'", lib.display());
            command
                .arg("--system")
                .env("FRAGSIM_PROCESS_CHILD", "system")
                .env("LD_PRELOAD", lib)
                .env(
                    "MALLOC_CONF",
                    options.to_conf(crate::sizeclass::JemallocVersion::V5_3_0),
                );
        }
    }
    Ok(command)
}
