//! A validation run as a table (predicted beside measured) and as a Markdown report.

use super::Validation;
use super::{process_validation_table, replay_validation_table};
use crate::export::{Markdown, Table, TableFormat};
use anyhow::Result;

/// All checks as one table: predicted beside measured.
pub fn validation_table(v: &Validation) -> Table {
    let mut table = Table::new(
        format!(
            "Live validation: model {} against jemalloc {}",
            v.model.label(),
            v.live.version
        ),
        &["check", "subject", "predicted", "measured", "status"],
    );
    let status = |ok: bool| if ok { "ok" } else { "MISMATCH" };
    for c in &v.checks {
        table.push(vec![
            c.check.clone().into(),
            c.subject.clone().into(),
            c.predicted.clone().into(),
            c.measured.clone().into(),
            status(c.ok).into(),
        ]);
    }
    for m in &v.f14 {
        let subject = format!(
            "{} B x {} {} (x{})",
            m.value_size, m.capacity, m.layout, m.instances
        );
        for (what, p, q, ok) in [
            (
                "F14 usable bytes",
                m.predicted_usable,
                m.measured_usable,
                m.predicted_usable == m.measured_usable,
            ),
            (
                "F14 active bytes",
                m.predicted_active,
                m.measured_active,
                m.predicted_active == m.measured_active,
            ),
            (
                "F14 calls per table",
                m.predicted_calls,
                m.measured_calls,
                m.calls_ok,
            ),
        ] {
            table.push(vec![
                what.into(),
                subject.clone().into(),
                p.into(),
                q.into(),
                status(ok).into(),
            ]);
        }
    }
    table
}

/// The validation report: build, summary, then every check.
pub fn validation_markdown(v: &Validation, command: &str) -> Result<String> {
    let mut out = String::new();
    out.push_str("# Live validation\n\n");
    out.push_str(&format!("Produced by `{command}`.\n\n"));
    out.push_str(&format!(
        "- jemalloc {} (page {} B, quantum {} B, cache-oblivious {}, large requests rounded to {})\n- model: {}\n",
        v.live.version, v.live.page, v.live.quantum, v.live.cache_oblivious,
        if v.live.large_page_rounding { "pages" } else { "size classes" }, v.model.label()
    ));
    out.push_str(&format!(
        "- comparisons: {} ({} class-table and build checks, {} F14 rows allocated for real)\n- mismatches: **{}**\n\n",
        v.compared(),
        v.checks.iter().filter(|c| c.check != "nallocx").count(),
        v.f14.len(),
        v.mismatches()
    ));
    if !v.passed() {
        out.push_str("First mismatches:\n\n");
        for line in v.first_mismatches(10) {
            out.push_str(&format!("- {line}\n"));
        }
        out.push('\n');
    }
    out.push_str("Usable bytes are jemalloc's own count (`stats.arenas.<a>.small.allocated + large.allocated`) in a private arena with no thread cache; active bytes are `stats.arenas.<a>.pactive` x page. Calls are jemalloc's own counts (`stats.arenas.<a>.{small,large}.nmalloc` per table; `ndalloc` must equal it once everything is freed).\n\n");
    let mut table = validation_table(v);
    table.title.clear();
    out.push_str(&Markdown.render(&table)?);
    if !v.replay.is_empty() {
        out.push_str("\n## Random traces replayed: arena model vs live jemalloc\n\n");
        out.push_str("Each seeded random trace (small and large allocations up to 24 MiB, frees in random order, growing and shrinking reallocs, aligned requests) runs through `fragsim::sim` and through a fresh private jemalloc arena (no thread cache, decay off); after every event `small.allocated + large.allocated`, `pactive` and every bin's `curregs`, `curslabs` and `nonfull_slabs` are compared.\n\n");
        let mut replay = replay_validation_table(&v.replay);
        replay.title.clear();
        out.push_str(&Markdown.render(&replay)?);
    }
    if !v.process.is_empty() {
        out.push_str("\n## Generated threaded traces: process model vs live jemalloc\n\n");
        out.push_str("Each seeded threaded trace (`fragsim::process::threaded_trace`: threads starting one after another, frees of other threads' objects, allocations of 8-20 MiB for the huge arena, thread exits) runs through `fragsim::process` and through a child with one real thread per trace thread, calls in trace order (a baton), thread caches on, decay off (5.3.1 with `experimental_tcache_gc:false`); after every event `stats.allocated`, `stats.active`, per arena allocated, active and `tcache_bytes`, `mapped` and `retained` (every arena but 0, whose base also holds the global radix tree's leaves, placed by the kernel's address choice) and every bin's `curregs`, `curslabs` and `nonfull_slabs` are compared. The trace's shape (threads, cross-thread frees, huge requests, exits) is counted on its records.\n\n");
        let mut process = process_validation_table(&v.process);
        process.title.clear();
        out.push_str(&Markdown.render(&process)?);
    }
    Ok(out)
}
