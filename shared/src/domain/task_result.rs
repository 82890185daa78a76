//! The `result` of a finished parse task, as `GET /api/v1/tasks/{id}` serves it: one type the
//! worker fills and the OpenAPI document describes, so the wire format cannot drift from what
//! clients are told. Each sheet says where its table lies ([`SheetLayout`]): every record of the
//! sheet is a header row, a stored data row, a blank row inside the data, or inside a range set
//! aside with its reason, so no row can go missing without the result saying where it went.

use serde::{Deserialize, Serialize};

use super::ColumnType;

/// A COMPLETED task's result (and a task FAILED with `validation_failed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskResult {
    /// Data rows stored, over every sheet.
    pub rows_total: u64,
    pub sheets: Vec<SheetResult>,
    /// Workbook parts that could not be read (`chart sheet 'Chart1' not readable`).
    pub skipped_parts: Vec<String>,
    /// A templated upload: `{"template", "template_version", "on_invalid", "sheet",
    /// "header_row", "rows_valid", "rows_rejected", "errors_total", "errors_by_code",
    /// "errors_by_field", "errors_truncated", "mapping": [{"field", "column", "column_index",
    /// "match", "confidence"}], "source_columns", "skipped_sheets"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub validation: Option<serde_json::Value>,
}

/// One sheet of the result (CSV/TSV: one sheet, index 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SheetResult {
    pub index: u32,
    pub name: String,
    pub hidden: bool,
    /// The 1-based row of the header (the lowest of its rows); 0 for a table without one.
    pub header_row: u64,
    /// Data rows stored.
    pub rows: u64,
    pub columns: Vec<String>,
    /// The inferred type of each column, in column order.
    pub column_types: Vec<ColumnType>,
    /// Columns beyond the header, named `column_N`, that rows longer than the header added.
    pub extra_columns: u32,
    pub layout: SheetLayout,
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
    /// The records the sheet holds, blank ones included, up to its last non-blank one.
    pub records: u64,
    /// The header's rows, top first: one, two or three (group rows over the names), none
    /// for a table without a header.
    pub header_rows: Vec<u64>,
    /// The data rows' range; null when the table has no data row.
    pub data: Option<DataRange>,
    /// Ranges that are not data, in order, with why.
    pub set_aside: Vec<SetAside>,
}

/// The rows from the one after the header to the last data row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DataRange {
    pub first_row: u64,
    pub last_row: u64,
    /// Blank rows inside the range (not stored).
    pub blank_rows: u64,
}

/// Rows that are not part of the table, from `from_row` to `to_row` inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetAside {
    pub from_row: u64,
    pub to_row: u64,
    pub kind: SetAsideKind,
    /// Records in the range, blank ones included.
    pub rows: u64,
    /// A `table` range: the row that reads as that table's header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_row: Option<u64>,
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
