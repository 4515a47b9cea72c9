//! Numbers as people read them, for Markdown and the terminal (CSV and JSON keep raw
//! numbers): thousands separators, byte columns with their size in MiB or GiB beside the exact
//! count, fractions as percentages. What a column holds is read from its name, one rule here.

use super::Cell;

/// 10485760 -> "10,485,760".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a column's values are, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// `..._bytes`, `bytes`: exact, with MiB, GiB or TiB beside from 1 MiB.
    Bytes,
    /// `..._share`, `..._fragmentation`, `fraction`: a fraction of 1, shown in percent.
    Fraction,
    /// Anything else: thousands separated.
    Plain,
}

impl ColumnKind {
    /// The kind of a row's value in a two-column table of named figures (`| peak active bytes
    /// | 1,376,256 (1.31 MiB) |`): from the name, as a column's.
    pub(crate) fn of_label(label: &str) -> ColumnKind {
        let name = label.split(" (").next().unwrap_or(label);
        if name.split_whitespace().any(|w| w == "bytes") {
            ColumnKind::Bytes
        } else {
            ColumnKind::of(&name.replace(' ', "_"))
        }
    }

    pub fn of(column: &str) -> ColumnKind {
        if column == "bytes" || column.ends_with("_bytes") {
            ColumnKind::Bytes
        } else if column == "fraction"
            || column.ends_with("_share")
            || column.ends_with("_fragmentation")
        {
            ColumnKind::Fraction
        } else {
            ColumnKind::Plain
        }
    }
}

/// `1,376,256 (1.31 MiB)`; below 1 MiB the count alone.
pub fn bytes(n: u64) -> String {
    with_unit(thousands(n), n as f64)
}

/// `exact`, with `v` in MiB, GiB or TiB beside it from 1 MiB.
fn with_unit(exact: String, v: f64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    const GIB: f64 = (1u64 << 30) as f64;
    const TIB: f64 = (1u64 << 40) as f64;
    match v {
        v if v >= TIB => format!("{exact} ({:.2} TiB)", v / TIB),
        v if v >= GIB => format!("{exact} ({:.2} GiB)", v / GIB),
        v if v >= MIB => format!("{exact} ({:.2} MiB)", v / MIB),
        _ => exact,
    }
}

/// A float with `decimals` decimals, its whole part thousands separated: `881,950.7`.
fn float(v: f64, decimals: usize) -> String {
    let text = format!("{:.decimals$}", v.abs());
    let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
    let whole = whole.parse::<u64>().map_or(whole.to_string(), thousands);
    let sign = if v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    match frac.is_empty() {
        true => format!("{sign}{whole}"),
        false => format!("{sign}{whole}.{frac}"),
    }
}

/// The cell of column `kind` as Markdown shows it.
pub fn cell(kind: ColumnKind, cell: &Cell) -> String {
    match (kind, cell) {
        (ColumnKind::Bytes, Cell::Int(v)) => bytes(*v),
        (ColumnKind::Bytes, Cell::Float(v, d)) if v.is_finite() => with_unit(float(*v, *d), *v),
        // A fraction with d decimals keeps d - 2 in percent (0.1041 -> 10.41%).
        (ColumnKind::Fraction, Cell::Float(v, d)) => {
            format!("{:.*}%", d.saturating_sub(2), v * 100.0)
        }
        (_, Cell::Int(v)) => thousands(*v),
        (_, Cell::Float(v, d)) if v.is_finite() => float(*v, *d),
        (_, c) => c.text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_written_by_hand() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(10_485_760), "10,485,760");
        assert_eq!(bytes(1_048_575), "1,048,575");
        // 1,376,256 / 1,048,576 = 1.3125.
        assert_eq!(bytes(1_376_256), "1,376,256 (1.31 MiB)");
        assert_eq!(bytes(3 << 30), "3,221,225,472 (3.00 GiB)");
        assert_eq!(
            cell(ColumnKind::Bytes, &Cell::Float(4_734_976.0, 1)),
            "4,734,976.0 (4.52 MiB)"
        );
        assert_eq!(
            cell(ColumnKind::of("peak_active_bytes"), &Cell::Int(4096)),
            "4,096"
        );
        assert_eq!(
            cell(
                ColumnKind::of("internal_fragmentation"),
                &Cell::Float(0.1041, 4)
            ),
            "10.41%"
        );
        assert_eq!(
            cell(ColumnKind::of("mean"), &Cell::Float(881950.66, 1)),
            "881,950.7"
        );
        assert_eq!(
            cell(ColumnKind::of("change_pct"), &Cell::Float(-1.104, 2)),
            "-1.10"
        );
        assert_eq!(
            cell(ColumnKind::of("change_pct"), &Cell::Float(-0.001, 2)),
            "0.00"
        );
        assert_eq!(cell(ColumnKind::of("events"), &Cell::Text("x".into())), "x");
        assert_eq!(
            ColumnKind::of_label("mapped bytes at the active peak (stats.mapped)"),
            ColumnKind::Bytes
        );
        assert_eq!(ColumnKind::of_label("values compared"), ColumnKind::Plain);
    }
}
