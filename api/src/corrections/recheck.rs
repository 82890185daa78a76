//! A corrected row checked again by the engine that checked the upload
//! ([`template::validate::RowValidator`]), with the rest of the file standing in for the rows
//! it is not reading: the key index says which rows hold each unique or primary-key value, and
//! the earliest of them other than the row itself is seeded into the validator, so a duplicate
//! gets the very record (code, message, first row) the upload would have given it.

use shared::domain::ErrorRecord;
use template::validate::{ErrorRecord as EngineRecord, Mapping, RowValidator};
use template::{Cell, Template};

/// What checking a row came to.
#[derive(Debug)]
pub struct Checked {
    /// The typed values, as a stored row's JSON array.
    pub values: serde_json::Value,
    pub errors: Vec<ErrorRecord>,
    pub valid: bool,
}

/// The file's validator, reused row after row.
pub struct Rechecker<'t> {
    validator: RowValidator<'t>,
    sheet: i32,
    out: Vec<u8>,
}

impl<'t> Rechecker<'t> {
    /// The validator of a file whose header is `header` (on row `header_row` of sheet `sheet`)
    /// with the fields in the columns `mapping` gives.
    pub fn new(
        template: &'t Template,
        header: &[String],
        mapping: Mapping,
        header_row: u64,
        sheet: i32,
    ) -> Self {
        let texts: Vec<&str> = header.iter().map(String::as_str).collect();
        let (mut validator, _labels) = RowValidator::new(template, &texts, mapping, header_row);
        validator.track_keys();
        Self {
            validator,
            sheet,
            out: Vec::new(),
        }
    }

    /// The key values of a row: (key set, fingerprint) for each unique field and the primary
    /// key that the row has a value of.
    pub fn keys(&mut self, row: u64, cells: &[Cell<'_>]) -> Vec<(i32, u128)> {
        self.validator.forget();
        self.out.clear();
        self.validator.row(row, cells, &mut self.out, &mut |_| {});
        self.validator.row_keys().to_vec()
    }

    /// Checks row `row`, `earlier` being the (key set, fingerprint, row) of the first other row
    /// holding each of its key values, where that row comes before it.
    pub fn check(&mut self, row: u64, cells: &[Cell<'_>], earlier: &[(i32, u128, u64)]) -> Checked {
        self.validator.forget();
        for &(slot, fingerprint, first) in earlier {
            self.validator.seed(slot, fingerprint, first);
        }
        self.out.clear();
        let mut found = Vec::new();
        let valid = self
            .validator
            .row(row, cells, &mut self.out, &mut |e| found.push(e));
        let values = serde_json::from_slice(&self.out).unwrap_or(serde_json::Value::Null);
        Checked {
            values,
            errors: found.into_iter().map(|e| record(self.sheet, e)).collect(),
            valid,
        }
    }
}

/// The engine's record as the report stores it (as the worker sends it).
fn record(sheet: i32, e: EngineRecord) -> ErrorRecord {
    ErrorRecord {
        sheet,
        row: i64::try_from(e.row).unwrap_or(i64::MAX),
        column: e.column,
        field: e.field,
        value: e.value,
        code: e.code.as_str().to_owned(),
        constraint: e.constraint.map(|c| c.as_str().to_owned()),
        message: e.message,
        transformed: e.transformed,
    }
}
