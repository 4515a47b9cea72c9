//! Recording a program natively: run it with the preload library (`preload/`, built by
//! `build.rs` and carried inside the binary, `library`), then convert the raw files it wrote into
//! traces. `raw` reads them, `convert` merges and translates, `sink` writes.

pub(crate) mod convert;
pub(crate) mod library;
mod linked;
pub(crate) mod order;
pub(crate) mod raw;
pub(crate) mod rawdir;
pub(crate) mod reaper;
pub(crate) mod sink;
pub(crate) mod stream;
pub(crate) mod symbols;
pub use order::tsc_order_unsupported_here;
pub use raw::Stacks;

pub(crate) use linked::linked_allocator;

pub(crate) use convert::convert;
pub(crate) use convert::convert_with_progress;
pub use convert::{ConvertSummary, ConvertThreads};
pub(crate) use order::EventOrder;
pub use raw::parse;
pub(crate) use raw::RawProcess;
pub(crate) use sink::TraceSink;

use crate::trace::{Ending, Fields, Record, TraceError};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The library's file name.
pub(crate) const PRELOAD_NAME: &str = "libfragsim_preload.so";

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("FRAGSIM_PRELOAD names '{}', which is not a file (unset it to use the recorder library built into fragsim)", looked.display())]
    PreloadMissing { looked: PathBuf },
    #[error("cannot keep the recorder library in '{}': {why} (set XDG_CACHE_HOME to another folder, or FRAGSIM_PRELOAD to a copy of {PRELOAD_NAME})", path.display())]
    PreloadCache { path: PathBuf, why: String },
    #[error("program '{0}' not found (neither a file nor on PATH)")]
    ProgramMissing(String),
    #[error("cannot run '{program}': {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create a temporary folder beside '{}': {source}", out.display())]
    TempDir {
        out: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{name} is '{value}': expected {expected} (unset it to choose by the machine's cores)"
    )]
    ConvertThreads {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    RawDir(#[from] rawdir::RawDirError),
}

/// How to record.
#[derive(Clone, Debug, Default)]
pub(crate) struct NativeOptions {
    pub stacks: bool,
    pub follow_forks: bool,
    /// Time stamps from the TSC (ns resolution, about 25 ns more per call) instead of
    /// `CLOCK_MONOTONIC_COARSE` (the kernel's tick, 1-4 ms).
    pub precise_times: bool,
    /// How events are ordered across threads ([`EventOrder`]; `Tsc` only where
    /// [`order::tsc_order_unsupported_here`] is `None`).
    pub order: EventOrder,
    /// Keep the raw files here instead of a temporary folder (tests, debugging).
    pub raw_dir: Option<PathBuf>,
}

/// One trace written.
#[derive(Clone, Debug)]
pub struct RecordedTrace {
    pub path: PathBuf,
    pub pid: u64,
    pub bytes: u64,
    pub summary: ConvertSummary,
    /// The process's program and arguments, as the trace says (empty: not known).
    pub command: Vec<String>,
    /// The conversion's CPU time: the converting thread's (merge, ids, sites: the part that
    /// runs in order) and the writing thread's (checks, encoding, output; 0 when written on
    /// the converting thread, [`convert_file_on`]).
    pub convert_cpu_ns: u64,
    pub write_cpu_ns: u64,
}

/// This thread's CPU time so far.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What a recording produced.
#[derive(Debug)]
pub(crate) struct Recorded {
    pub status: ExitStatus,
    /// Wall time from starting the program to its exit.
    pub elapsed: std::time::Duration,
    /// The program's trace first, then its children's (`--follow-forks`) by pid.
    pub traces: Vec<RecordedTrace>,
    /// The program wrote no raw file: the library was not loaded (a static binary, a setuid
    /// program, or one that clears its environment); its trace is empty.
    pub no_effect: bool,
    /// An allocator the program carries itself ([`linked_allocator`]: the symbol and what it
    /// is), whose calls the trace does not hold.
    pub linked_allocator: Option<(&'static str, &'static str)>,
    /// The interrupt signal (Ctrl-C, SIGTERM, SIGHUP) that came while recording: the
    /// recording went on until the program exited.
    pub interrupted: Option<crate::cleanup::Interrupt>,
    /// Every process other than the program that loaded the recorder (its children and
    /// theirs), recorded (`--follow-forks`) or not.
    pub children: Vec<rawdir::ChildProcess>,
}

/// `FRAGSIM_PRELOAD` (a library built by hand, for development), else the library built into
/// this binary, from its cached copy ([`library::cached_library`]).
pub(crate) fn find_preload() -> Result<PathBuf, RecordError> {
    if let Some(p) = std::env::var_os("FRAGSIM_PRELOAD") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(RecordError::PreloadMissing { looked: p })
        };
    }
    library::cached_library()
}

/// `name` itself if it has a slash, else the first file of that name on PATH.
pub(crate) fn find_program(name: &std::ffi::OsStr) -> Option<PathBuf> {
    if name.as_encoded_bytes().contains(&b'/') {
        let path = PathBuf::from(name);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Where a recording is, for a progress display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RecordProgress {
    /// The program has exited: `total` bytes of raw events are to be converted.
    Converting { total: u64 },
    /// That many more bytes were converted.
    Converted(u64),
    /// The program has exited and left these processes running (`--follow-forks`): they
    /// are recorded until they exit too.
    Waiting(Vec<reaper::Running>),
}

/// `LD_PRELOAD` with the recorder first, before what the user preloads already.
fn preload_with(preload: PathBuf) -> std::ffi::OsString {
    let mut var = preload.canonicalize().unwrap_or(preload).into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        var.push(":");
        var.push(old);
    }
    var
}

/// Runs `command` under the recorder and writes its trace to `out` (children's to
/// `out.<pid>`), telling `progress` how the conversion goes. The program's stdin, stdout
/// and stderr are passed through.
pub(crate) fn record_native_with_progress(
    command: &[std::ffi::OsString],
    out: &Path,
    options: &NativeOptions,
    progress: &mut dyn FnMut(RecordProgress),
) -> Result<Recorded, RecordError> {
    let threads = recording_threads()?;
    let preload = find_preload()?;
    let program = command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(program_path) = find_program(command.first().map_or("".as_ref(), |p| p.as_os_str()))
    else {
        return Err(RecordError::ProgramMissing(program));
    };
    let linked_allocator = linked_allocator(&program_path);
    let temp = temp_dir_beside(out)?;
    let _cleanup = crate::cleanup::remove_on_interrupt(temp.path());
    let raw_dir = options.raw_dir.clone().unwrap_or(temp.path().to_path_buf());
    std::fs::create_dir_all(&raw_dir).map_err(|source| RecordError::TempDir {
        out: raw_dir.clone(),
        source,
    })?;
    // The first interrupt reached the program too: recording goes on until it exits. A
    // second one stops, and what the recorder wrote stays for `record --convert`.
    let deferral = crate::cleanup::defer_first_interrupt();
    let canonical = raw_dir.canonicalize().unwrap_or(raw_dir.clone());
    let _keep = crate::cleanup::keep_on_interrupt(&raw_dir, rawdir::kept_note(&canonical, out));
    let raw_dir = canonical;
    let command_line: Vec<String> = command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    rawdir::write_program(&raw_dir, &command_line)?;
    // Before the program starts: its orphans come here, to be waited for.
    let reaper = options.follow_forks.then(reaper::Reaper::adopt).flatten();
    let started = std::time::Instant::now();
    let child = spawn_recorded(command, options, preload, &raw_dir).map_err(|source| {
        RecordError::Spawn {
            program: program.clone(),
            source,
        }
    })?;
    let fields = Fields {
        threads: true,
        times: true,
        sites: options.stacks,
    };
    let pid = child.id() as u64;
    let run = RootRun {
        out,
        fields,
        pid,
        raw_dir: &raw_dir,
        started,
        command: command_line,
        threads,
    };
    let ((status, elapsed), root, children) = run.convert_while_running(child, progress);
    let children = match reaper {
        Some(_) => after_the_last_one(children, &raw_dir, pid, out, progress),
        None => children,
    };
    drop(reaper);
    let status = status.map_err(|source| RecordError::Spawn {
        program: program.clone(),
        source,
    })?;
    let no_effect = !raw_file(&raw_dir, pid).exists();
    let mut traces = vec![root?];
    let noted = rawdir::child_processes(&raw_dir);
    for (child_pid, process, path) in children.unwrap_or_else(|| Ok(Vec::new()))? {
        let raw = raw_file(&raw_dir, child_pid);
        let command = rawdir::command_of(&noted, child_pid);
        traces.push(convert_into(&path, fields, child_pid, command, |sink| {
            let mut read = |bytes| progress(RecordProgress::Converted(bytes));
            convert_with_progress(
                &process,
                &raw.display().to_string(),
                sink,
                &mut read,
                threads,
            )
        })?);
    }
    Ok(Recorded {
        status,
        elapsed,
        traces,
        no_effect,
        linked_allocator,
        interrupted: deferral.interrupted(),
        children: noted,
    })
}

/// With `--follow-forks`, once the program has exited: the processes it left running are
/// waited for (`progress` is told which), and the children's files indexed again then, as
/// they are complete only now.
fn after_the_last_one(
    children: Children,
    raw_dir: &Path,
    pid: u64,
    out: &Path,
    progress: &mut dyn FnMut(RecordProgress),
) -> Children {
    if !matches!(children, Some(Ok(_))) {
        return children;
    }
    let left = reaper::children();
    if left.is_empty() {
        return children;
    }
    progress(RecordProgress::Waiting(left));
    reaper::wait_for_all();
    Some(rawdir::parse_children(raw_dir, pid, out))
}

/// The raw file the recorder writes for process `pid` in `raw_dir`.
fn raw_file(raw_dir: &Path, pid: u64) -> PathBuf {
    raw_dir.join(format!("raw.{pid}"))
}

/// Starts `command` with the recorder preloaded, writing its raw files into `raw_dir`.
fn spawn_recorded(
    command: &[std::ffi::OsString],
    options: &NativeOptions,
    preload: PathBuf,
    raw_dir: &Path,
) -> std::io::Result<crate::cleanup::GuardedChild> {
    crate::cleanup::GuardedChild::spawn(
        Command::new(&command[0])
            .args(&command[1..])
            .env("LD_PRELOAD", preload_with(preload))
            .env("FRAGSIM_PRELOAD_DIR", raw_dir)
            .env("FRAGSIM_PRELOAD_PARENT", std::process::id().to_string())
            .env("FRAGSIM_PRELOAD_FLAGS", preload_flags(options)),
    )
}

/// The program's exit status (or why waiting failed) and its wall time.
type Waited = (std::io::Result<ExitStatus>, std::time::Duration);
/// The children's raw files, indexed, once the program has exited (`None`: it never did
/// while converting, as when the conversion failed first).
type Children = Option<Result<Vec<(u64, RawProcess, PathBuf)>, RecordError>>;

/// What converting the program's own trace while it runs needs.
struct RootRun<'a> {
    out: &'a Path,
    fields: Fields,
    pid: u64,
    raw_dir: &'a Path,
    started: std::time::Instant,
    command: Vec<String>,
    threads: ConvertThreads,
}

impl RootRun<'_> {
    /// Converts the program's trace while it runs (on this thread, another one waits for
    /// the program); its children's files (`--follow-forks`) are indexed once it has exited,
    /// to be converted after.
    fn convert_while_running(
        &self,
        mut child: crate::cleanup::GuardedChild,
        progress: &mut dyn FnMut(RecordProgress),
    ) -> (Waited, Result<RecordedTrace, RecordError>, Children) {
        let pid = self.pid;
        let root_raw = raw_file(self.raw_dir, pid);
        let ended = std::sync::atomic::AtomicBool::new(false);
        let converter = std::thread::current();
        let mut children = None;
        let (waited, root) = std::thread::scope(|scope| {
            // An interrupt a process sent to fragsim alone is passed on while the program
            // runs, and no longer once it is reaped (its pid may be reused).
            let forward = crate::cleanup::forward_interrupt_to(child.id());
            let waiter = scope.spawn(|| {
                let status = child.wait();
                drop(forward);
                let elapsed = self.started.elapsed();
                ended.store(true, std::sync::atomic::Ordering::SeqCst);
                converter.unpark();
                (status, elapsed)
            });
            let root = convert_into(self.out, self.fields, pid, self.command.clone(), |sink| {
                let ended = || ended.load(std::sync::atomic::Ordering::SeqCst);
                // Once the program has exited, the children's files are complete too: the
                // bar covers what is left of the program's and all of theirs.
                let mut tell = |p| match p {
                    RecordProgress::Converting { total } => {
                        let parsed = rawdir::parse_children(self.raw_dir, pid, self.out);
                        let more: u64 = parsed
                            .iter()
                            .flatten()
                            .map(|(_, p, _)| p.event_bytes())
                            .sum();
                        progress(RecordProgress::Converting {
                            total: total + more,
                        });
                        children = Some(parsed);
                    }
                    other => progress(other),
                };
                stream::convert_while_running(&root_raw, sink, &ended, self.threads, &mut tell)
            });
            let waited = waiter
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (waited, root)
        });
        drop(child);
        (waited, root, children)
    }
}

/// A temporary folder beside `out`, so a large recording does not fill /tmp.
fn temp_dir_beside(out: &Path) -> Result<tempfile::TempDir, RecordError> {
    let out_dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".fragsim-record-")
        .tempdir_in(out_dir)
        .map_err(|source| RecordError::TempDir {
            out: out.to_path_buf(),
            source,
        })
}

/// `FRAGSIM_PRELOAD_FLAGS` for `options` (the recorder library reads it).
fn preload_flags(options: &NativeOptions) -> String {
    let mut flags = Vec::new();
    if options.stacks {
        flags.push("stacks");
    }
    if options.follow_forks {
        flags.push("follow");
    }
    if options.precise_times {
        flags.push("tsc");
    }
    match options.order {
        EventOrder::Tsc => flags.push("tscorder"),
        EventOrder::Auto if order::tsc_order_unsupported_here().is_none() => {
            flags.push("autoorder")
        }
        EventOrder::Auto | EventOrder::Seq => {}
    }
    flags.join(",")
}

/// All records of one raw file, in order, with the conversion's summary.
pub fn raw_records(raw: &Path) -> Result<(Vec<Record>, ConvertSummary), TraceError> {
    let process = parse(raw)?;
    let mut records = Vec::new();
    let mut push = |batch: &mut Vec<Record>| {
        records.append(batch);
        Ok(())
    };
    let summary = convert(&process, &raw.display().to_string(), &mut push)?;
    Ok((records, summary))
}

/// Threads a recording's conversion uses beside its converting and writing ones: on a machine
/// of fewer than 4 cores none (the program and those two have them all), else 2 decoders
/// (decoding is about a third of the converting thread's work, and a decoder decodes faster
/// than the merge consumes) and the id thread (the address table, a third of the rest); on 8
/// cores or more also 2 address shards (the address table split off the id thread, which
/// then keeps only the ids: its share of an event's time falls below the merge's).
/// `FRAGSIM_DECODERS=N` (0 to 16), `FRAGSIM_ID_THREAD=0|1` and `FRAGSIM_ADDRESS_SHARDS=N` (0
/// to 16) choose; another value is an error, before the program runs.
pub(crate) fn recording_threads() -> Result<ConvertThreads, RecordError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spare = cores >= 4;
    let env = |name: &'static str, max: usize, expected: &'static str| {
        let Some(value) = std::env::var_os(name) else {
            return Ok(None);
        };
        let value = value.to_string_lossy().into_owned();
        match value.parse::<usize>() {
            Ok(n) if n <= max => Ok(Some(n)),
            _ => Err(RecordError::ConvertThreads {
                name,
                value,
                expected,
            }),
        }
    };
    let decoders = env(
        "FRAGSIM_DECODERS",
        16,
        "a number of decoding threads, 0 to 16",
    )?;
    let ids = env(
        "FRAGSIM_ID_THREAD",
        1,
        "0 (ids on the converting thread) or 1",
    )?;
    let shards = env(
        "FRAGSIM_ADDRESS_SHARDS",
        16,
        "a number of address shard threads, 0 to 16",
    )?;
    Ok(ConvertThreads {
        decoders: decoders.unwrap_or(if spare { 2 } else { 0 }),
        ids: ids.map_or(spare, |n| n == 1),
        shards: shards.unwrap_or(if cores >= 8 { 2 } else { 0 }),
    })
}

/// The threads a conversion on `threads` threads in all uses, added in the order they help:
/// 1 (converting and writing on one thread), 2 (a writing thread beside the converting one),
/// 3 (and the id thread), 4 and 5 (and 1 or 2 decoding ones), 6 or more (and `threads - 5`
/// address shards).
pub fn threads_of_count(threads: u32) -> ConvertThreads {
    ConvertThreads {
        decoders: threads.saturating_sub(3).min(2) as usize,
        ids: threads >= 3,
        shards: threads.saturating_sub(5) as usize,
    }
}

/// Converts the raw file `raw` of process `pid` into the trace `out` on `threads` threads
/// ([`threads_of_count`]), to measure what each one gives.
pub fn convert_file_on(
    raw: &Path,
    out: &Path,
    fields: Fields,
    pid: u64,
    threads: u32,
) -> Result<RecordedTrace, RecordError> {
    let process = parse(raw)?;
    let helpers = threads_of_count(threads);
    let run = |sink: &mut convert::Sink<'_>| {
        let file = raw.display().to_string();
        convert_with_progress(&process, &file, sink, &mut |_| {}, helpers)
    };
    match threads {
        1 => convert_inline(out, fields, pid, run),
        _ => convert_into(out, fields, pid, Vec::new(), run),
    }
}

/// [`convert_into`] with the writing on this thread.
fn convert_inline(
    out: &Path,
    fields: Fields,
    pid: u64,
    run: impl for<'s> FnOnce(&'s mut convert::Sink<'s>) -> Result<ConvertSummary, TraceError>,
) -> Result<RecordedTrace, RecordError> {
    let started = thread_cpu_ns();
    let mut sink = TraceSink::create(out, fields, Vec::new())?;
    let summary = run(&mut |batch: &mut Vec<Record>| {
        for r in batch.iter() {
            sink.write_record(r)?;
        }
        batch.clear();
        Ok(())
    })?;
    sink.finish(ending_of(&summary), summary.allocator.as_deref())?;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(RecordedTrace {
        path: out.to_path_buf(),
        pid,
        bytes,
        summary,
        command: Vec::new(),
        convert_cpu_ns: thread_cpu_ns() - started,
        write_cpu_ns: 0,
    })
}

/// Records ahead of the one being written whose cache lines the writer asks for: the
/// converter wrote them on another core.
const PREFETCH_AHEAD: usize = 24;

#[inline(always)]
fn prefetch(r: &Record) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint, valid for any address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = r as *const Record as *const i8;
        _mm_prefetch(p, _MM_HINT_T0);
        _mm_prefetch(p.add(std::mem::size_of::<Record>() - 1), _MM_HINT_T0);
    }
}

/// Batches in flight (a bound, so a slow disk holds the converter back).
const BATCHES_IN_FLIGHT: usize = 4;

/// What the converting thread tells the writing one.
enum ToWriter {
    Records(Vec<Record>),
    /// Every record is sent: finish the trace, saying how the recording ended. A writer whose
    /// channel closes without this (the conversion failed) drops its unfinished trace, which
    /// leaves nothing behind.
    Finish(Ending, Option<String>),
}

/// Writes the trace `out` of process `pid` from the records `convert` hands its sink.
/// Converts on this thread and writes on another: decoding, merging and the address table
/// take about half of a conversion's time, the writer's checks, encoding and output the
/// other half, so on two cores the trace is ready in about half the time.
fn convert_into(
    out: &Path,
    fields: Fields,
    pid: u64,
    command: Vec<String>,
    run: impl for<'s> FnOnce(&'s mut convert::Sink<'s>) -> Result<ConvertSummary, TraceError>,
) -> Result<RecordedTrace, RecordError> {
    let sink = TraceSink::create(out, fields, command.clone())?;
    let summary = std::thread::scope(|scope| {
        let (to_writer, inbox) = std::sync::mpsc::sync_channel::<ToWriter>(BATCHES_IN_FLIGHT);
        let (give_back, returned) = std::sync::mpsc::channel::<Vec<Record>>();
        let writer = std::thread::Builder::new()
            .name("fragsim-write".into())
            .spawn_scoped(scope, move || -> Result<u64, TraceError> {
                let started = thread_cpu_ns();
                let mut sink = sink;
                for message in inbox {
                    match message {
                        ToWriter::Records(mut batch) => {
                            for (i, r) in batch.iter().enumerate() {
                                if let Some(ahead) = batch.get(i + PREFETCH_AHEAD) {
                                    prefetch(ahead);
                                }
                                sink.write_record(r)?;
                            }
                            batch.clear();
                            // The converter may have finished already: nothing to give back to.
                            let _ = give_back.send(batch);
                        }
                        ToWriter::Finish(ending, allocator) => {
                            sink.finish(ending, allocator.as_deref())?;
                            return Ok(thread_cpu_ns() - started);
                        }
                    }
                }
                Ok(thread_cpu_ns() - started)
            });
        // Without a thread for the writer, nothing can be written.
        let writer = writer.map_err(|source| TraceError::Output {
            path: out.to_path_buf(),
            source,
        })?;
        let writer_gone = || TraceError::Output {
            path: out.to_path_buf(),
            source: std::io::Error::other("the trace writer stopped"),
        };
        // The converter's batch is sent whole and a returned one (emptied by the writer)
        // takes its place.
        let send = |batch: &mut Vec<Record>| {
            let next = returned
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(convert::SINK_BATCH));
            let full = std::mem::replace(batch, next);
            to_writer
                .send(ToWriter::Records(full))
                .map_err(|_| writer_gone())
        };
        let convert_started = thread_cpu_ns();
        let converted = run(&mut |batch: &mut Vec<Record>| send(batch));
        let convert_cpu = thread_cpu_ns() - convert_started;
        let sent = converted.and_then(|summary| {
            to_writer
                .send(ToWriter::Finish(
                    ending_of(&summary),
                    summary.allocator.clone(),
                ))
                .map_err(|_| writer_gone())?;
            Ok(summary)
        });
        drop(to_writer);
        // The writer's own error first: a failed send is only its consequence.
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let write_cpu = written?;
        sent.map(|summary| (summary, convert_cpu, write_cpu))
    })?;
    let (summary, convert_cpu_ns, write_cpu_ns) = summary;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(RecordedTrace {
        path: out.to_path_buf(),
        pid,
        bytes,
        summary,
        command,
        convert_cpu_ns,
        write_cpu_ns,
    })
}

/// How a recording ended, from its conversion: truncated by a signal, killed, whole but for
/// the calls of execs the recorder did not see, or whole.
fn ending_of(summary: &ConvertSummary) -> Ending {
    match (summary.truncated, summary.signal) {
        (false, _) if summary.unseen_execs > 0 => {
            Ending::UnseenExecs(summary.unseen_execs.min(u32::MAX as u64) as u32)
        }
        (false, _) => Ending::Whole,
        (true, Some(signal)) => Ending::Signal(signal as u32),
        (true, None) => Ending::Killed,
    }
}
