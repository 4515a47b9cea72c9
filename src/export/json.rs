use super::{Cell, Table, TableFormat};
use anyhow::Result;
use serde_json::{json, Value};

/// `{"title": ..., "columns": [...], "rows": [{column: value, ...}, ...]}`, numbers as JSON
/// numbers, each row's keys in the table's column order (one row per line).
pub struct Json;

impl TableFormat for Json {
    fn extension(&self) -> &'static str {
        "json"
    }

    fn render(&self, table: &Table) -> Result<String> {
        // serde_json's maps sort their keys, so the objects are written by hand.
        let mut out = format!(
            "{{\n  \"title\": {},\n  \"columns\": {},\n  \"rows\": [",
            serde_json::to_string(&table.title)?,
            serde_json::to_string(&table.columns)?
        );
        for (i, row) in table.rows.iter().enumerate() {
            out.push_str(if i == 0 { "\n    {" } else { ",\n    {" });
            for (k, (name, cell)) in table.columns.iter().zip(row).enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(name)?);
                out.push_str(": ");
                out.push_str(&serde_json::to_string(&value(cell))?);
            }
            out.push('}');
        }
        out.push_str(if table.rows.is_empty() {
            "]\n}\n"
        } else {
            "\n  ]\n}\n"
        });
        Ok(out)
    }
}

fn value(cell: &Cell) -> Value {
    match cell {
        Cell::Int(v) => json!(v),
        // Rounded as the other formats print it, so all three agree.
        Cell::Float(_, _) => cell
            .text()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Cell::Text(s) => json!(s),
        Cell::Missing(_) => Value::Null,
    }
}
