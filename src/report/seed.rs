//! The seed's printed table beside our reproduction of its model and the physical ratios.

use super::findings::{seed_vs_physical_markdown, seed_vs_physical_table};
use super::{write_table, SectionOutput, Sweeps, Written};
use crate::experiments::sweep::{seed_comparison_table, seed_rows};
use crate::export::write_atomic;
use crate::sizeclass::Preset;
use anyhow::Result;
use std::path::Path;

pub(super) fn write_section(dir: &Path, sweeps: &Sweeps) -> Result<SectionOutput> {
    let q8 = Preset::Quantum8.classes();
    let seed = seed_rows();
    let what = "the seed's printed footprint table beside our reproduction of its model";
    let mut written = write_table(dir, "seed-model", &seed_comparison_table(&q8, &seed)?, what)?;
    let table = seed_vs_physical_table(
        &q8,
        &seed,
        &sweeps.default,
        &sweeps.quantum8,
        &sweeps.v5_3_1,
    );
    let md = seed_vs_physical_markdown(&table, &q8, &seed, &sweeps.default)?;
    let file = "seed-vs-physical.md";
    write_atomic(&dir.join(file), md.as_bytes())?;
    written.push(Written {
        file: file.into(),
        what: "the seed's model against the physically exact ratios, and why they differ".into(),
    });
    Ok(SectionOutput::files(written))
}
