//! Cells read back from JSON: a stored row's values or a rejected row's original cells, for
//! the rows the engine checks again after the upload (the api's corrections, the worker's
//! validation hooks). A workbook's date and date-time cells were kept as ISO 8601 text, which
//! [`typed`] reads back as the typed cell it was written from, so it casts as it did at upload.

use crate::Cell;

/// A row's cells, held for the validator: the JSON array of a rejected row's cells. With
/// `typed` (the row's cells as uploaded, for a workbook), a cell still as uploaded that reads as
/// an ISO 8601 date or date-time is that typed cell again; a changed cell is the text a person
/// typed.
pub fn cells<'a>(json: &'a serde_json::Value, typed: Option<&serde_json::Value>) -> Vec<Cell<'a>> {
    let cells = untyped(json);
    let Some(serde_json::Value::Array(original)) = typed else {
        return cells;
    };
    let current = json.as_array();
    cells
        .into_iter()
        .enumerate()
        .map(|(i, cell)| match cell {
            Cell::Text(t) if current.and_then(|c| c.get(i)) == original.get(i) => {
                temporal(t).unwrap_or(cell)
            }
            other => other,
        })
        .collect()
}

/// A stored value as the cell it was typed from: an ISO 8601 date or date-time text as that
/// typed cell, anything else as [`cell`] reads it.
pub fn typed(v: &serde_json::Value) -> Cell<'_> {
    match v {
        serde_json::Value::String(s) => temporal(s).unwrap_or(Cell::Text(s)),
        other => cell(other),
    }
}

/// The typed cell an ISO 8601 date or date-time text was written from.
fn temporal(text: &str) -> Option<Cell<'_>> {
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Some(Cell::Date(date));
    }
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(Cell::DateTime)
}

/// One JSON value as the cell it is.
pub fn cell(v: &serde_json::Value) -> Cell<'_> {
    match v {
        serde_json::Value::Null => Cell::Empty,
        serde_json::Value::Bool(b) => Cell::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Cell::Text(s),
        // A stored cell is never an array or object; such a value would be its own text.
        _ => Cell::Error("#VALUE!"),
    }
}

/// The cells as the JSON values they are.
fn untyped(json: &serde_json::Value) -> Vec<Cell<'_>> {
    match json {
        serde_json::Value::Array(values) => values.iter().map(cell).collect(),
        other => vec![cell(other)],
    }
}
