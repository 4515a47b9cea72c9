//! A summary: one set of named fields (a build's replay, a live comparison). JSON and CSV get
//! it as a one-row table whose columns are the field names, so every command's JSON has one
//! shape (`{title, columns, rows}`, each row an object of named fields); Markdown, for a
//! reader, gets it as a two-column table of the fields' descriptions and values.

use super::{Cell, Format, Table};

/// Named fields, each with the sentence a reader sees in Markdown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub title: String,
    /// (name, description, value): names are snake_case, unique.
    pub fields: Vec<(String, String, Cell)>,
}

impl Summary {
    pub fn new(title: impl Into<String>) -> Self {
        Summary {
            title: title.into(),
            fields: Vec::new(),
        }
    }

    /// Adds the field `name` (described by `label` in Markdown).
    pub fn field(&mut self, name: &str, label: &str, value: impl Into<Cell>) -> &mut Self {
        debug_assert!(
            !self.fields.iter().any(|(n, _, _)| n == name),
            "field {name} twice in {}",
            self.title
        );
        self.fields
            .push((name.to_string(), label.to_string(), value.into()));
        self
    }

    /// The value of the field `name`.
    pub fn get(&self, name: &str) -> Option<&Cell> {
        self.fields
            .iter()
            .find_map(|(n, _, v)| (n == name).then_some(v))
    }

    /// One row, a column per field (CSV and JSON).
    pub(crate) fn wide(&self) -> Table {
        let names: Vec<&str> = self.fields.iter().map(|(n, _, _)| n.as_str()).collect();
        let mut table = Table::new(self.title.clone(), &names);
        table.push(self.fields.iter().map(|(_, _, v)| v.clone()).collect());
        table
    }

    /// A row per field: its description and value (Markdown).
    pub(crate) fn tall(&self) -> Table {
        let mut table = Table::new(self.title.clone(), &["statistic", "value"]);
        for (_, label, value) in &self.fields {
            table.push(vec![label.as_str().into(), value.clone()]);
        }
        table
    }

    /// The table `format` writes: [`Summary::tall`] for Markdown, [`Summary::wide`] otherwise.
    pub(crate) fn table_for(&self, format: Format) -> Table {
        match format {
            Format::Md => self.tall(),
            Format::Csv | Format::Json => self.wide(),
        }
    }
}
