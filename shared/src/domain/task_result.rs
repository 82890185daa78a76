//! The `result` of a finished parse task, as `GET /api/v1/tasks/{id}` serves it: one type the
//! worker fills and the OpenAPI document describes, so the wire format cannot drift from what
//! clients are told. Each sheet says where its table lies ([`SheetLayout`]): every record of the
//! sheet is a header row, a stored data row, a blank row inside the data, or inside a range set
//! aside with its reason, so no row can go missing without the result saying where it went.
//!
//! The result is also a stored document: the `tasks_event` trigger reads `rows_total` and
//! `validation.rows_valid`/`rows_rejected` from it by key path (a test in `tests/it/events`
//! holds this type against that). Every struct here declares its fields in alphabetical order:
//! the api served the result as Postgres gave it back, a `jsonb` read into a sorted map, and a
//! typed result keeps those bytes only when it serialises in the same order (a test pins it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ColumnType, OnInvalid};

/// A COMPLETED task's result (and a task FAILED with `validation_failed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskResult {
    /// Data rows stored, over every sheet.
    pub rows_total: u64,
    pub sheets: Vec<SheetResult>,
    /// Workbook parts that could not be read (`chart sheet 'Chart1' not readable`).
    pub skipped_parts: Vec<String>,
    /// A templated upload: the template applied and what validating the file found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationResult>,
}

/// What validating a templated upload against its template found: exact counts, whatever
/// the caps on the error report let through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ValidationResult {
    /// Error records by code.
    pub errors_by_code: BTreeMap<String, u64>,
    /// Error records by template field.
    pub errors_by_field: BTreeMap<String, u64>,
    pub errors_total: u64,
    /// Fewer error records (or rejected rows) were kept than were found.
    pub errors_truncated: bool,
    /// The 1-based row of the validated sheet's header.
    pub header_row: u64,
    /// How each template field found its column.
    pub mapping: Vec<MappingEntry>,
    /// The policy applied: the template's, or the upload's override.
    pub on_invalid: OnInvalid,
    /// The corrections' revision these counts are of (0: the upload as it was checked).
    #[serde(default)]
    pub revision: u32,
    pub rows_rejected: u64,
    pub rows_valid: u64,
    /// The index of the sheet validated.
    pub sheet: u32,
    /// Workbook sheets read before the one validated and passed over.
    #[serde(default)]
    pub skipped_sheets: Vec<SkippedSheet>,
    /// The header texts as in the file: the columns of the rejected-rows export.
    pub source_columns: Vec<String>,
    /// The template's name and version.
    pub template: String,
    pub template_version: i32,
}

/// How one template field found its column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MappingEntry {
    pub column: Option<String>,
    pub column_index: Option<usize>,
    pub confidence: f64,
    pub field: String,
    /// How the column was found (`exact`, `title`, `normalized`, `alias`, `fuzzy`,
    /// `confirmed`, `remembered`); null when none was.
    #[serde(rename = "match")]
    pub how: Option<String>,
}

/// A sheet passed over when looking for the template's table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkippedSheet {
    pub name: String,
    /// `no_table` or `no_matching_columns`.
    pub reason: String,
}

/// One sheet of the result (CSV/TSV: one sheet, index 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SheetResult {
    /// The inferred type of each column, in column order.
    pub column_types: Vec<ColumnType>,
    pub columns: Vec<String>,
    /// Columns beyond the header, named `column_N`, that rows longer than the header added.
    pub extra_columns: u32,
    /// The 1-based row of the header (the lowest of its rows); 0 for a table without one.
    pub header_row: u64,
    pub hidden: bool,
    pub index: u32,
    pub layout: SheetLayout,
    pub name: String,
    /// Data rows stored.
    pub rows: u64,
}

/// Where a sheet's table lies, in 1-based record numbers: a spreadsheet's row numbers, or a
/// text file's records counting blank lines (the numbers of `header_row` and the error
/// report). `records` = header rows + stored data rows + `data.blank_rows` + the `rows` of
/// every `set_aside` range. (A templated sheet stores only its valid rows with
/// `drop_invalid_rows`: the rows it rejected are data rows of the range, counted in
/// `validation.rows_rejected` and listed in the error report.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SheetLayout {
    /// The data rows' range; null when the table has no data row.
    pub data: Option<DataRange>,
    /// The header's rows, top first: one, two or three (group rows over the names), none
    /// for a table without a header.
    pub header_rows: Vec<u64>,
    /// The records the sheet holds, blank ones included, up to its last non-blank one.
    pub records: u64,
    /// Ranges that are not data, in order, with why.
    pub set_aside: Vec<SetAside>,
}

/// The rows from the one after the header to the last data row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DataRange {
    /// Blank rows inside the range (not stored).
    pub blank_rows: u64,
    pub first_row: u64,
    pub last_row: u64,
}

/// Rows that are not part of the table, from `from_row` to `to_row` inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetAside {
    pub from_row: u64,
    /// A `table` range: the row that reads as that table's header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_row: Option<u64>,
    pub kind: SetAsideKind,
    /// Records in the range, blank ones included.
    pub rows: u64,
    pub to_row: u64,
}

impl SetAside {
    /// Records `from_row..=to_row` set aside as `kind` (`header_row` for a `table` range); its
    /// `rows` follow from the two ends.
    pub fn new(from_row: u64, to_row: u64, kind: SetAsideKind, header_row: Option<u64>) -> Self {
        SetAside {
            from_row,
            to_row,
            kind,
            rows: to_row + 1 - from_row,
            header_row,
        }
    }
}

/// Why a range was set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SetAsideKind {
    /// Above the table: titles, date and metadata lines, notes.
    Above,
    /// Below the table: text that is not data (sources, footnotes).
    Notes,
    /// Another table on the sheet, after the one imported.
    Table,
}

impl SheetLayout {
    /// The records the layout accounts for, given the data rows stored: equal to `records`
    /// when none is missing.
    pub fn accounted(&self, stored: u64) -> u64 {
        let header = self.header_rows.len() as u64;
        let blank = self.data.map_or(0, |d| d.blank_rows);
        let aside: u64 = self.set_aside.iter().map(|s| s.rows).sum();
        header + stored + blank + aside
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TaskResult {
        TaskResult {
            rows_total: 3,
            sheets: vec![SheetResult {
                column_types: vec![ColumnType::Integer],
                columns: vec!["amount".into()],
                extra_columns: 0,
                header_row: 2,
                hidden: false,
                index: 0,
                layout: SheetLayout {
                    records: 7,
                    header_rows: vec![2],
                    data: Some(DataRange {
                        blank_rows: 1,
                        first_row: 3,
                        last_row: 6,
                    }),
                    set_aside: vec![
                        SetAside::new(1, 1, SetAsideKind::Above, None),
                        SetAside::new(7, 7, SetAsideKind::Table, Some(7)),
                    ],
                },
                name: "Sheet1".into(),
                rows: 3,
            }],
            skipped_parts: vec!["chart sheet 'Chart1' not readable".into()],
            validation: Some(ValidationResult {
                errors_by_code: BTreeMap::from([("type".into(), 1)]),
                errors_by_field: BTreeMap::from([("amount".into(), 1)]),
                errors_total: 1,
                errors_truncated: false,
                header_row: 2,
                mapping: vec![MappingEntry {
                    column: Some("Amount".into()),
                    column_index: Some(0),
                    confidence: 0.9,
                    field: "amount".into(),
                    how: Some("normalized".into()),
                }],
                on_invalid: OnInvalid::DropInvalidRows,
                revision: 0,
                rows_rejected: 1,
                rows_valid: 2,
                sheet: 0,
                skipped_sheets: vec![SkippedSheet {
                    name: "Cover".into(),
                    reason: "no_table".into(),
                }],
                source_columns: vec!["Amount".into()],
                template: "invoices".into(),
                template_version: 1,
            }),
        }
    }

    /// The api served a result as Postgres returned it, its keys sorted at every level: the
    /// typed result must write the same bytes, so its fields stay in that order.
    #[test]
    fn a_result_serialises_with_its_keys_sorted_as_the_stored_document_was_served() {
        let result = sample();
        let typed = serde_json::to_string(&result).expect("serialise");
        let sorted = serde_json::to_value(&result).expect("to value").to_string();
        assert_eq!(typed, sorted);
    }

    #[test]
    fn a_result_reads_back_as_written() {
        let result = sample();
        let json = serde_json::to_vec(&result).expect("serialise");
        let back: TaskResult = serde_json::from_slice(&json).expect("deserialise");
        assert_eq!(back, result);
    }
}
