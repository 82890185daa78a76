//! Planted-fault files for template validation: each [`FaultCase`] is an invoice template
//! (faults/invoice.rs), the same table written as a CSV file and as an xlsx workbook, and the
//! errors a person expects at the rows where faults were planted, in the error report's
//! vocabulary. Everything is generated, deterministically, so a case can be read in this file
//! rather than in a binary fixture. The cases are proven against the reference implementation,
//! `frictionless` (tests/it/oracle.rs), and are meant to be uploaded through the api with the
//! template too ([`expected_as_api_errors`]). Where frictionless says something else on
//! purpose, the case is listed in [`KNOWN_DIFFERENCES`].

mod cases;
mod differences;
mod invoice;
mod table;

use serde_json::{json, Value};

pub use cases::cases;
pub use differences::{KnownDifference, Verdict, KNOWN_DIFFERENCES};
pub use table::SHEET;

/// The two files of every case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    Csv,
    Xlsx,
}

impl FileKind {
    pub const ALL: [FileKind; 2] = [FileKind::Csv, FileKind::Xlsx];

    pub fn extension(self) -> &'static str {
        match self {
            FileKind::Csv => "csv",
            FileKind::Xlsx => "xlsx",
        }
    }
}

/// One error a person expects in a case's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The row number a person sees: the header is row 1.
    pub row: u64,
    /// The header text of the cell's column as in the file; None for a row's error, a missing
    /// column, or a cell past the header.
    pub column: Option<String>,
    /// The template field; None for a row's error or a cell past the header.
    pub field: Option<String>,
    /// One of the error report's codes (`type-error`, `constraint-error`, …).
    pub code: &'static str,
    /// The violated constraint of a `constraint-error`.
    pub constraint: Option<&'static str>,
    /// Set when the fault only exists in one kind of file: a CSV record with fewer fields than
    /// the header is missing cells, while a spreadsheet row has every column and its trailing
    /// ones are just empty.
    pub only_in: Option<FileKind>,
}

impl Expected {
    /// An error in the cell of `field`, whose column is headed by the field's name.
    pub fn cell(
        row: u64,
        field: &str,
        code: &'static str,
        constraint: Option<&'static str>,
    ) -> Self {
        Expected {
            row,
            column: Some(field.to_owned()),
            field: Some(field.to_owned()),
            code,
            constraint,
            only_in: None,
        }
    }

    /// A `constraint-error` of `constraint` in the cell of `field`.
    pub fn constraint(row: u64, field: &str, constraint: &'static str) -> Self {
        Expected::cell(row, field, "constraint-error", Some(constraint))
    }

    /// An error of the header, row 1: `missing-label` (no column: None) or `duplicate-label`.
    pub fn label(column: Option<&str>, field: &str, code: &'static str) -> Self {
        Expected {
            row: 1,
            column: column.map(str::to_owned),
            field: Some(field.to_owned()),
            code,
            constraint: None,
            only_in: None,
        }
    }

    /// An error of the whole row (`blank-row`, `primary-key`) or of a cell past the header
    /// (`extra-cell`): no column text, no field.
    pub fn row(row: u64, code: &'static str) -> Self {
        Expected {
            row,
            column: None,
            field: None,
            code,
            constraint: None,
            only_in: None,
        }
    }
}

/// A template, one table written as two files, and the errors planted in it.
#[derive(Debug, Clone)]
pub struct FaultCase {
    pub name: &'static str,
    /// The template's Table Schema.
    pub schema: Value,
    pub csv: Vec<u8>,
    /// One worksheet, [`SHEET`].
    pub xlsx: Vec<u8>,
    /// In file order.
    pub expected: Vec<Expected>,
}

impl FaultCase {
    pub fn file(&self, kind: FileKind) -> &[u8] {
        match kind {
            FileKind::Csv => &self.csv,
            FileKind::Xlsx => &self.xlsx,
        }
    }

    /// The errors expected in the case's file of that kind.
    pub fn expected_in(&self, kind: FileKind) -> impl Iterator<Item = &Expected> {
        self.expected
            .iter()
            .filter(move |e| e.only_in.is_none_or(|only| only == kind))
    }
}

/// The errors expected in a case's file as `GET /api/v1/files/{id}/errors` lists them, in file
/// order, for an upload of that file with the case's schema as its template. `value` and
/// `message` are text for a person and left out: compare the api's records with those two keys
/// removed. `sheet` is the sheet's index: 0, the only sheet of either file.
pub fn expected_as_api_errors(case: &FaultCase, kind: FileKind) -> Vec<Value> {
    case.expected_in(kind)
        .map(|e| {
            json!({
                "sheet": 0,
                "row": e.row,
                "column": e.column,
                "field": e.field,
                "code": e.code,
                "constraint": e.constraint,
            })
        })
        .collect()
}
