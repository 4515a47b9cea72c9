//! Live replay: a trace through the real jemalloc, in a fresh private arena with no thread
//! cache and decay off, its statistics read every K events and compared with the model's
//! ([`crate::sim::Arena`]) at the same events.
//!
//! `opt.disable_large_size_classes` can only be set when jemalloc starts, so a replay for the
//! other setting runs in a child process (`fragsim __replay-live-child`) started with
//! `_RJEM_MALLOC_CONF`; the child streams its snapshots back as text lines.

use super::ctl::read_bool;
use crate::progress::Progress;
use crate::sim::{compare, Arena, ArenaStats, BinStats, Comparison, Snapshot};
use crate::sizeclass::AllocatorConfig;
use crate::trace::Event;
use anyhow::{bail, ensure, Context, Result};
use std::ffi::c_void;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use tikv_jemalloc_sys as sys;

pub use super::ctl::Api;
// The baton (`baton.rs`) reads through these paths.
pub(crate) use super::ctl::{mib, read_mib, MallctlFn};

/// The statistics of one private arena, read by MIB (names resolved once).
struct StatsReader {
    api: Api,
    epoch: Vec<usize>,
    small: Vec<usize>,
    large: Vec<usize>,
    pactive: Vec<usize>,
    /// Per bin: curregs, curslabs, nonfull_slabs.
    bins: Vec<[Vec<usize>; 3]>,
    page: u64,
}

impl StatsReader {
    fn new(api: Api, arena: u32, nbins: usize, page: u64) -> Result<Self> {
        let arena_mib = |name: &str| -> Result<Vec<usize>> {
            let mut m = mib(&api, name)?;
            m[2] = arena as usize;
            Ok(m)
        };
        let bins = (0..nbins)
            .map(|j| {
                let field = |f: &str| -> Result<Vec<usize>> {
                    let mut m = arena_mib(&format!("stats.arenas.0.bins.0.{f}"))?;
                    m[4] = j;
                    Ok(m)
                };
                Ok([
                    field("curregs")?,
                    field("curslabs")?,
                    field("nonfull_slabs")?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(StatsReader {
            api,
            epoch: mib(&api, "epoch")?,
            small: arena_mib("stats.arenas.0.small.allocated")?,
            large: arena_mib("stats.arenas.0.large.allocated")?,
            pactive: arena_mib("stats.arenas.0.pactive")?,
            bins,
            page,
        })
    }

    fn snapshot(&self, event: u64) -> Result<Snapshot> {
        self.api.write_mib_u64(&self.epoch, 1)?;
        let bins = self
            .bins
            .iter()
            .map(|[r, s, n]| {
                Ok(BinStats {
                    curregs: read_mib(&self.api, r)?,
                    curslabs: read_mib(&self.api, s)?,
                    nonfull_slabs: read_mib(&self.api, n)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Snapshot {
            event,
            allocated_bytes: read_mib(&self.api, &self.small)? + read_mib(&self.api, &self.large)?,
            active_bytes: read_mib(&self.api, &self.pactive)? * self.page,
            bins,
        })
    }
}

/// A fresh private arena of the running jemalloc, driven by trace events.
pub struct LiveArena {
    api: Api,
    index: u32,
    flags: i32,
    ptrs: Vec<*mut c_void>,
    aligns: Vec<u64>,
    stats: StatsReader,
    events: u64,
}

impl LiveArena {
    /// Creates the arena in the linked jemalloc and turns its decay off.
    pub fn new() -> Result<Self> {
        Self::with_api(Api::linked())
    }

    /// Creates the arena through `api` and turns its decay off. Fails clearly when the
    /// jemalloc has no statistics.
    pub fn with_api(api: Api) -> Result<Self> {
        if !api.has_stats() {
            bail!("this jemalloc was built without statistics (config.stats is false): a live replay cannot read them");
        }
        let config = api.config()?;
        // SAFETY: arenas.nbins is unsigned; arenas.create returns the new arena's unsigned
        // index; arena.<i>.*_decay_ms take an ssize_t (-1 disables decay).
        let (nbins, index) = unsafe {
            (
                api.read::<u32>("arenas.nbins")? as usize,
                api.read::<u32>("arenas.create")?,
            )
        };
        for key in ["dirty_decay_ms", "muzzy_decay_ms"] {
            unsafe { api.write(&format!("arena.{index}.{key}"), -1isize)? };
        }
        Ok(LiveArena {
            api,
            index,
            flags: sys::MALLOCX_ARENA(index as usize) | sys::MALLOCX_TCACHE_NONE,
            ptrs: Vec::new(),
            aligns: Vec::new(),
            stats: StatsReader::new(api, index, nbins, config.page())?,
            events: 0,
        })
    }

    fn flags_for(&self, align: u64) -> i32 {
        if align > 1 {
            self.flags | align.trailing_zeros() as i32
        } else {
            self.flags
        }
    }

    /// Applies one event; an event the model would reject is rejected here too, before
    /// jemalloc sees it.
    pub fn apply(&mut self, event: Event) -> Result<()> {
        self.events += 1;
        let n = self.events;
        let live =
            |ptrs: &Vec<*mut c_void>, id: u32| ptrs.get(id as usize).is_some_and(|p| !p.is_null());
        match event {
            Event::Alloc { id, size, align } => {
                ensure!(
                    !live(&self.ptrs, id),
                    "event {n}: alloc of id {id}, which is already live"
                );
                ensure!(
                    align <= 1 || align.is_power_of_two(),
                    "event {n}: alignment {align} is not a power of two"
                );
                // SAFETY: size >= 1; flags name our arena.
                let p = unsafe { (self.api.mallocx)(size.max(1) as usize, self.flags_for(align)) };
                ensure!(!p.is_null(), "event {n}: mallocx({size}) failed");
                let i = id as usize;
                if i >= self.ptrs.len() {
                    self.ptrs.resize(i + 1, std::ptr::null_mut());
                    self.aligns.resize(i + 1, 0);
                }
                self.ptrs[i] = p;
                self.aligns[i] = align;
            }
            Event::Free { id } => {
                ensure!(
                    live(&self.ptrs, id),
                    "event {n}: free of id {id}, which is not live"
                );
                let p = std::mem::replace(&mut self.ptrs[id as usize], std::ptr::null_mut());
                // SAFETY: p came from mallocx/rallocx in this arena and is freed once.
                unsafe { (self.api.dallocx)(p, self.flags) };
            }
            Event::Realloc { id, size } => {
                ensure!(
                    live(&self.ptrs, id),
                    "event {n}: realloc of id {id}, which is not live"
                );
                let i = id as usize;
                let flags = self.flags_for(self.aligns[i]);
                // SAFETY: the pointer is live in this arena; size >= 1.
                let p = unsafe { (self.api.rallocx)(self.ptrs[i], size.max(1) as usize, flags) };
                ensure!(!p.is_null(), "event {n}: rallocx({size}) failed");
                self.ptrs[i] = p;
            }
        }
        Ok(())
    }

    /// The arena's statistics now (`epoch`, then `stats.arenas.<a>.*`).
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.stats.snapshot(self.events)
    }
}

impl Drop for LiveArena {
    fn drop(&mut self) {
        for p in self.ptrs.drain(..) {
            if !p.is_null() {
                // SAFETY: every non-null pointer is live in this arena.
                unsafe { (self.api.dallocx)(p, self.flags) };
            }
        }
        // The arena is empty now.
        self.api.call(&format!("arena.{}.destroy", self.index));
    }
}

/// Which jemalloc a live replay drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveAllocator {
    /// The linked jemalloc as this process started it (5.3.1: disable_large_size_classes on).
    Linked,
    /// The linked jemalloc with `disable_large_size_classes` set to this value (in a child
    /// process when it differs from this process's setting).
    LinkedWith(bool),
    /// A jemalloc shared library (e.g. Debian's 5.3.0 `libjemalloc.so.2`) preloaded into a
    /// child process.
    System(std::path::PathBuf),
}

/// How to run a live comparison.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// Compare every `every` events (and after the last).
    pub every: u64,
    pub allocator: LiveAllocator,
    /// The fragsim executable, for the child process (needed unless in process).
    pub child_exe: Option<std::path::PathBuf>,
    /// How many mismatches to keep.
    pub keep: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            every: 1,
            allocator: LiveAllocator::Linked,
            child_exe: None,
            keep: 10,
        }
    }
}

/// Comparisons a live replay makes by default on a long trace: each reads jemalloc's
/// statistics (about 230 µs measured on `python-dict.trace`, against under 1 µs an event), so
/// a long trace is compared at evenly spaced events.
pub const DEFAULT_LIVE_COMPARISONS: u64 = 10_000;

/// The widest default spacing: a comparison at least every 100 events, so a long trace is
/// still checked closely (and costs seconds per million events).
pub const MAX_DEFAULT_LIVE_EVERY: u64 = 100;

/// The default spacing of a live comparison of `events` events: every event up to
/// [`DEFAULT_LIVE_COMPARISONS`] events, then about that many comparisons, at most
/// [`MAX_DEFAULT_LIVE_EVERY`] events apart.
pub fn default_live_every(events: u64) -> u64 {
    events
        .div_ceil(DEFAULT_LIVE_COMPARISONS)
        .clamp(1, MAX_DEFAULT_LIVE_EVERY)
}

/// A model-versus-live run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LiveComparison {
    /// The build the model used (read from the live jemalloc).
    pub config: AllocatorConfig,
    pub comparison: Comparison,
    /// The model's final statistics.
    pub final_stats: ArenaStats,
}

fn is_snapshot_event(event: u64, every: u64, last: u64) -> bool {
    event.is_multiple_of(every.max(1)) || event == last
}

/// Replays `events` through the model and the live jemalloc side by side and compares
/// them every `options.every` events.
pub fn replay_compare(events: &[Event], options: &LiveOptions) -> Result<LiveComparison> {
    replay_compare_with(events, options, &Progress::default())
}

/// [`replay_compare`], telling `progress` of the events replayed (one step, "events").
pub fn replay_compare_with(
    events: &[Event],
    options: &LiveOptions,
    progress: &Progress,
) -> Result<LiveComparison> {
    progress.start("events", events.len() as u64);
    let result = replay_compare_inner(events, options, progress);
    progress.finish();
    result
}

/// Events between two progress reports: often enough for a bar, rare enough to cost nothing.
const PROGRESS_STEP: u64 = 1 << 14;

fn replay_compare_inner(
    events: &[Event],
    options: &LiveOptions,
    progress: &Progress,
) -> Result<LiveComparison> {
    let linked = read_bool("opt.disable_large_size_classes").unwrap_or(false);
    let child = |how: ChildAllocator| -> Result<LiveComparison> {
        let exe = options
            .child_exe
            .as_deref()
            .context("this live replay runs in a child process and needs the fragsim executable")?;
        compare_in_child(exe, how, events, options, progress)
    };
    match &options.allocator {
        LiveAllocator::Linked => compare_in_process(events, options, progress),
        LiveAllocator::LinkedWith(v) if *v == linked => {
            compare_in_process(events, options, progress)
        }
        LiveAllocator::LinkedWith(v) => child(ChildAllocator::Linked(*v)),
        LiveAllocator::System(lib) => child(ChildAllocator::System(lib.clone())),
    }
}

enum ChildAllocator {
    Linked(bool),
    System(std::path::PathBuf),
}

fn compare_in_process(
    events: &[Event],
    options: &LiveOptions,
    progress: &Progress,
) -> Result<LiveComparison> {
    let config = Api::linked().config()?;
    let mut model = Arena::new(config)?;
    let mut live = LiveArena::new()?;
    let last = events.len() as u64;
    let mut tally = Tally::new(options.keep);
    for (i, &e) in events.iter().enumerate() {
        model.apply(e)?;
        live.apply(e)?;
        let n = i as u64 + 1;
        if is_snapshot_event(n, options.every, last) {
            tally.push(model.snapshot(), live.snapshot()?);
        }
        if n.is_multiple_of(PROGRESS_STEP) {
            progress.advance(PROGRESS_STEP);
        }
    }
    progress.advance(last % PROGRESS_STEP);
    let total = tally.finish();
    Ok(LiveComparison {
        config,
        comparison: total,
        final_stats: *model.stats(),
    })
}

/// Snapshots compared in batches as they arrive, so memory stays bounded on long traces.
struct Tally {
    predicted: Vec<Snapshot>,
    measured: Vec<Snapshot>,
    total: Comparison,
    keep: usize,
}

impl Tally {
    const BATCH: usize = 1024;

    fn new(keep: usize) -> Self {
        Tally {
            predicted: Vec::with_capacity(Self::BATCH),
            measured: Vec::with_capacity(Self::BATCH),
            total: Comparison::default(),
            keep,
        }
    }

    fn push(&mut self, predicted: Snapshot, measured: Snapshot) {
        self.predicted.push(predicted);
        self.measured.push(measured);
        if self.predicted.len() >= Self::BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let part = compare(&self.predicted, &self.measured, self.keep);
        merge(&mut self.total, part, self.keep);
        self.predicted.clear();
        self.measured.clear();
    }

    fn finish(mut self) -> Comparison {
        self.flush();
        self.total
    }
}

fn merge(total: &mut Comparison, part: Comparison, keep: usize) {
    total.snapshots += part.snapshots;
    total.values += part.values;
    total.mismatched_snapshots += part.mismatched_snapshots;
    total.mismatched_values += part.mismatched_values;
    for m in part.first {
        if total.first.len() < keep {
            total.first.push(m);
        }
    }
}

/// Writes events in the child's input format: one line each, `a id size align`,
/// `f id`, `r id size`.
fn write_events(events: &[Event], out: &mut impl Write) -> std::io::Result<()> {
    for e in events {
        match *e {
            Event::Alloc { id, size, align } => writeln!(out, "a {id} {size} {align}")?,
            Event::Free { id } => writeln!(out, "f {id}")?,
            Event::Realloc { id, size } => writeln!(out, "r {id} {size}")?,
        }
    }
    Ok(())
}

/// Parses events in the child's line format (blank lines and `#` comments skipped); errors
/// name the line.
pub fn parse_events(text: &str) -> Result<Vec<Event>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| parse_event(l).with_context(|| format!("line {}", i + 1)))
        .collect()
}

fn parse_event(line: &str) -> Result<Event> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| -> Result<u64> {
        f.get(i)
            .context("short line")?
            .parse()
            .with_context(|| format!("bad number in '{line}'"))
    };
    Ok(match f.first().copied() {
        Some("a") => Event::Alloc {
            id: num(1)? as u32,
            size: num(2)?,
            align: num(3)?,
        },
        Some("f") => Event::Free { id: num(1)? as u32 },
        Some("r") => Event::Realloc {
            id: num(1)? as u32,
            size: num(2)?,
        },
        _ => bail!("bad event line '{line}'"),
    })
}

/// The child's side: reads events (the format of `write_events`) from `input`, replays
/// them in a private arena, and prints the build, then one line per snapshot.
pub fn serve_child(input: impl Read, every: u64, api: Api, out: &mut impl Write) -> Result<()> {
    let config = api.config()?;
    writeln!(out, "{}", serde_json::to_string(&config)?)?;
    let events = BufReader::new(input)
        .lines()
        .map(|l| parse_event(&l?))
        .collect::<Result<Vec<_>>>()?;
    let mut live = LiveArena::with_api(api)?;
    let last = events.len() as u64;
    for (i, e) in events.into_iter().enumerate() {
        if let Err(err) = live.apply(e) {
            writeln!(out, "error {err:#}")?;
            return Ok(());
        }
        let n = i as u64 + 1;
        if is_snapshot_event(n, every, last) {
            let s = live.snapshot()?;
            write!(
                out,
                "s {} {} {}",
                s.event, s.allocated_bytes, s.active_bytes
            )?;
            for b in &s.bins {
                write!(out, " {} {} {}", b.curregs, b.curslabs, b.nonfull_slabs)?;
            }
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(())
}

fn parse_snapshot(line: &str) -> Result<Snapshot> {
    if let Some(err) = line.strip_prefix("error ") {
        bail!("live replay: {err}");
    }
    let nums = line
        .strip_prefix("s ")
        .with_context(|| format!("bad snapshot line from the child: '{line}'"))?
        .split(' ')
        .map(|t| t.parse::<u64>().context("bad number from the child"))
        .collect::<Result<Vec<_>>>()?;
    ensure!(
        nums.len() >= 3 && (nums.len() - 3) % 3 == 0,
        "bad snapshot line"
    );
    Ok(Snapshot {
        event: nums[0],
        allocated_bytes: nums[1],
        active_bytes: nums[2],
        bins: nums[3..]
            .chunks(3)
            .map(|c| BinStats {
                curregs: c[0],
                curslabs: c[1],
                nonfull_slabs: c[2],
            })
            .collect(),
    })
}

/// The live-replay child's command line for `how`, reading `events`; and the
/// `disable_large_size_classes` its jemalloc must report (`None`: a system jemalloc, which
/// has its own).
fn child_command(
    exe: &Path,
    how: &ChildAllocator,
    events: &Path,
    every: u64,
) -> Result<(Command, Option<bool>)> {
    let mut command = Command::new(exe);
    command
        .args(["__replay-live-child", "--every", &every.max(1).to_string()])
        .arg(events);
    let expect_rounding = match how {
        ChildAllocator::Linked(v) => {
            command.env(
                "_RJEM_MALLOC_CONF",
                format!("disable_large_size_classes:{v},dirty_decay_ms:-1,muzzy_decay_ms:-1"),
            );
            Some(*v)
        }
        ChildAllocator::System(lib) => {
            ensure!(lib.is_file(), "no jemalloc library at '{}'", lib.display());
            command
                .arg("--system")
                .env("LD_PRELOAD", lib)
                .env("MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1");
            None
        }
    };
    Ok((command, expect_rounding))
}

fn compare_in_child(
    exe: &Path,
    how: ChildAllocator,
    events: &[Event],
    options: &LiveOptions,
    progress: &Progress,
) -> Result<LiveComparison> {
    let mut input = tempfile::NamedTempFile::new().context("temporary event file")?;
    // An interrupt exits without running destructors: remove the event file then too.
    let _remove_input = crate::cleanup::remove_on_interrupt(input.path());
    {
        let mut w = BufWriter::new(input.as_file_mut());
        write_events(events, &mut w)?;
        w.flush()?;
    }
    let (mut command, expect_rounding) = child_command(exe, &how, input.path(), options.every)?;
    // Stopped with the parent if the run is interrupted (Ctrl-C).
    let mut child = crate::cleanup::GuardedChild::spawn(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .with_context(|| format!("cannot start '{}'", exe.display()))?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let header = match lines.next() {
        Some(line) => line?,
        None => {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.wait();
            bail!("the live replay child printed nothing: {}", err.trim());
        }
    };
    let config: AllocatorConfig = parse_config(&header)?;
    if let Some(v) = expect_rounding {
        ensure!(
            config.large_page_rounding == v,
            "the child's jemalloc ignored disable_large_size_classes:{v} (this build has no such option?)"
        );
    }
    let mut model = Arena::new(config)?;
    let last = events.len() as u64;
    let mut tally = Tally::new(options.keep);
    for (i, &e) in events.iter().enumerate() {
        model.apply(e)?;
        let n = i as u64 + 1;
        if is_snapshot_event(n, options.every, last) {
            let line = lines.next().context("the child stopped early")??;
            tally.push(model.snapshot(), parse_snapshot(&line)?);
        }
        if n.is_multiple_of(PROGRESS_STEP) {
            progress.advance(PROGRESS_STEP);
        }
    }
    progress.advance(last % PROGRESS_STEP);
    let total = tally.finish();
    let status = child.wait()?;
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        bail!("the live replay child failed: {}", err.trim());
    }
    Ok(LiveComparison {
        config,
        comparison: total,
        final_stats: *model.stats(),
    })
}

/// The child's header: the build as JSON (`AllocatorConfig`'s serialised form, written from
/// the child's [`Api::config`]), checked as any build is.
pub(crate) fn parse_config(line: &str) -> Result<AllocatorConfig> {
    let config: AllocatorConfig = serde_json::from_str(line).context("child header")?;
    config.validate()?;
    Ok(config)
}

/// One random trace replayed model-versus-live, for `fragsim validate` and the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReplayCheck {
    /// Which live jemalloc: `5.3.1 disable_large_size_classes:true` etc.
    pub allocator: String,
    pub spec: crate::sim::WorkloadSpec,
    pub comparison: Comparison,
}

/// The random traces `fragsim validate` replays: a mix of small and large (up to 24 MiB)
/// allocations, frees in random order, growing and shrinking reallocs, aligned requests;
/// one large-heavy trace. `quick` keeps it to seconds.
pub fn validation_specs(quick: bool) -> Vec<crate::sim::WorkloadSpec> {
    use crate::sim::WorkloadSpec;
    let events = if quick { 20_000 } else { 200_000 };
    vec![
        WorkloadSpec {
            seed: 1,
            events,
            ..WorkloadSpec::default()
        },
        WorkloadSpec {
            seed: 2,
            events,
            target_live: 400,
            large_share: 0.4,
            realloc_share: 0.2,
            ..WorkloadSpec::default()
        },
    ]
}

/// Replays every trace of [`validation_specs`] through the model and the linked jemalloc
/// with both `disable_large_size_classes` settings (the other one in a child process of
/// `exe`, the fragsim executable), every event compared. Also Debian's 5.3.0 when
/// `system_jemalloc` names its library. 0 mismatches everywhere is the pass.
pub fn replay_validation(
    exe: &Path,
    quick: bool,
    system_jemalloc: Option<&Path>,
) -> Result<Vec<ReplayCheck>> {
    let mut allocators = vec![
        (
            "jemalloc 5.3.1 (linked), disable_large_size_classes:true".to_string(),
            LiveAllocator::LinkedWith(true),
        ),
        (
            "jemalloc 5.3.1 (linked), disable_large_size_classes:false".to_string(),
            LiveAllocator::LinkedWith(false),
        ),
    ];
    if let Some(lib) = system_jemalloc {
        allocators.push((
            format!("system jemalloc {}", lib.display()),
            LiveAllocator::System(lib.to_path_buf()),
        ));
    }
    let mut checks = Vec::new();
    for spec in validation_specs(quick) {
        let events = crate::sim::random_trace(&spec);
        for (label, allocator) in &allocators {
            let options = LiveOptions {
                every: 1,
                allocator: allocator.clone(),
                child_exe: Some(exe.to_path_buf()),
                keep: 5,
            };
            let result = replay_compare(&events, &options)?;
            checks.push(ReplayCheck {
                allocator: format!("{label} ({})", result.config.version.as_str()),
                spec,
                comparison: result.comparison,
            });
        }
    }
    Ok(checks)
}

/// The checks as a table: one row per trace and allocator.
pub fn replay_validation_table(checks: &[ReplayCheck]) -> crate::export::Table {
    let mut t = crate::export::Table::new(
        "arena model vs live jemalloc, random traces, every event",
        &[
            "allocator",
            "seed",
            "events",
            "large_share",
            "snapshots",
            "values_compared",
            "values_mismatched",
            "first_mismatch",
        ],
    );
    for c in checks {
        let first = c.comparison.first.first().map_or(String::new(), |m| {
            format!(
                "event {} {}: predicted {}, measured {}",
                m.event, m.statistic, m.predicted, m.measured
            )
        });
        t.push(vec![
            c.allocator.clone().into(),
            c.spec.seed.into(),
            c.spec.events.into(),
            crate::export::Cell::Float(c.spec.large_share, 2),
            c.comparison.snapshots.into(),
            c.comparison.values.into(),
            c.comparison.mismatched_values.into(),
            first.into(),
        ]);
    }
    t
}
