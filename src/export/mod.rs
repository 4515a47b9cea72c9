//! Tables and the formats they are written in. Computations build a [`Table`]; one small
//! file per format renders it, behind [`TableFormat`].

mod atomic;
mod csv;
mod glossary;
pub(crate) use glossary::define_once;
pub(crate) use glossary::definitions_of;
pub(crate) mod human;
mod json;
mod manifest;
mod markdown;
pub(crate) mod profile;
mod staging;
mod summary;
mod target;
pub use human::thousands;

use anyhow::Result;

pub(crate) use self::atomic::write_atomic;
pub(crate) use self::atomic::WriteError;
pub use self::csv::Csv;
pub(crate) use self::json::Json;
pub use self::markdown::Markdown;
pub(crate) use self::staging::create_folder;
pub(crate) use self::staging::StagedDir;
pub(crate) use self::summary::Summary;
pub(crate) use self::target::check_output;
pub(crate) use self::target::same_file;
pub(crate) use self::target::OutputFile;

/// One value of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(u64),
    /// A number and the decimals to print it with.
    Float(f64, usize),
    Text(String),
    /// No value (not measured, not applicable): CSV and Markdown print the marker given
    /// (`-` or nothing), JSON writes `null`.
    Missing(&'static str),
}

impl Cell {
    /// The cell as text, as CSV and Markdown print it.
    pub fn text(&self) -> String {
        match self {
            Cell::Int(v) => v.to_string(),
            Cell::Float(v, decimals) => format!("{v:.decimals$}"),
            Cell::Text(s) => s.clone(),
            Cell::Missing(marker) => (*marker).to_string(),
        }
    }
}

impl From<u64> for Cell {
    fn from(v: u64) -> Self {
        Cell::Int(v)
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Self {
        Cell::Text(v.to_string())
    }
}

impl From<String> for Cell {
    fn from(v: String) -> Self {
        Cell::Text(v)
    }
}

/// A titled table of rows; every row has one cell per column.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(title: impl Into<String>, columns: &[&str]) -> Self {
        Table {
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len(), "row width in {}", self.title);
        self.rows.push(row);
    }

    /// The same table without the columns named in `names`.
    pub fn without_columns(&self, names: &[&str]) -> Table {
        let keep: Vec<usize> = (0..self.columns.len())
            .filter(|&i| !names.contains(&self.columns[i].as_str()))
            .collect();
        Table {
            title: self.title.clone(),
            columns: keep.iter().map(|&i| self.columns[i].clone()).collect(),
            rows: self
                .rows
                .iter()
                .map(|row| keep.iter().map(|&i| row[i].clone()).collect())
                .collect(),
        }
    }

    /// The index of the column named `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// Writes `table` as `<stem>.csv` and `<stem>.md` into `dir`, each atomically: the one way a
/// report section writes a table. Returns the file names written, in that order.
pub(crate) fn write_csv_and_markdown(
    dir: &std::path::Path,
    stem: &str,
    table: &Table,
) -> Result<Vec<String>> {
    let mut written = Vec::new();
    for format in [Format::Csv, Format::Md] {
        let file = format!("{stem}.{}", format.extension());
        write_atomic(&dir.join(&file), format.render(table)?.as_bytes())?;
        written.push(file);
    }
    Ok(written)
}

/// A way to write a table as text.
pub trait TableFormat {
    /// File extension, without the dot.
    fn extension(&self) -> &'static str;
    fn render(&self, table: &Table) -> Result<String>;
}

/// The table formats, as the command line names them (`--format csv|md|json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Comma-separated values, one header line.
    Csv,
    /// A GitHub-flavoured Markdown table (`markdown` is an alias).
    Md,
    /// JSON: the title and one object per row, numbers as JSON numbers.
    Json,
}

impl crate::choice::Choice for Format {
    fn all() -> &'static [Self] {
        &[Format::Csv, Format::Md, Format::Json]
    }

    fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Md => "md",
            Format::Json => "json",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Format::Md => &["markdown"],
            _ => &[],
        }
    }

    fn help(self) -> &'static str {
        match self {
            Format::Csv => "Comma-separated values, one header line",
            Format::Md => "A GitHub-flavoured Markdown table",
            Format::Json => "JSON: the title and one object per row, numbers as JSON numbers",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::choice::Choice::name(*self))
    }
}

impl Format {
    /// The renderer behind this format.
    pub(crate) fn renderer(self) -> &'static dyn TableFormat {
        match self {
            Format::Csv => &Csv,
            Format::Md => &Markdown,
            Format::Json => &Json,
        }
    }

    pub fn render(self, table: &Table) -> Result<String> {
        self.renderer().render(table)
    }

    /// File extension, without the dot.
    pub fn extension(self) -> &'static str {
        self.renderer().extension()
    }
}
