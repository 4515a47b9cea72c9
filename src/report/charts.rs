//! The report's charts, drawn from the sweeps and the validation.

use super::{figures, SectionOutput, Sweeps, Written};
use crate::charts::write_chart;
use crate::experiments::sweep::seed_rows;
use crate::validate::Validation;
use anyhow::Result;
use std::path::{Path, PathBuf};

pub(super) fn write_section(
    dir: &Path,
    sweeps: &Sweeps,
    validation: &Validation,
    max_capacity: u64,
) -> Result<SectionOutput> {
    let charts = dir.join("charts");
    let mut written = Vec::new();
    let mut add = |paths: Vec<PathBuf>, what: &str| {
        written.extend(paths.iter().map(|p| Written::at(dir, p, what)));
    };
    add(
        write_chart(&figures::seed_chart(sweeps, &seed_rows()), &charts)?,
        "footprint change against sizeof(value_type): the seed's table, our reproduction, \
         and the physically exact ratio for large tables",
    );
    add(
        write_chart(
            &figures::ratio_heatmap(&sweeps.default, max_capacity),
            &charts,
        )?,
        "the after / before ratio over value size and table size \
         (blue: one block is cheaper; red: dearer)",
    );
    add(
        write_chart(&figures::waste_curve(), &charts)?,
        "internal fragmentation against request size: \
         the sawtooth of the size classes for three builds",
    );
    add(
        write_chart(&figures::predicted_vs_measured(validation), &charts)?,
        "from the live validation: measured bytes against predicted bytes, \
         every F14 row; mismatches marked",
    );
    Ok(SectionOutput::files(written))
}
