//! The report's "Other allocators" section: every committed trace measured live under glibc,
//! Debian's jemalloc 5.3.0, tcmalloc, mimalloc and the linked jemalloc 5.3.1
//! ([`crate::measure`]), one table and one chart per trace. Measured bytes and times vary
//! from run to run, so everything goes under `timing/` (not committed).

use super::{SectionOutput, Written, TIMING_DIR};
use crate::charts::write_chart;
use crate::export::{write_atomic, Csv, Markdown, TableFormat};
use crate::measure::{
    caveats, chart, measure_records, notes, summary_table, Allocator, MeasureOptions, Measurement,
};
use anyhow::{Context, Result};
use std::path::Path;

/// The heading of this section in the report index.
pub(crate) const SECTION: &str = "Other allocators";

/// Every allocator's measured replay of the trace at `path` (named `name`).
fn measure_trace(path: &Path, name: &str, exe: &Path) -> Result<Measurement> {
    let records = crate::trace::open(path)?
        .records()
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading '{}'", path.display()))?;
    let calls = records
        .iter()
        .filter(|r| matches!(r, crate::trace::Record::Call(_)))
        .count();
    measure_records(
        &records,
        &MeasureOptions {
            allocators: Allocator::ALL.to_vec(),
            every: crate::sim::arena_replay::default_every(calls as u64),
            exe: exe.to_path_buf(),
            env: Vec::new(),
        },
    )
    .with_context(|| format!("measuring '{name}'"))
}

/// Measures every trace of the report's trace folder; without the fragsim executable (the
/// children) the section says it was not run.
pub fn write_section(dir: &Path, options: &super::ReportOptions) -> Result<SectionOutput> {
    let Some(exe) = &options.fragsim_exe else {
        return Ok(SectionOutput {
            files: Vec::new(),
            markdown: "Not measured in this run: it needs the fragsim executable (one child process per allocator).\n".into(),
        });
    };
    let traces = match &options.programs {
        Some(p) => super::programs::trace_files(&p.traces)?,
        None => Vec::new(),
    };
    let out = dir.join(TIMING_DIR);
    let charts = out.join("charts");
    std::fs::create_dir_all(&charts)
        .with_context(|| format!("cannot create folder '{}'", charts.display()))?;
    let mut files = Vec::new();
    let mut md = String::from("# Other allocators, measured\n\nEach committed trace replayed live, one child process per allocator, one replay thread per trace thread in the recorded order (a baton, as the process model's live check), the allocator loaded with `LD_PRELOAD` from Debian's packages (the linked jemalloc 5.3.1 called directly): `fragsim replay TRACE --measure all`. Resident bytes are measured, not modelled; fragsim's model of jemalloc's active bytes is drawn beside them (the process model for a trace with threads, the one-arena model otherwise).\n");
    let mut caveat_lines = Vec::new();
    for path in &traces {
        let name = path
            .file_stem()
            .map_or("trace".into(), |s| s.to_string_lossy().to_string());
        let m = measure_trace(path, &name, exe)?;
        let table = summary_table(&m, &format!("{name}: {} events", m.events));
        let stem = format!("allocators-{name}");
        let csv = out.join(format!("{stem}.csv"));
        write_atomic(&csv, Csv.render(&table)?.as_bytes())?;
        files.push(Written::at(
            dir,
            &csv,
            format!("{name}: peak and mean resident bytes per allocator (measured)"),
        ));
        md.push_str(&format!("\n## {name}\n\n{}\n", Markdown.render(&table)?));
        for line in notes(&m) {
            md.push_str(&format!("- {line}\n"));
        }
        let figure = chart(&m, &stem, &name);
        for p in write_chart(&figure, &charts)? {
            files.push(Written::at(
                dir,
                &p,
                format!("{name}: resident bytes over events per allocator (measured), the model's jemalloc active bytes beside them"),
            ));
        }
        md.push_str(&format!("\n![{name}](charts/{stem}.png)\n"));
        caveat_lines = caveats(&m);
    }
    md.push_str("\n## What a replay is not\n\n");
    for line in &caveat_lines {
        md.push_str(&format!("- {line}\n"));
    }
    let md_path = out.join("allocators.md");
    write_atomic(&md_path, md.as_bytes())?;
    files.insert(
        0,
        Written::at(
            dir,
            &md_path,
            "every table inline, with notes, charts and caveats",
        ),
    );
    Ok(SectionOutput {
        files,
        markdown: format!(
            "Measured live, so under `{TIMING_DIR}/` (not committed); {} traces.\n",
            traces.len()
        ),
    })
}
