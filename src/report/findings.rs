//! The seed's model beside the physically exact ratios, and why they differ.

use crate::experiments::sweep::{seed_model_ratio, PhysicalRow, SeedRow};
use crate::export::{Cell, Markdown, Table, TableFormat};
use crate::layout::{F14Vector, SplitOrUnified, F14_CHUNK_BYTES, F14_DESIRED_PER_CHUNK};
use crate::sizeclass::{Preset, SizeClasses};
use anyhow::Result;

/// The physical ratio at one full chunk, and its min and max over capacities of at least that.
fn range(rows: &[PhysicalRow], value_size: u64) -> Option<(f64, f64, f64)> {
    let mut at10 = None;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in rows
        .iter()
        .filter(|r| r.table.value_size == value_size && r.table.capacity >= F14_DESIRED_PER_CHUNK)
    {
        if r.table.capacity == F14_DESIRED_PER_CHUNK {
            at10 = Some(r.ratio());
        }
        lo = lo.min(r.ratio());
        hi = hi.max(r.ratio());
    }
    Some((at10?, lo, hi))
}

/// For each seed row: printed, reproduced, and the physical ratio (at 10 values, and its
/// range over larger tables) under the default and the 8-byte-quantum builds.
pub fn seed_vs_physical_table(
    q8: &SizeClasses,
    seed: &[SeedRow],
    default_rows: &[PhysicalRow],
    q8_rows: &[PhysicalRow],
    dev_rows: &[PhysicalRow],
) -> Table {
    let mut table = Table::new(
        "Seed table, seed model, and physically exact ratios",
        &[
            "value_size",
            "seed_printed",
            "seed_model",
            "default_at_10",
            "default_min",
            "default_max",
            "quantum8_at_10",
            "quantum8_min",
            "quantum8_max",
            "dev_largest_table",
        ],
    );
    let f = |v: f64| Cell::Float(v, 4);
    for row in seed {
        let (Some(d), Some(q)) = (
            range(default_rows, row.value_size),
            range(q8_rows, row.value_size),
        ) else {
            continue;
        };
        let dev_top = dev_rows
            .iter()
            .filter(|r| r.table.value_size == row.value_size)
            .max_by_key(|r| r.table.capacity)
            .map_or(f64::NAN, |r| r.ratio());
        table.push(vec![
            row.value_size.into(),
            f(row.ratio),
            f(seed_model_ratio(q8, row.value_size).unwrap_or(f64::NAN)),
            f(d.0),
            f(d.1),
            f(d.2),
            f(q.0),
            f(q.1),
            f(q.2),
            f(dev_top),
        ]);
    }
    table
}

/// Rounds `x` up to one significant digit (4.3e-6 -> 5e-6), so "within" stays true.
fn round_up_one_digit(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let scale = 10f64.powf(x.log10().floor());
    (x / scale).ceil() * scale
}

/// The report: the table and two paragraphs on the difference. Every number quoted is
/// computed from the rows, the seed's table and the builds.
pub fn seed_vs_physical_markdown(
    table: &Table,
    q8: &SizeClasses,
    seed: &[SeedRow],
    default_rows: &[PhysicalRow],
) -> Result<String> {
    let one_chunk = F14_DESIRED_PER_CHUNK;
    let max_cap = default_rows
        .iter()
        .map(|r| r.table.capacity)
        .max()
        .unwrap_or(0);
    let (min_col, max_col) = (table.column("default_min"), table.column("default_max"));
    let constant = table.rows.iter().all(|row| match (min_col, max_col) {
        (Some(a), Some(b)) => row[a] == row[b],
        _ => false,
    });
    let default = Preset::V5_3_0.classes();
    let (q_default, q_seed) = (default.config().quantum(), q8.config().quantum());
    // How closely the reproduction matches, over every printed row.
    let worst = seed
        .iter()
        .filter_map(|r| Some((seed_model_ratio(q8, r.value_size)? - r.ratio).abs()))
        .fold(0.0, f64::max);
    let within = format!("{:.0e}", round_up_one_digit(worst));
    let mut out = String::from("# The seed's footprint table against the physically exact one\n\n");
    out.push_str("Written by `cargo run --release -- report` (also `fragsim table --model d8485933` and `fragsim table`).\n\n");
    out.push_str(&format!(
        "Columns: the ratio printed in folly D8485933; our reproduction of the model behind it; the exact after / before ratio of usable bytes for a table of {one_chunk} values (one chunk) and its smallest and largest value over every capacity step from {one_chunk} to {max_cap} values, under the default x86-64 build ({q_default} B quantum) and under an {q_seed} B quantum; last, the ratio for the largest table under jemalloc 5.3.1 as tikv-jemalloc-sys ships it (large requests rounded to whole pages).\n\n"
    ));
    out.push_str(&Markdown.render(&Table {
        title: String::new(),
        ..table.clone()
    })?);
    out.push_str("\n## Why they differ\n\n");
    out.push_str(&worked_example(seed, default_rows, &within));
    let trimmed: Vec<String> = F14Vector::capacity_steps(one_chunk)
        .into_iter()
        .filter(|&c| c < one_chunk)
        .map(|c| c.to_string())
        .collect();
    let size_effect = if constant {
        format!("Under jemalloc 5.3.0's classes the exact ratio is the same at every capacity from {one_chunk} values up (min = max in every row): each doubling of the table doubles both blocks, and each doubling of the classes has the same {} classes at twice the size, so the rounding repeats exactly; only the trimmed single chunk of {} values differs.", number_word(default.config().ngroup()), trimmed.join(" and "))
    } else {
        "The exact ratio moves with the table size (compare the min and max columns), which the seed's single number per value size hides.".to_string()
    };
    let small = 24;
    out.push_str(&format!(
        "The seed's classes are also not the default x86-64 build's: its figures need an {q_seed} B quantum ({small}-byte values stay {} B, where a {q_default} B quantum rounds them to {} B). {size_effect} In jemalloc 5.3.1, as tikv-jemalloc-sys ships it, large requests are rounded to whole pages rather than to a size class, and for large tables both layouts then cost almost the same (the last column).\n",
        q8.usable_size(small).unwrap_or(0),
        default.usable_size(small).unwrap_or(0),
    ));
    Ok(out)
}

/// The paragraph on why the seed's figures differ, worked through 48-byte values in one
/// chunk; `within` is how closely the seed's model is reproduced.
fn worked_example(seed: &[SeedRow], default_rows: &[PhysicalRow], within: &str) -> String {
    let one_chunk = F14_DESIRED_PER_CHUNK;
    let at_one_chunk = |size: u64| {
        default_rows
            .iter()
            .find(|r| r.table.value_size == size && r.table.capacity == one_chunk)
    };
    // The worked example: 48-byte values, one chunk.
    let size = 48;
    let printed = seed
        .iter()
        .find(|r| r.value_size == size)
        .map_or(f64::NAN, |r| r.ratio);
    let (chunks, values, unified_raw, unified, b48, a48, r48) = match at_one_chunk(size) {
        Some(r) => {
            let split = r.table.split();
            let block = |i: usize| split.blocks.get(i).map_or(0, |b| b.bytes);
            (
                block(0),
                block(1),
                r.table.chunk_prefix() + r.table.values_bytes(),
                r.table.unified().requested(),
                r.before.usable,
                r.after.usable,
                r.ratio(),
            )
        }
        None => (0, 0, 0, 0, 0, 0, f64::NAN),
    };
    let rows = seed.len();
    let chunk = F14_CHUNK_BYTES;
    format!(
        "The seed's figures are not the bytes of one table. Its model, which we reproduce to within {within} on all {rows} rows, charges each value its own size class ({one_chunk} x cls(s) per chunk) where the real value array is one allocation rounded once (cls({one_chunk} x s)), and it adds a term lambda x u = (2 ln 2 - 1)({chunk} + {one_chunk} s) to both sides, which is the expected slack of a table whose load factor is uniform on (1/2, 1]: it averages over how full tables are. The physical model prices the allocations a table actually makes. For {size}-byte values at {one_chunk} values, the split layout asks for {chunks} B of chunks and {values} B of values and gets {b48} B; the unified block of {unified_raw} B rounds to {unified} B and gets {a48} B: a ratio of {r48:.4}, against the seed's {printed:.4}.\n\n"
    )
}

/// Small counts as words, as the prose reads them.
fn number_word(n: u64) -> String {
    match n {
        2 => "two".into(),
        4 => "four".into(),
        8 => "eight".into(),
        16 => "sixteen".into(),
        n => n.to_string(),
    }
}
