use super::{Cell, Table, TableFormat};
use anyhow::Result;

/// A GitHub-flavoured Markdown table under a heading; numbers are right-aligned.
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
        for row in &table.rows {
            let cells: Vec<String> = row.iter().map(|c| c.text().replace('|', "\\|")).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        Ok(out)
    }
}
