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

pub use super::baton::{run_process_child, serve_process_child};
use super::arena_replay::parse_config;
use crate::process::{
    compare_snapshots, to_text, ArenaSnapshot, Process, ProcessOptions, ProcessSnapshot,
};
use crate::sim::{BinStats, Comparison};
use crate::trace::Record;
use anyhow::{bail, ensure, Context, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

pub(super) fn parse_snapshot(line: &str) -> Result<ProcessSnapshot> {
    if let Some(err) = line.strip_prefix("error ") {
        bail!("live process replay: {err}");
    }
    let mut it = line
        .strip_prefix("s ")
        .with_context(|| format!("bad snapshot line from the child: '{line}'"))?
        .split(' ')
        .map(|t| t.parse::<u64>().context("bad number from the child"));
    let mut next = || it.next().context("short snapshot line")?;
    let mut s = ProcessSnapshot {
        event: next()?,
        allocated_bytes: next()?,
        active_bytes: next()?,
        arenas: Vec::new(),
    };
    for _ in 0..next()? {
        let mut a = ArenaSnapshot {
            index: next()? as u32,
            allocated_bytes: next()?,
            active_bytes: next()?,
            tcache_bytes: next()?,
            bins: Vec::new(),
        };
        for _ in 0..next()? {
            a.bins.push(BinStats {
                curregs: next()?,
                curslabs: next()?,
                nonfull_slabs: next()?,
            });
        }
        s.arenas.push(a);
    }
    Ok(s)
}

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
}

/// Replays `records` through the process model and a live child side by side, comparing
/// every `every` events and after the last. `exe` is the fragsim executable.
pub fn compare_process_live(
    exe: &Path,
    allocator: &ProcessAllocator,
    records: &[Record],
    options: &ProcessOptions,
    every: u64,
    keep: usize,
) -> Result<ProcessLiveComparison> {
    // The exact comparison runs the deterministic cache GC in the child and in the model;
    // the clock-driven one is compared approximately, on the trace's clock (--honour-clock).
    ensure!(
        options.experimental_tcache_gc != Some(true),
        "experimental_tcache_gc:true runs on a 10 ms wall clock and cannot be compared event by event: compare it on the trace's clock with --honour-clock"
    );
    let mut input = tempfile::NamedTempFile::new().context("temporary record file")?;
    input.write_all(to_text(records).as_bytes())?;
    input.flush()?;
    let mut command = child_command(exe, allocator, options)?;
    command
        .args(["--every", &every.max(1).to_string()])
        .arg(input.path());
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start '{}'", exe.display()))?;
    let _registration = crate::cleanup::stop_on_interrupt(child.id());
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut header = || -> Result<String> {
        match lines.next() {
            Some(l) => Ok(l?),
            None => bail!("the live process child printed nothing"),
        }
    };
    let first = header();
    let second = header();
    let third = header();
    let (first, second, third) = match (first, second, third) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (a, b, c) => {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.wait();
            let e = a.err().or(b.err()).or(c.err());
            bail!(
                "{}: {}",
                e.map_or(String::new(), |e| e.to_string()),
                err.trim()
            );
        }
    };
    if let Some(err) = first.strip_prefix("error ") {
        bail!("live process replay: {err}");
    }
    let config = parse_config(&first)?;
    let narenas: u32 = second
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("bad child header '{second}'"))?;
    let mut model_options = options.clone();
    model_options.narenas = Some(narenas);
    model_options.experimental_tcache_gc = Some(false);
    let base: Vec<u64> = third
        .split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse().ok())
        .collect();
    let [residue, small] = base[..] else {
        bail!("bad child header '{third}'")
    };
    ensure!(
        small == 0,
        "the live child's start-up left {small} small bytes in arena 0 (not modelled)"
    );
    let mut model = Process::new(config, model_options, 1)?;
    model.replayer_start(residue)?;
    let mut comparison = Comparison::default();
    let calls: Vec<&Record> = records
        .iter()
        .filter(|r| !matches!(r, Record::Site { .. }))
        .collect();
    let last = calls.len() as u64;
    let mut threads = 0;
    let (mut peak_active_predicted, mut peak_active_measured) = (0, 0);
    for (i, r) in calls.iter().enumerate() {
        if let Record::Call(c) = r {
            threads = threads.max(c.thread as usize + 1);
        }
        model.apply(r)?;
        let n = i as u64 + 1;
        if n.is_multiple_of(every.max(1)) || n == last {
            let line = lines
                .next()
                .context("the live process child stopped early")??;
            let (predicted, measured) = (model.snapshot(), parse_snapshot(&line)?);
            peak_active_predicted = peak_active_predicted.max(predicted.active_bytes);
            peak_active_measured = peak_active_measured.max(measured.active_bytes);
            compare_snapshots(&predicted, &measured, keep, &mut comparison);
        }
    }
    let status = child.wait()?;
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        bail!("the live process child failed: {}", err.trim());
    }
    Ok(ProcessLiveComparison {
        version: config.version.as_str().to_string(),
        narenas,
        threads,
        events: last,
        comparison,
        peak_active_measured,
        peak_active_predicted,
        residue_bytes: residue,
    })
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
