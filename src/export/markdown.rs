use super::human::{self, ColumnKind};
use super::{Cell, Table, TableFormat};
use anyhow::Result;

/// A GitHub-flavoured Markdown table under a heading; numbers are right-aligned and written
/// for people (`human`: thousands separators, MiB beside bytes, fractions in percent).
pub struct Markdown;

impl TableFormat for Markdown {
    fn extension(&self) -> &'static str {
        "md"
    }

    fn render(&self, table: &Table) -> Result<String> {
        let mut out = String::new();
        if !table.title.is_empty() {
            out.push_str(&format!("### {}\n\n", table.title));
        }
        out.push_str(&format!("| {} |\n", table.columns.join(" | ")));
        let numeric = |i: usize| {
            table
                .rows
                .first()
                .is_some_and(|r| !matches!(r[i], Cell::Text(_) | Cell::Missing(_)))
        };
        let rule: Vec<&str> = (0..table.columns.len())
            .map(|i| if numeric(i) { "---:" } else { "---" })
            .collect();
        out.push_str(&format!("|{}|\n", rule.join("|")));
        // Numbers as people read them (`human`); CSV and JSON keep them raw.
        let kinds: Vec<ColumnKind> = table.columns.iter().map(|c| ColumnKind::of(c)).collect();
        // A table of named figures (`statistic | value`): each value's kind from its name.
        let named = table.columns.len() == 2 && kinds[1] == ColumnKind::Plain;
        for row in &table.rows {
            let kind_of = |i: usize| match (&row[0], named && i == 1) {
                (Cell::Text(label), true) => ColumnKind::of_label(label),
                _ => kinds[i],
            };
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| human::cell(kind_of(i), c).replace('|', "\\|"))
                .collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        // The terms it uses, defined under it (each output defines its own).
        let texts = table.rows.iter().flatten().filter_map(|c| match c {
            Cell::Text(t) => Some(t.as_str()),
            _ => None,
        });
        let terms = super::glossary::terms_in(&table.columns, &table.title, texts);
        if !terms.is_empty() {
            out.push('\n');
            out.push_str(&super::glossary::definition_lines(&terms));
        }
        Ok(out)
    }
}
