use super::{Table, TableFormat};
use anyhow::Result;

/// RFC 4180 CSV with a header row.
pub struct Csv;

impl TableFormat for Csv {
    fn extension(&self) -> &'static str {
        "csv"
    }

    fn render(&self, table: &Table) -> Result<String> {
        let mut writer = ::csv::Writer::from_writer(Vec::new());
        writer.write_record(&table.columns)?;
        for row in &table.rows {
            writer.write_record(row.iter().map(|c| c.text()))?;
        }
        Ok(String::from_utf8(writer.into_inner()?)?)
    }
}
