//! The real containers section: every modelled container grown to N for one element type,
//! side by side, and split vs unified per container (the seed's question for today's
//! containers). The models and tables are in [`crate::containers`]; this file only turns
//! their files into index entries.

use super::{SectionOutput, Written};
use crate::sizeclass::Preset;
use anyhow::Result;
use std::path::Path;

pub(crate) const SECTION: &str = "Real containers (folly F14, Rust std, abseil)";

/// What each file of the section shows, by its stem.
fn what(stem: &str) -> &'static str {
    match stem {
        "containers-summary" => "every container at N: bytes per element (requested, usable, active), peak during growth, allocator calls",
        "containers-split-verdict" => "one allocation vs two for every container with two arrays, at N and over its growth steps",
        "containers-split-steps" => "split vs unified at every growth step",
        "containers-bytes-per-element" => "usable bytes per element against N for the hash maps",
        "containers-split-ratio-by-value-size" => "unified / split usable bytes per value size, per container (the seed's chart for today's containers)",
        _ => "container models",
    }
}

pub fn write_section(dir: &Path) -> Result<SectionOutput> {
    let section = crate::containers::section::write_section(dir, &Preset::V5_3_0.classes())?;
    let files = section
        .files
        .iter()
        .map(|path| {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            Written::at(dir, path, what(stem))
        })
        .collect();
    Ok(SectionOutput {
        files,
        markdown: section.summary_markdown,
    })
}
