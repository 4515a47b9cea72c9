//! The live validation: every prediction checked against the running jemalloc.

use super::{SectionOutput, Written};
use crate::export::{write_atomic, Format};
use crate::validate::{
    validate, validation_markdown, validation_table, ValidateOptions, Validation,
};
use anyhow::Result;
use std::path::Path;

pub(super) fn write_section(
    dir: &Path,
    options: &ValidateOptions,
) -> Result<(Validation, SectionOutput)> {
    let v = validate(options)?;
    write_atomic(
        &dir.join("validation.md"),
        validation_markdown(&v, "fragsim report")?.as_bytes(),
    )?;
    write_atomic(
        &dir.join("validation.csv"),
        Format::Csv.render(&validation_table(&v))?.as_bytes(),
    )?;
    let written = |file: &str, what: &str| Written {
        file: file.into(),
        what: what.into(),
    };
    let files = vec![
        written(
            "validation.md",
            "every prediction checked against the running jemalloc, predicted beside measured",
        ),
        written("validation.csv", "the same checks as CSV"),
    ];
    Ok((v, SectionOutput::files(files)))
}
