//! The report's "Whole process" section: every committed trace (one thread or several)
//! through the process model (thread caches, automatic arenas, the huge arena) beside the
//! one-arena model, per arena at the process's active peak, and the live check of the
//! process model (the baton replay through the real jemalloc, [`crate::check::process`])
//! with its counts, per trace and jemalloc version.
//! Everything here is deterministic (models, and jemalloc's statistics with decay off), so
//! the files are committed; the options are fixed (8 automatic arenas, what 4 x 2 CPUs gives)
//! so that another machine writes the same files.

use super::{write_table, SectionOutput};
use crate::analysis::arena::OneArena;
use crate::analysis::process::{ProcessModel, ProcessModelRun};
use crate::analysis::{self, Analysis, Finding, TraceSource};
use crate::check::process::{compare_process_live, ProcessAllocator};
use crate::export::{Cell, Summary, Table};
use crate::live::Api;
use crate::process::{DecayClock, ProcessOptions, ProcessRun};
use crate::sizeclass::AllocatorConfig;
use crate::trace::Record;
use anyhow::{Context, Result};
use std::path::Path;

/// The heading of this section in the report index.
pub(crate) const SECTION: &str = "Whole process";

/// The options every run here uses (the live child gets the same, decay off).
pub(crate) const CONF: &str = "narenas:8";

/// Snapshots compared every this many records in the live check.
pub(crate) const LIVE_EVERY: u64 = 16;

/// Debian's jemalloc 5.3.0, checked live beside the linked 5.3.1 when installed.
const DEBIAN_530: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

fn records(path: &Path) -> Result<Vec<Record>> {
    let records = crate::trace::open(path)?
        .records()
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading '{}'", path.display()))?;
    Ok(records
        .into_iter()
        .filter(|r| !matches!(r, Record::Site { .. }))
        .collect())
}

/// The one-arena model and the process model over `records`, one pass
/// ([`crate::analysis`]): a row of the summary for each (the analyses' own field names), and
/// the per-arena rows at the process's active peak.
fn models(
    name: &str,
    records: &[Record],
    config: AllocatorConfig,
    summary: &mut Table,
    per_arena: &mut Table,
) -> Result<()> {
    let mut options = ProcessOptions::parse(CONF)?;
    options.experimental_tcache_gc = Some(false);
    let run = ProcessRun::new(config, &options, 1, DecayClock::default(), u64::MAX, None)?;
    let analyses: Vec<Box<dyn Analysis>> = vec![
        Box::new(OneArena::new(config)?),
        Box::new(ProcessModel::new(run).with_arena_peaks()),
    ];
    let [one, whole]: [Finding; 2] = analysis::run(TraceSource::Records(records), analyses)?
        .try_into()
        .map_err(|_| anyhow::anyhow!("two analyses give two findings"))?;
    let threads = whole
        .summary
        .get("threads")
        .cloned()
        .unwrap_or(Cell::Int(0));
    let row = |model: &str, fields: &Summary, arenas: u64| -> Vec<Cell> {
        let get = |field: &str| fields.get(field).cloned().unwrap_or(Cell::Int(0));
        vec![
            name.into(),
            model.into(),
            threads.clone(),
            get("events"),
            get("peak_active_bytes"),
            get("mean_active_bytes"),
            get("tcache_bytes_at_active_peak"),
            arenas.into(),
        ]
    };
    summary.push(row("one arena", &one.summary, 1));
    let fields = whole.summary.clone();
    let process = whole
        .result::<ProcessModelRun>()
        .context("the process model's finding")?;
    let peaks = process.arenas.unwrap_or_default();
    summary.push(row("process", &fields, peaks.peaks.len() as u64));
    for a in &peaks.at_active_peak {
        per_arena.push(vec![
            name.into(),
            u64::from(a.index).into(),
            a.allocated_bytes.into(),
            a.active_bytes.into(),
            a.tcache_bytes.into(),
            peaks.peaks.get(&a.index).copied().unwrap_or(0).into(),
        ]);
    }
    Ok(())
}

/// The live check of `records` under each jemalloc here: one row each.
fn live(name: &str, records: &[Record], exe: &Path, table: &mut Table) -> Result<()> {
    let mut allocators = vec![("5.3.1 (linked)", ProcessAllocator::Linked)];
    if Path::new(DEBIAN_530).is_file() {
        allocators.push((
            "5.3.0 (Debian)",
            ProcessAllocator::System(DEBIAN_530.into()),
        ));
    }
    let options = ProcessOptions::parse(CONF)?;
    for (label, allocator) in allocators {
        let r = compare_process_live(exe, &allocator, records, &options, LIVE_EVERY, 5)
            .with_context(|| format!("live process check of '{name}' under {label}"))?;
        let c = &r.comparison;
        table.push(vec![
            name.into(),
            label.into(),
            r.events.into(),
            c.snapshots.into(),
            c.values.into(),
            c.mismatched_values.into(),
        ]);
    }
    Ok(())
}

/// The section's three tables, empty: the models side by side, per arena at the peak, and
/// the live check.
fn section_tables(config: &AllocatorConfig) -> (Table, Table, Table) {
    let summary = Table::new(
        format!(
            "the process model ({CONF}, thread caches on, decay off) beside the one-arena model (no thread cache), {}",
            crate::sizeclass::build_title(config)
        ),
        &[
            "trace",
            "model",
            "threads",
            "events",
            "peak_active_bytes",
            "mean_active_bytes",
            "tcache_bytes_at_active_peak",
            "arenas_used",
        ],
    );
    let per_arena = Table::new(
        "per arena at the process model's active peak (fragsim replay TRACE --process --per-arena FILE gives every K events)",
        &[
            "trace",
            "arena",
            "allocated_bytes",
            "active_bytes",
            "tcache_bytes",
            "arena_peak_active_bytes",
        ],
    );
    let checks = Table::new(
        format!("the process model against the live jemalloc (baton replay, one thread per trace thread, {CONF}, decay off, 5.3.1 with experimental_tcache_gc:false), compared every {LIVE_EVERY} records"),
        &[
            "trace",
            "jemalloc",
            "records",
            "snapshots_compared",
            "values_compared",
            "values_mismatched",
        ],
    );
    (summary, per_arena, checks)
}

/// Writes the section's tables for every trace in `traces`; the live check
/// needs the fragsim executable (`exe`; `None`: the section says it was not run).
pub fn write_section(dir: &Path, traces: &Path, exe: Option<&Path>) -> Result<SectionOutput> {
    let config = Api::linked().config()?;
    let (mut summary, mut per_arena, mut checks) = section_tables(&config);
    let mut names = Vec::new();
    for path in super::programs::trace_files(traces)? {
        let records = records(&path)?;
        let name = path
            .file_stem()
            .map_or("trace".into(), |s| s.to_string_lossy().to_string());
        models(&name, &records, config, &mut summary, &mut per_arena)?;
        if let Some(exe) = exe {
            live(&name, &records, exe, &mut checks)?;
        }
        names.push(name);
    }
    let mut files = write_table(
        dir,
        "process-summary",
        &summary,
        "process model vs one-arena model: peak and mean active bytes, thread-cache bytes",
    )?;
    files.extend(write_table(
        dir,
        "process-per-arena",
        &per_arena,
        "per arena at the process model's active peak",
    )?);
    let mut md = format!(
        "Every committed trace ({}) through the process model and the one-arena model; [process-summary.md](process-summary.md), [process-per-arena.md](process-per-arena.md).\n",
        names.join(", ")
    );
    if exe.is_some() {
        files.extend(write_table(
            dir,
            "process-live",
            &checks,
            "the process model against the live jemalloc: values compared and mismatched",
        )?);
        md.push_str("The live check of the process model, values compared and mismatched: [process-live.md](process-live.md).\n");
    } else {
        md.push_str("The live check was not run (it needs the fragsim executable).\n");
    }
    Ok(SectionOutput {
        files,
        markdown: md,
    })
}
