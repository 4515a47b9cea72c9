//! `fragsim trace import|dump|stats`: convert, print and summarise allocation traces.

use super::OutputArgs;
use crate::export::{OutputFile, Table};
use crate::trace::{
    histogram_table, import_heaptrack, import_valgrind, read_text_records, stats_table,
    trace_stats_records, write_text_records, Fields, HeaptrackSummary, RecordStream, TraceError,
    TraceHeader, TraceWriter, ValgrindOptions, ValgrindSummary,
};
use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub(crate) struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Subcommand, Debug)]
enum TraceCommand {
    /// Convert a valgrind log, heaptrack's raw output or a text trace into a binary trace.
    Import(ImportArgs),
    /// Print a trace in the text form (`a ID SIZE [ALIGN] [@SITE]`, `f ID`, `r ID SIZE`, and
    /// `t TID`, `T NS`, `s SITE FRAMES`, `x` for threads, times, sites and thread exits, `e`
    /// before a call made inside another allocator call of its thread).
    Dump(DumpArgs),
    /// Counts, live objects, requested bytes (one row per trace), or the size histogram.
    Stats(StatsArgs),
    /// Rewrite a trace of an older version (2 or 3, without checksums) as version 4, whose
    /// header and chunks of events carry checksums (other commands refuse the old versions).
    Upgrade(UpgradeArgs),
}

/// What `trace import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// The output of `valgrind --trace-malloc=yes PROGRAM`.
    Valgrind,
    /// The text form.
    Text,
    /// heaptrack's raw output (`heaptrack -r PROGRAM`, the `.raw.zst` file).
    Heaptrack,
}

#[derive(Args, Debug)]
struct ImportArgs {
    #[arg(long, value_enum)]
    from: ImportFormat,
    /// The input file, or - for standard input.
    input: PathBuf,
    /// The binary trace to write (atomically).
    #[arg(short = 'o', long = "out")]
    out: PathBuf,
    /// valgrind: import only this process's lines (needed when the log has several).
    #[arg(long)]
    pid: Option<u32>,
    /// valgrind: make inconsistent calls (free of an address not live, ...) errors.
    #[arg(long)]
    strict: bool,
    /// Replace an existing -o file that is not a fragsim trace (refused otherwise).
    #[arg(long)]
    force: bool,
}

#[derive(Args, Debug)]
struct DumpArgs {
    trace: PathBuf,
    /// Write the text form to this file (atomically) instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct UpgradeArgs {
    /// The binary trace to read (any version).
    input: PathBuf,
    /// The version 4 trace to write (atomically).
    #[arg(short = 'o', long = "out")]
    out: PathBuf,
    /// Replace an existing -o file that is not a fragsim trace (refused otherwise).
    #[arg(long)]
    force: bool,
}

#[derive(Args, Debug)]
struct StatsArgs {
    /// One or more binary traces.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// Print the size histogram (requests by power of two) instead of the summary.
    #[arg(long)]
    histogram: bool,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(args: TraceArgs) -> Result<i32> {
    match args.command {
        TraceCommand::Import(a) => import(a),
        TraceCommand::Dump(a) => dump(a),
        TraceCommand::Stats(a) => stats(a),
        TraceCommand::Upgrade(a) => upgrade(a),
    }
}

fn upgrade(a: UpgradeArgs) -> Result<i32> {
    super::args::refuse_outputs_over_inputs(&[("the input", &a.input)], &[("-o", Some(&a.out))])?;
    super::args::refuse_replacing_non_trace(&a.out, a.force)?;
    let opened = crate::trace::open_for_upgrade(&a.input)?;
    let old = opened.header.map_or(0, |h| h.version);
    let fields = opened.header.map_or(Fields::NONE, |h| h.fields);
    let mut writer = create_trace_with(&a.out, fields)?;
    for record in opened.records() {
        writer.write_record(&record?)?;
    }
    let header = finish_trace(writer)?;
    super::output::print_error(&format!(
        "upgraded '{}' (version {old}) to version {}: '{}' ({} events)",
        a.input.display(),
        header.version,
        a.out.display(),
        header.events
    ));
    Ok(0)
}

fn open_input(path: &Path) -> Result<(Box<dyn BufRead>, String), TraceError> {
    if path == Path::new("-") {
        return Ok((Box::new(std::io::stdin().lock()), "<stdin>".into()));
    }
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| TraceError::Io {
        file: name.clone(),
        source: e,
    })?;
    Ok((Box::new(BufReader::with_capacity(1 << 16, file)), name))
}

fn import(a: ImportArgs) -> Result<i32> {
    super::args::refuse_outputs_over_inputs(&[("the input", &a.input)], &[("-o", Some(&a.out))])?;
    super::args::refuse_replacing_non_trace(&a.out, a.force)?;
    if a.from != ImportFormat::Valgrind && (a.pid.is_some() || a.strict) {
        anyhow::bail!("--pid and --strict apply to --from valgrind only (text input is always checked strictly)");
    }
    let (input, name) = open_input(&a.input)?;
    let options = ValgrindOptions {
        pid: a.pid,
        strict: a.strict,
    };
    match a.from {
        ImportFormat::Valgrind => {
            let writer = create_trace(&a.out)?;
            let (header, summary) = import_valgrind_file(input, &name, &options, writer)?;
            super::output::print_error(&import_note(&name, &a.out, &header, &summary));
        }
        ImportFormat::Heaptrack => {
            let fields = Fields {
                threads: false,
                times: true,
                sites: true,
            };
            let mut writer = create_trace_with(&a.out, fields)?;
            let summary = import_heaptrack(input, &name, |r| writer.write_record(r))?;
            let header = finish_trace(writer)?;
            let mut note = format!(
                "imported {} events ({} allocs, {} frees; {} call sites, {} ms) from '{name}' into '{}'; {}",
                header.events,
                header.allocs,
                header.frees,
                summary.sites,
                summary.duration_ms,
                a.out.display(),
                HeaptrackSummary::LIMITS
            );
            if summary.issues.total() > 0 {
                note.push_str(&format!("; {}", summary.issues));
            }
            super::output::print_error(&note);
        }
        ImportFormat::Text => {
            // The context a v2 text trace uses decides the binary layout up front: a file is
            // read twice (once for its fields), standard input is held in memory.
            let (fields, records): (Fields, RecordStream) = if a.input == Path::new("-") {
                let records: Vec<_> = read_text_records(input, &name).collect::<Result<_, _>>()?;
                let fields = records
                    .iter()
                    .fold(Fields::NONE, |f, r| f.union(Fields::of(r)));
                (fields, Box::new(records.into_iter().map(Ok)))
            } else {
                let mut scan = read_text_records(input, &name);
                for record in scan.by_ref() {
                    record?;
                }
                let file = File::open(&a.input).map_err(|e| TraceError::io(&name, e))?;
                let reread = read_text_records(BufReader::with_capacity(1 << 16, file), &name);
                (scan.fields(), Box::new(reread))
            };
            let mut writer = create_trace_with(&a.out, fields)?;
            for record in records {
                writer.write_record(&record?)?;
            }
            let header = finish_trace(writer)?;
            super::output::print_error(&format!(
                "imported {} events from '{name}' into '{}'",
                header.events,
                a.out.display()
            ));
        }
    }
    Ok(0)
}

/// Imports a valgrind log into `writer` (from [`create_trace`]); nothing reaches the
/// output on error.
pub(crate) fn import_valgrind_file(
    input: impl BufRead,
    name: &str,
    options: &ValgrindOptions,
    mut writer: TraceWriter<OutputFile>,
) -> Result<(TraceHeader, ValgrindSummary)> {
    let summary = import_valgrind(input, name, options, |e| writer.write(e))?;
    Ok((finish_trace(writer)?, summary))
}

/// A binary trace writer for `path` through the one output writer ([`OutputFile`]): a link
/// is followed, a device or FIFO written through (never replaced), a regular file replaced
/// whole on [`finish_trace`] only.
pub(crate) fn create_trace(path: &Path) -> Result<TraceWriter<OutputFile>> {
    create_trace_with(path, Fields::NONE)
}

/// As [`create_trace`], for records with threads, times or sites (format v2).
pub(crate) fn create_trace_with(path: &Path, fields: Fields) -> Result<TraceWriter<OutputFile>> {
    let out = OutputFile::create(path)?;
    Ok(TraceWriter::named_with(
        out,
        &path.display().to_string(),
        fields,
    )?)
}

/// Finishes a trace from [`create_trace`] and moves it into place.
pub(crate) fn finish_trace(writer: TraceWriter<OutputFile>) -> Result<TraceHeader> {
    let (header, out) = writer.finish_into_inner()?;
    out.commit()?;
    Ok(header)
}

/// The one line an import prints on stderr.
pub(crate) fn import_note(name: &str, out: &Path, h: &TraceHeader, s: &ValgrindSummary) -> String {
    let mut note = format!(
        "imported {} events ({} allocs, {} frees, {} reallocs; peak {} live objects) of PID {} from '{name}' into '{}'",
        h.events, h.allocs, h.frees, h.reallocs, h.peak_live_objects, s.pid, out.display()
    );
    // Anything not imported exactly gets a line of its own, loudly.
    if let Some(losses) = s.losses() {
        note.push_str(&format!(
            "\nwarning: not imported exactly from '{name}': {losses}"
        ));
    }
    note
}

fn dump(a: DumpArgs) -> Result<i32> {
    super::args::refuse_outputs_over_inputs(
        &[("the trace", a.trace.as_path())],
        &[("--out", a.out.as_deref())],
    )?;
    let records = crate::trace::open(&a.trace)?.records();
    if let Some(path) = &a.out {
        let mut out = OutputFile::create(path)?;
        write_text_records(std::io::BufWriter::new(&mut out), records)?;
        out.commit()?;
        return Ok(0);
    }
    match write_text_records(std::io::stdout().lock(), records) {
        Ok(_) => Ok(0),
        // A closed pipe (`| head`): quietly, with 141 as the README promises.
        Err(TraceError::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(super::output::OutputError::Closed.into())
        }
        Err(e) => Err(e.into()),
    }
}

fn stats(a: StatsArgs) -> Result<i32> {
    let inputs: Vec<(&str, &Path)> = a
        .traces
        .iter()
        .map(|t| ("the trace", t.as_path()))
        .collect();
    super::args::refuse_outputs_over_inputs(&inputs, &[("--out", a.output.out.as_deref())])?;
    let mut table: Option<Table> = None;
    for path in &a.traces {
        let name = path.display().to_string();
        let opened = crate::trace::open(path)?;
        let meta = opened.meta.clone();
        let s = trace_stats_records(opened.records())?;
        let one = if a.histogram {
            let mut t = histogram_table(&name, &s);
            t.columns.insert(0, "trace".into());
            for row in &mut t.rows {
                row.insert(0, name.clone().into());
            }
            t
        } else {
            let mut t = stats_table(&name, &s);
            // A recording's command line, ending and the program's jemalloc (`record` writes
            // them; empty otherwise).
            t.columns
                .extend(["command".into(), "recording".into(), "allocator".into()]);
            let (command, ending, allocator) =
                meta.map_or((String::new(), String::new(), String::new()), |m| {
                    let allocator = m
                        .allocator
                        .as_deref()
                        .and_then(crate::process::RecordedAllocator::parse)
                        .map_or(String::new(), |r| {
                            let v = r.version.split('-').next().unwrap_or(&r.version);
                            format!("jemalloc {v} ({})", r.malloc_conf)
                        });
                    (m.command_line(), m.ending.to_string(), allocator)
                });
            t.rows[0].extend([command.into(), ending.into(), allocator.into()]);
            t
        };
        match &mut table {
            None => table = Some(one),
            Some(t) => {
                t.title = if a.histogram {
                    "Request sizes by power of two".into()
                } else {
                    "Trace statistics".into()
                };
                t.rows.extend(one.rows);
            }
        }
    }
    a.output.emit(&table.expect("at least one trace"))?;
    Ok(0)
}

/// The trace at `path`, opened afresh at each call: what the library's `*_stream` functions
/// read (once or twice), so a replay's memory follows live objects, not the trace's length.
pub(super) fn reopen<'a>(
    path: &'a Path,
) -> impl Fn() -> Result<crate::analysis::Records<'a>, TraceError> + 'a {
    move || crate::analysis::TraceSource::File(path).records()
}

/// A streamed run's error, the trace's or the consumer's, as the CLI reports it.
pub(super) fn stream_error<E: Into<anyhow::Error>>(
    e: crate::engine::RunError<E, TraceError>,
) -> anyhow::Error {
    match e {
        crate::engine::RunError::Trace(e) => e.into(),
        crate::engine::RunError::Consumer(e) => e.into(),
    }
}
