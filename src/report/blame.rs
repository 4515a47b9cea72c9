//! The report's "Waste by call site" section: for each committed trace, the process model's active peak charged to call sites (size classes for a
//! trace without sites), its folded stacks and a flame graph of waste.

use super::{SectionOutput, Written};
use crate::blame::{blame, blame_table_with, folded_lines, At, BlameSpec};
use crate::charts::flame::flame_graph_svg;
use crate::export::{write_atomic, Format, Markdown, TableFormat};
use crate::process::ProcessOptions;
use crate::sizeclass::Preset;
use crate::trace::Record;
use anyhow::{Context, Result};
use std::path::Path;

/// The heading of this section in the report index.
pub(crate) const SECTION: &str = "Waste by call site";

/// Code lines shown per trace.
pub(crate) const TOP_SITES: usize = 10;

/// CPUs the report's process model assumes (8 automatic arenas), so the files do not depend
/// on the machine that writes them.
pub(crate) const REPORT_CPUS: u32 = 2;

/// Writes `blame-<name>.csv/md`, `blame-<name>.folded` and `charts/blame-<name>.svg` for
/// every trace of `traces` (a folder); a trace without sites is charged by size class.
pub fn write_section(dir: &Path, traces: &Path) -> Result<SectionOutput> {
    let mut out = SectionOutput::default();
    let mut md = String::from(
        "Active memory at the process model's active peak (linked build, default options, \
         5.3.1's deterministic cache GC, 2 CPUs: 8 arenas), every byte charged: requested and \
         rounding bytes to the allocating site, free regions of a slab to the sites holding \
         its regions (split by regions held), thread caches, cache blocks and large padding \
         as their own lines; `pinned_bytes`: slabs only that site's objects hold. The total \
         is the model's active bytes. `fragsim replay TRACE --blame --cpus 2`.\n",
    );
    for path in super::programs::trace_files(traces)? {
        let records = crate::trace::open(&path)?
            .records()
            .collect::<Result<Vec<Record>, _>>()
            .with_context(|| format!("reading '{}'", path.display()))?;
        let name = path
            .file_stem()
            .map_or("trace".into(), |s| s.to_string_lossy().to_string());
        let spec = BlameSpec {
            config: Preset::LINKED.config(),
            options: ProcessOptions {
                experimental_tcache_gc: Some(false),
                ..ProcessOptions::default()
            },
            cpus: REPORT_CPUS,
            at: At::Peak,
        };
        let b = blame(&records, &spec).with_context(|| format!("blame of '{name}'"))?;
        let by = if b.by_class {
            "size class (no call sites in the trace)"
        } else {
            "call site"
        };
        let title = format!(
            "{name}: active memory by {by} at the active peak, event {} of {}: {}",
            b.event,
            b.events,
            crate::blame::headline(&b)
        );
        let stem = format!("blame-{name}");
        for format in [Format::Csv, Format::Md] {
            // Markdown shows each site's first frames of its own, CSV the whole stack.
            let depth = (format == Format::Md).then_some(crate::blame::TABLE_DEPTH);
            let table = blame_table_with(&b, TOP_SITES, title.clone(), depth);
            let file = format!("{stem}.{}", format.extension());
            write_atomic(&dir.join(&file), format.render(&table)?.as_bytes())?;
            out.files.push(Written {
                file,
                what: title.clone(),
            });
        }
        let folded = folded_lines(&b);
        let text: String = folded.iter().map(|l| format!("{l}\n")).collect();
        let file = format!("{stem}.folded");
        write_atomic(&dir.join(&file), text.as_bytes())?;
        out.files.push(Written {
            file: file.clone(),
            what: format!("{name}: waste bytes by stack, folded (outermost frame first)"),
        });
        let chart = format!("charts/{stem}.svg");
        let svg = flame_graph_svg(
            &format!("{name}: waste bytes by stack at the active peak"),
            "bytes",
            &folded,
        )?;
        write_atomic(&dir.join(&chart), &svg)?;
        md.push_str(&format!(
            "\n### {name}\n\n{}\n![{name}: flame graph of waste]({chart})\n\nFlame graph of waste bytes by stack ([folded]({file})).\n",
            Markdown.render(&blame_table_with(
                &b,
                TOP_SITES,
                title.clone(),
                Some(crate::blame::TABLE_DEPTH)
            ))?
        ));
    }
    out.markdown = md;
    Ok(out)
}
