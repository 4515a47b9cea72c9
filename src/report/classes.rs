//! The class table of each build the report models.

use super::{SectionOutput, Written};
use crate::export::{write_atomic, Format};
use crate::sizeclass::{class_table, Preset};
use anyhow::Result;
use std::path::Path;

/// `classes-<preset>.csv` for the builds whose tables differ (5.3.1's table is the default's).
pub(super) fn write_section(dir: &Path) -> Result<SectionOutput> {
    let mut written = Vec::new();
    for preset in [Preset::V5_3_0, Preset::Quantum8, Preset::Page64k] {
        let file = format!("classes-{}.{}", preset.name(), Format::Csv.extension());
        let table = class_table(&preset.classes());
        write_atomic(&dir.join(&file), Format::Csv.render(&table)?.as_bytes())?;
        written.push(Written {
            file,
            what: format!("every size class, {}", preset.description()),
        });
    }
    Ok(SectionOutput::files(written))
}
