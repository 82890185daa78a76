//! What validation reports: one [`ErrorRecord`] per problem, in the contract's closed vocabulary
//! of codes, and the exact [`Counts`] a task's `result.validation` shows.

use std::collections::BTreeMap;

use super::super::check::Constraint;

codes::code_enum! {
    /// The kinds of validation error (the contract's `code`).
    pub enum ErrorCode as "kebab-case" {
        TypeError => "type-error",
        ConstraintError => "constraint-error",
        UniqueError => "unique-error",
        PrimaryKey => "primary-key",
        MissingCell => "missing-cell",
        ExtraCell => "extra-cell",
        BlankRow => "blank-row",
        MissingLabel => "missing-label",
        DuplicateLabel => "duplicate-label",
        /// A template's validation hook (the application) found the cell wrong (contract v1.3).
        HookError => "hook-error",
    }
}

/// One validation error, as `GET /files/{id}/errors` serves it (without the sheet).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorRecord {
    /// The 1-based row number a person sees (given by the caller); the header's row for label
    /// errors.
    pub row: u64,
    /// The header text of the cell's column as in the file; `None` when there is no such
    /// column (a missing label, a cell beyond the header, a blank row, a composite key).
    pub column: Option<String>,
    pub field: Option<String>,
    /// The cell's original text, at most 200 characters (cut on a character, with `…`).
    pub value: Option<String>,
    pub code: ErrorCode,
    /// The violated constraint, for a `constraint-error`.
    pub constraint: Option<Constraint>,
    pub message: String,
    /// The cell's text after the field's transforms, when they changed it (contract v1.3);
    /// `value` stays the text as in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformed: Option<String>,
}

/// Running totals of a validation; exact even when the caller stores only some records.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Counts {
    pub rows_valid: u64,
    pub rows_rejected: u64,
    pub errors_total: u64,
    pub errors_by_code: BTreeMap<&'static str, u64>,
    pub errors_by_field: BTreeMap<String, u64>,
}

impl Counts {
    pub(super) fn add(&mut self, record: &ErrorRecord) {
        self.errors_total += 1;
        *self.errors_by_code.entry(record.code.as_str()).or_default() += 1;
        if let Some(field) = &record.field {
            match self.errors_by_field.get_mut(field) {
                Some(n) => *n += 1,
                None => {
                    self.errors_by_field.insert(field.clone(), 1);
                }
            }
        }
    }
}
