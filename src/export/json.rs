use super::{Cell, Table, TableFormat};
use anyhow::Result;
use serde_json::{json, Map, Value};

/// `{"title": ..., "rows": [{column: value, ...}, ...]}`, numbers as JSON numbers.
pub struct Json;

impl TableFormat for Json {
    fn extension(&self) -> &'static str {
        "json"
    }

    fn render(&self, table: &Table) -> Result<String> {
        let rows: Vec<Value> = table
            .rows
            .iter()
            .map(|row| {
                let object: Map<String, Value> = table
                    .columns
                    .iter()
                    .zip(row)
                    .map(|(name, cell)| (name.clone(), value(cell)))
                    .collect();
                Value::Object(object)
            })
            .collect();
        let doc = json!({ "title": table.title, "columns": table.columns, "rows": rows });
        Ok(serde_json::to_string_pretty(&doc)? + "\n")
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
    }
}
