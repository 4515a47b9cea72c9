//! The report's "Run-time options" section: `fragsim advise` on every committed trace (one
//! thread or several): the default grid ranked by peak resident bytes, the chart, and the live
//! check of the recommended settings ([`crate::advise`]).

use super::{SectionOutput, Written};
use crate::advise::{
    advice_chart, advice_table, advise_on_clock, default_grid, notes, verify_recommended, Advice,
    LiveCheck, LivePlan, ModelMachine, Objective, LIMITS,
};
use crate::charts::write_chart;
use crate::export::{write_atomic, Cell, Csv, Markdown, Table, TableFormat};
use crate::process::DecayClock;
use crate::trace::Record;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The heading of this section in the report index.
pub(crate) const SECTION: &str = "Run-time options (advise)";

/// CPUs the report assumes for jemalloc's default `narenas` (4 x CPUs = 8), so that the files
/// are the same on any machine (`fragsim advise --cpus 2`).
pub(crate) const CPUS: u32 = 2;

/// The live check compares every K events (`fragsim advise --every 100`).
pub(crate) const LIVE_EVERY: u64 = 100;

/// The decay clock the report models: seed 0 and a 4 ms coarse clock (a 250 Hz kernel's
/// `CLOCK_MONOTONIC_COARSE`), fixed so that the files are the same on any machine.
pub(crate) const CLOCK: DecayClock = DecayClock {
    seed: 0,
    resolution_ns: 4_000_000,
    start_ns: 0,
};

/// The virtual address bits the report's jemalloc is taken to be built for (`fragsim advise
/// --vaddr-bits 57`): its radix tree is part of the metadata in resident bytes, and the
/// width is the build machine's (configure reads it through CPUID), so it is fixed for the
/// files to be the same on any machine. 57 (five-level paging) is the width the metadata
/// start was measured on ([`crate::process::Metadata::measured_default`]).
pub(crate) const VADDR_BITS: u32 = 57;

/// The machine the report's models stand for.
pub(crate) const MACHINE: ModelMachine = ModelMachine {
    cpus: CPUS,
    clock: CLOCK,
    vaddr_bits: VADDR_BITS,
};

/// The records of `path` without sites (the process model does not need them).
fn call_records(path: &Path) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    for r in crate::trace::open(path)?.records() {
        let r = r.with_context(|| format!("reading '{}'", path.display()))?;
        if !matches!(r, Record::Site { .. }) {
            records.push(r);
        }
    }
    Ok(records)
}

/// The ranking by the objective, short: one row per setting, the best first, every figure's
/// change against the defaults.
fn ranking_table(advice: &Advice, live: &[LiveCheck], title: &str) -> Table {
    let mut columns = vec!["rank", "setting"];
    for o in Objective::ALL {
        columns.extend([o.column(), o.change_column()]);
    }
    columns.push("live_check");
    let mut t = Table::new(title, &columns);
    let mut order: Vec<usize> = (0..advice.results.len()).collect();
    order.sort_by_key(|&i| advice.rank[i]);
    let base = advice.defaults();
    for i in order {
        let r = &advice.results[i];
        let mut row: Vec<Cell> = vec![(advice.rank[i] as u64).into(), r.setting.label().into()];
        for o in Objective::ALL {
            row.push(Cell::Float(o.of(r), 0));
            row.push(Cell::Float(o.change(r, base) * 100.0, 2));
        }
        row.push(live.get(i).map_or("not-run", LiveCheck::word).into());
        t.push(row);
    }
    t
}

fn write_both(dir: &Path, stem: &str, table: &Table, what: &str) -> Result<Vec<Written>> {
    let mut files = Vec::new();
    for format in [&Csv as &dyn TableFormat, &Markdown] {
        let file = format!("{stem}.{}", format.extension());
        write_atomic(&dir.join(&file), format.render(table)?.as_bytes())?;
        files.push(Written {
            file,
            what: what.to_string(),
        });
    }
    Ok(files)
}

/// Writes `advise-<trace>.csv/.md` (every column) and `charts/advise-<trace>.png/.svg` for
/// every trace in `traces`; the ranking and the notes go into the index.
/// Without `exe` the live checks are not run (the tables say not-run).
pub fn write_section(dir: &Path, traces: &[PathBuf], exe: Option<&Path>) -> Result<SectionOutput> {
    let plan = exe.map(|exe| LivePlan {
        exe: exe.to_path_buf(),
        every: Some(LIVE_EVERY),
        debian_jemalloc: PathBuf::from(crate::validate::DEBIAN_JEMALLOC),
        builds: crate::advise::builds_beside(exe),
        progress: crate::progress::Progress::default(),
    });
    let mut files = Vec::new();
    let mut md = format!(
        "Each committed trace replayed once through the process model under the default grid of run-time options (`fragsim advise TRACE --cpus {CPUS} --vaddr-bits {VADDR_BITS} --every {LIVE_EVERY}`, decay on a 4 ms coarse clock, seed 0; the metadata in resident bytes that of a jemalloc built for {VADDR_BITS}-bit virtual addresses, whatever the machine running the report), ranked by peak resident bytes (advise's default objective), with every figure's change against the defaults; the recommended settings checked live through the real jemalloc with that MALLOC_CONF at every {LIVE_EVERY} events. The full tables (the peak's decomposition, the exact MALLOC_CONF) are in the files listed above.\n"
    );
    for path in traces {
        let records = call_records(path)?;
        let name = path
            .file_stem()
            .map_or("trace".into(), |s| s.to_string_lossy().to_string());
        let advice = advise_on_clock(&records, &default_grid(), MACHINE)
            .with_context(|| format!("advise '{name}'"))?;
        let live = verify_recommended(&records, &advice, plan.as_ref())?;
        let stem = format!("advise-{name}");
        let table = advice_table(
            &advice,
            &format!("advise {name}: peak and mean resident and active bytes per setting"),
            &live,
        );
        files.extend(write_both(
            dir,
            &stem,
            &table,
            &format!("{name}: every setting of the default grid, the peak's parts, the live check"),
        )?);
        let chart = advice_chart(
            &advice,
            &stem,
            &format!("{name}: active and resident bytes per run-time setting"),
        );
        for p in write_chart(&chart, &dir.join("charts"))? {
            files.push(Written::at(
                dir,
                &p,
                format!("{name}: peak and mean resident and active bytes per setting"),
            ));
        }
        let ranking = ranking_table(
            &advice,
            &live,
            &format!("{name}: settings by peak resident bytes"),
        );
        md.push_str(&format!("\n{}\n", Markdown.render(&ranking)?));
        for line in notes(&advice, &live, crate::advise::LINKED_BASELINE) {
            if !LIMITS.contains(&line.as_str()) {
                md.push_str(&format!("- {line}\n"));
            }
        }
    }
    md.push_str("\nWhat these replays cannot show:\n\n");
    for line in LIMITS {
        md.push_str(&format!("- {line}\n"));
    }
    Ok(SectionOutput {
        files,
        markdown: md,
    })
}
