//! What validation reports: one [`ErrorRecord`] per problem, in the contract's closed vocabulary
//! of codes, and the exact [`Counts`] a task's `result.validation` shows.

use std::collections::BTreeMap;

use super::super::check::Constraint;

/// The kinds of validation error (the contract's `code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    TypeError,
    ConstraintError,
    UniqueError,
    PrimaryKey,
    MissingCell,
    ExtraCell,
    BlankRow,
    MissingLabel,
    DuplicateLabel,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 9] = [
        ErrorCode::TypeError,
        ErrorCode::ConstraintError,
        ErrorCode::UniqueError,
        ErrorCode::PrimaryKey,
        ErrorCode::MissingCell,
        ErrorCode::ExtraCell,
        ErrorCode::BlankRow,
        ErrorCode::MissingLabel,
        ErrorCode::DuplicateLabel,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::TypeError => "type-error",
            ErrorCode::ConstraintError => "constraint-error",
            ErrorCode::UniqueError => "unique-error",
            ErrorCode::PrimaryKey => "primary-key",
            ErrorCode::MissingCell => "missing-cell",
            ErrorCode::ExtraCell => "extra-cell",
            ErrorCode::BlankRow => "blank-row",
            ErrorCode::MissingLabel => "missing-label",
            ErrorCode::DuplicateLabel => "duplicate-label",
        }
    }

    /// The code named `s` (`"type-error"`...).
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
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
