//! The seed's own footprint model (folly D8485933), reverse-engineered, beside its table.
//!
//! With u = 64 + 10·s bytes per chunk of the unified block, λ = 2·ln 2 − 1 and the classes of
//! an 8-byte-quantum jemalloc, the seed's ratio is (cls(u) + λ·u) / (64 + 10·cls(s) + λ·u).
//! It rounds each value to a class (10·cls(s)), not the value array (cls(10·s)), and adds λ·u
//! to both sides: 2·ln 2 is the mean of 1/load for a load factor uniform on (1/2, 1].

use crate::error::InputError;
use crate::export::{Cell, Table};
use crate::sizeclass::SizeClasses;
use anyhow::{Context, Result};

/// The seed's printed table, shipped in `data/`.
pub const SEED_TABLE_CSV: &str = include_str!("../../../data/seed_d8485933.csv");

/// One row of a footprint-change table: value size and after / before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeedRow {
    pub value_size: u64,
    pub ratio: f64,
}

/// Parses a `value_size,footprint_change` CSV (lines starting with `#` are comments);
/// `source` names it in errors.
pub fn parse_seed_table(text: &str, source: &str) -> Result<Vec<SeedRow>, InputError> {
    let malformed = |reason: String| InputError::MalformedSeedTable {
        source_name: source.to_string(),
        reason,
    };
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| malformed(e.to_string()))?
        .clone();
    if headers.len() < 2 || &headers[0] != "value_size" {
        return Err(malformed(
            "header must start with value_size,footprint_change".into(),
        ));
    }
    let mut rows = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| malformed(e.to_string()))?;
        let line = i + 2;
        let field = |k: usize| record.get(k).unwrap_or("").trim().to_string();
        let value_size: u64 = field(0)
            .parse()
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| malformed(format!("row {line}: bad value_size '{}'", field(0))))?;
        let ratio: f64 = field(1)
            .parse()
            .ok()
            .filter(|r: &f64| r.is_finite() && *r > 0.0)
            .ok_or_else(|| malformed(format!("row {line}: bad footprint_change '{}'", field(1))))?;
        if let Some(first) = seen.insert(value_size, line) {
            return Err(malformed(format!(
                "row {line}: value_size {value_size} repeats row {first}"
            )));
        }
        rows.push(SeedRow { value_size, ratio });
    }
    if rows.is_empty() {
        return Err(malformed("no rows".into()));
    }
    Ok(rows)
}

/// The seed's printed rows.
pub fn seed_rows() -> Vec<SeedRow> {
    parse_seed_table(SEED_TABLE_CSV, "data/seed_d8485933.csv").expect("shipped seed table parses")
}

/// The seed model's ratio for values of `value_size` bytes under `classes` (the seed used an
/// 8-byte quantum). `None` if a size is past the largest class.
pub fn seed_model_ratio(classes: &SizeClasses, value_size: u64) -> Option<f64> {
    let lambda = 2.0 * std::f64::consts::LN_2 - 1.0;
    let unified = 64 + 10 * value_size;
    let spread = lambda * unified as f64;
    let after = classes.usable_size(unified)? as f64 + spread;
    let before = 64.0 + 10.0 * classes.usable_size(value_size)? as f64 + spread;
    Some(after / before)
}

/// The seed's table and the model's reproduction side by side (columns begin
/// `value_size,ratio`).
pub fn seed_comparison_table(classes: &SizeClasses, seed: &[SeedRow]) -> Result<Table> {
    let mut table = Table::new(
        format!(
            "Seed model D8485933 ({}) beside the seed's printed table",
            crate::sizeclass::build_title(classes.config())
        ),
        &["value_size", "ratio", "seed_ratio", "difference"],
    );
    for row in seed {
        let ours = seed_model_ratio(classes, row.value_size).with_context(|| {
            format!(
                "value size {} is past the largest size class",
                row.value_size
            )
        })?;
        table.push(vec![
            row.value_size.into(),
            Cell::Float(ours, 6),
            Cell::Float(row.ratio, 6),
            Cell::Float(ours - row.ratio, 7),
        ]);
    }
    Ok(table)
}
