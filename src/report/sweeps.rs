//! The physical F14 sweeps, one table per modelled build; their rows feed later sections.

use super::{write_table, SectionOutput, Sweeps};
use crate::experiments::sweep::{physical_sweep, physical_table, PhysicalRow, SweepSpec};
use crate::sizeclass::Preset;
use anyhow::Result;
use std::path::Path;

/// `f14-physical-<stem>.csv/.md` for each build, and the rows.
pub(super) fn write_section(dir: &Path, spec: &SweepSpec) -> Result<(Sweeps, SectionOutput)> {
    let mut written = Vec::new();
    let mut sweep = |preset: Preset, stem: &str| -> Result<Vec<PhysicalRow>> {
        let classes = preset.classes();
        let rows = physical_sweep(&classes, spec)?;
        let what = format!(
            "F14 vector tables split vs unified, every value size x capacity step, {}",
            preset.description()
        );
        written.extend(write_table(
            dir,
            &format!("f14-physical-{stem}"),
            &physical_table(&classes, &rows),
            &what,
        )?);
        Ok(rows)
    };
    // Each file is named by its preset's name.
    let sweeps = Sweeps {
        default: sweep(Preset::V5_3_0, Preset::V5_3_0.name())?,
        quantum8: sweep(Preset::Quantum8, Preset::Quantum8.name())?,
        v5_3_1: sweep(Preset::V5_3_1, Preset::V5_3_1.name())?,
    };
    Ok((sweeps, SectionOutput::files(written)))
}
