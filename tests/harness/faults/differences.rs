//! Where sheetrelay and `frictionless` differ on purpose: the cases whose files frictionless
//! judges otherwise than a person would, with what each side reports and why we do what we do.
//! tests/it/oracle.rs checks that frictionless reports exactly the case's expected errors with
//! `ours` taken out and `frictionless` put in, so this list stays true; it is also the source
//! of the "where we differ" part of the template documentation.

use super::FileKind;

/// One error record, as frictionless (normalised by tests/oracle/verdict.py) or we report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub row: Option<u64>,
    pub column: Option<&'static str>,
    pub field: Option<&'static str>,
    /// Our code, or frictionless's own error type where we have no such code.
    pub code: &'static str,
    pub constraint: Option<&'static str>,
}

/// A case frictionless judges differently from us.
#[derive(Debug, Clone, Copy)]
pub struct KnownDifference {
    pub case: &'static str,
    /// The files of the case where the difference shows.
    pub files: &'static [FileKind],
    /// What frictionless reports instead of `ours`.
    pub frictionless: &'static [Verdict],
    /// The case's expected errors that frictionless does not report.
    pub ours: &'static [Verdict],
    pub why: &'static str,
}

const BOTH: &[FileKind] = &[FileKind::Csv, FileKind::Xlsx];

/// An error in the cell of `field`, under the column of the same name.
const fn cell(row: u64, field: &'static str, code: &'static str) -> Verdict {
    Verdict {
        row: Some(row),
        column: Some(field),
        field: Some(field),
        code,
        constraint: None,
    }
}

const fn required(row: u64, field: &'static str) -> Verdict {
    Verdict {
        constraint: Some("required"),
        ..cell(row, field, "constraint-error")
    }
}

/// An error of a whole row, or of a cell past the header.
const fn row(row: u64, code: &'static str) -> Verdict {
    Verdict {
        row: Some(row),
        column: None,
        field: None,
        code,
        constraint: None,
    }
}

pub const KNOWN_DIFFERENCES: &[KnownDifference] = &[
    KnownDifference {
        case: "duplicate_label",
        files: BOTH,
        frictionless: &[Verdict {
            row: None,
            column: None,
            field: None,
            code: "error",
            constraint: None,
        }],
        ours: &[cell(1, "email", "duplicate-label")],
        why: "Frictionless matches columns to fields by name only when every header text is \
              unique: otherwise it stops with one error for the whole table (\"matching fields \
              by name requires unique labels in the header\"), at no row, and reads no row. We \
              report the duplicated header text as a duplicate-label on the header row and go \
              on to validate the rows.",
    },
    KnownDifference {
        case: "primary_key_nulls",
        files: BOTH,
        frictionless: &[row(40, "primary-key")],
        ours: &[
            required(20, "line"),
            required(40, "invoice_no"),
            required(40, "line"),
        ],
        why: "Table Schema makes the fields of a primary key required. Frictionless checks only \
              the `required` constraint a field declares: a key with one empty field passes, a \
              key with every field empty is one primary-key error of the row. We report each \
              empty key field as a required constraint-error, and no primary-key error: an \
              incomplete key is not a repeated one, as a null takes no part in `unique`.",
    },
    KnownDifference {
        case: "blank_rows",
        files: BOTH,
        frictionless: &[row(30, "primary-key"), row(60, "primary-key")],
        ours: &[],
        why: "Frictionless replaces the errors of a row with no value by one blank-row, but \
              checks the primary key afterwards and adds a primary-key error for the key's \
              empty cells. A blank row is one error: blank-row.",
    },
    KnownDifference {
        case: "ragged_rows",
        files: &[FileKind::Xlsx],
        frictionless: &[],
        ours: &[row(20, "extra-cell")],
        why: "Frictionless reads a worksheet through openpyxl, which pads every row to the \
              sheet's widest, so the header too gets a cell in the column of the surplus value: \
              an unnamed column, which matching by name tolerates like any column the template \
              does not name. A value under no header goes unreported. We report it as an \
              extra-cell, as in a CSV file.",
    },
];
