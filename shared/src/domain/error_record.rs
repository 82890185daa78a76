//! One error record of a templated upload's report, in one shape from the validator to the
//! api: the parse child sends it, `db::validation` stores and reads it, `GET
//! /files/{id}/errors` serves it. The template engine's own record (typed codes, no sheet)
//! lives in the `template` crate, which `shared` does not know; the child turns it into this
//! one, the only copy left.

use serde::{Deserialize, Serialize};

// Numbers are as the report stores them (`int`, `bigint`), so reading needs no conversion.
/// One problem found in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ErrorView))]
pub struct ErrorRecord {
    /// Sheet index (0 for CSV/TSV).
    pub sheet: i32,
    /// The 1-based row number a person sees: a spreadsheet's row number; for text files the
    /// record number counting the header row and any rows above it.
    pub row: i64,
    /// The column's header text as in the file; null for a missing column.
    pub column: Option<String>,
    /// The template field.
    pub field: Option<String>,
    /// The cell's original text (at most 200 characters).
    pub value: Option<String>,
    /// `type-error`, `constraint-error`, `unique-error`, `primary-key`, `missing-cell`,
    /// `extra-cell`, `blank-row`, `missing-label` or `duplicate-label`.
    pub code: String,
    /// For `constraint-error`: `required`, `minLength`, `maxLength`, `minimum`, `maximum`,
    /// `pattern` or `enum`.
    pub constraint: Option<String>,
    pub message: String,
    /// The cell's text after the field's transforms, when they changed it (at most 200
    /// characters); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformed: Option<String>,
}
