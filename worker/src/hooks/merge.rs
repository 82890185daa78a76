//! A hook's answer merged into its batch: each written-back value replaces its cell and is
//! checked again by the engine that checked the upload ([`RowValidator`], the same cast,
//! transforms and constraints; the row's other cells as the template typed them), each error
//! joins the report as `hook-error` with the application's code as its `constraint`, and a row
//! that was valid and is not any more moves from `rows_valid` to `rows_rejected`: the counts stay
//! exact, whatever the report's cap keeps of the records. A value written into a unique or
//! primary-key field notes the row's key values before and after on the row: whether it
//! collides with another row is for [`super::unique`], once the parse has sent the whole file's
//! key index.

use std::collections::{BTreeMap, HashMap};

use shared::domain::ErrorRecord;
use template::validate::{ErrorCode, ErrorRecord as EngineRecord, RowValidator};
use template::{json_cells, Cell, Template};

use super::call::{self, Answer, HookValue};
use super::spool::SpooledRow;
use crate::parse::template::report_record;
use crate::parse::ValidationReport;

/// What the hooks' answers changed in the report, added to the parse's at the end: the
/// answers arrive while the parse still runs, before its counts and mapping are known.
#[derive(Debug, Default)]
pub struct Tally {
    pub errors_total: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    pub errors_by_field: BTreeMap<String, u64>,
    /// Rows that were valid and are not any more.
    pub spoiled: u64,
    /// More records were found than the cap keeps.
    pub truncated: bool,
    /// Records in the order found, at most the report's cap (their `column` is filled at the
    /// end, from the mapping).
    pub records: Vec<ErrorRecord>,
}

impl Tally {
    /// Adds these counts and records to the parse's: the records within the cap, after the
    /// ones already there, each with its field's column in the file.
    pub fn settle(
        self,
        validation: &mut ValidationReport,
        errors: &mut Vec<ErrorRecord>,
        max_errors: usize,
    ) {
        validation.errors_total += self.errors_total;
        for (code, n) in self.errors_by_code {
            *validation.errors_by_code.entry(code).or_default() += n;
        }
        for (field, n) in self.errors_by_field {
            *validation.errors_by_field.entry(field).or_default() += n;
        }
        validation.rows_valid = validation.rows_valid.saturating_sub(self.spoiled);
        validation.rows_rejected += self.spoiled;
        let room = max_errors.saturating_sub(errors.len());
        validation.errors_truncated |= self.truncated || self.records.len() > room;
        let column = |field: &Option<String>| {
            let field = field.as_deref()?;
            let entry = validation.mapping.iter().find(|m| m.field == field)?;
            entry.column.clone()
        };
        for mut record in self.records.into_iter().take(room) {
            record.column = column(&record.field);
            errors.push(record);
        }
    }
}

/// What merging answers into a file's rows needs and changes.
pub struct Merge<'a> {
    template: &'a Template,
    validator: RowValidator<'a>,
    max_errors: usize,
    pub tally: Tally,
}

impl<'a> Merge<'a> {
    pub fn new(template: &'a Template, max_errors: usize) -> Self {
        // The row as the template stored it: one column per field, in field order.
        let names: Vec<&str> = template.fields.iter().map(|f| f.name.as_str()).collect();
        let identity = (0..names.len()).map(Some).collect();
        let (mut validator, _labels) = RowValidator::new(template, &names, identity, 0);
        validator.track_keys();
        Self {
            template,
            validator,
            max_errors,
            tally: Tally::default(),
        }
    }

    /// Merges `answer` (already checked against the batch) into the batch's rows.
    pub fn apply(&mut self, window: &mut [SpooledRow], answer: Answer) {
        let at: HashMap<u64, usize> = window.iter().enumerate().map(|(i, r)| (r.row, i)).collect();
        let mut written: HashMap<u64, Vec<HookValue>> = HashMap::new();
        for v in answer.values {
            written.entry(v.row).or_default().push(v);
        }
        for (row, values) in written {
            if let Some(&i) = at.get(&row) {
                let found = self.recheck(&mut window[i], &values);
                let sheet = window[i].sheet;
                for record in found {
                    self.add(&mut window[i], report_record(sheet, record));
                }
            }
        }
        for e in answer.errors {
            let Some(&i) = at.get(&e.row) else { continue };
            let value = self
                .template
                .field_index(&e.field)
                .and_then(|f| cell_text(&window[i].values, f));
            let sheet = i32::try_from(window[i].sheet).unwrap_or(i32::MAX);
            let record = call::error_record(sheet, e, value, None);
            self.add(&mut window[i], record);
        }
    }

    /// One more error on `row`: counted, kept within the cap, and the row invalid.
    pub fn add(&mut self, row: &mut SpooledRow, record: ErrorRecord) {
        let t = &mut self.tally;
        t.errors_total += 1;
        *t.errors_by_code.entry(record.code.clone()).or_default() += 1;
        if let Some(field) = &record.field {
            *t.errors_by_field.entry(field.clone()).or_default() += 1;
        }
        if row.valid {
            row.valid = false;
            row.spoiled = true;
            t.spoiled += 1;
        }
        if t.records.len() < self.max_errors {
            t.records.push(record);
        } else {
            t.truncated = true;
        }
    }

    /// Checks a row whose hooks wrote key values against the rest of the file: `earlier` is
    /// the first other row holding each of its new key values (key set, fingerprint, row), as
    /// the key index says. Each is a `unique-error` or `primary-key` record on the row, worded
    /// as the upload words a duplicate.
    pub fn collide(&mut self, row: &mut SpooledRow, earlier: &[(i32, u128, u64)]) {
        let Ok(serde_json::Value::Array(stored)) = serde_json::from_str(&row.values) else {
            return;
        };
        let mut found = Vec::new();
        {
            let cells: Vec<Cell<'_>> = stored.iter().map(json_cells::typed).collect();
            self.validator.forget();
            for &(slot, fingerprint, first) in earlier {
                self.validator.seed(slot, fingerprint, first);
            }
            let mut out = Vec::new();
            self.validator
                .row(row.row, &cells, &mut out, &mut |e| found.push(e));
        }
        let sheet = row.sheet;
        for record in found {
            if matches!(record.code, ErrorCode::UniqueError | ErrorCode::PrimaryKey) {
                self.add(row, report_record(sheet, record));
            }
        }
    }

    /// Field `f` is unique or part of the primary key: a value written into it may collide
    /// with another row's, which only the whole file's key index can tell ([`super::unique`]).
    fn in_key_set(&self, f: usize) -> bool {
        self.template
            .fields
            .get(f)
            .is_some_and(|field| field.unique)
            || self.template.primary_key.contains(&f)
    }

    /// Writes `values` into the row and checks them again: the records of the written fields.
    fn recheck(&mut self, row: &mut SpooledRow, values: &[HookValue]) -> Vec<EngineRecord> {
        let Ok(serde_json::Value::Array(mut stored)) = serde_json::from_str(&row.values) else {
            return Vec::new();
        };
        let fields: Vec<(usize, &serde_json::Value)> = values
            .iter()
            .filter_map(|v| Some((self.template.field_index(&v.field)?, &v.value)))
            .collect();
        let mut out = Vec::new();
        let mut found = Vec::new();
        let keyed = fields.iter().any(|&(f, _)| self.in_key_set(f));
        {
            let mut cells: Vec<Cell<'_>> = stored.iter().map(json_cells::typed).collect();
            // The row's key values before: a written one leaves the file's key index.
            let before = keyed.then(|| {
                self.validator.forget();
                self.validator.row(row.row, &cells, &mut out, &mut |_| {});
                out.clear();
                self.validator.row_keys().to_vec()
            });
            for &(f, value) in &fields {
                if let Some(cell) = cells.get_mut(f) {
                    *cell = json_cells::typed(value);
                }
            }
            self.validator.forget();
            self.validator
                .row(row.row, &cells, &mut out, &mut |e| found.push(e));
            if let Some(before) = before {
                row.move_keys(before, self.validator.row_keys().to_vec());
            }
        }
        if let Ok(serde_json::Value::Array(checked)) = serde_json::from_slice(&out) {
            for &(f, _) in &fields {
                if let (Some(slot), Some(value)) = (stored.get_mut(f), checked.get(f)) {
                    *slot = value.clone();
                }
            }
        }
        row.values = serde_json::Value::Array(stored).to_string();
        found.retain(|e| {
            e.field
                .as_deref()
                .and_then(|name| self.template.field_index(name))
                .is_some_and(|f| fields.iter().any(|&(w, _)| w == f))
        });
        found
    }
}

/// A row's value of field `f` as the report's `value`.
fn cell_text(values: &str, f: usize) -> Option<String> {
    let stored: serde_json::Value = serde_json::from_str(values).ok()?;
    call::value_text(stored.get(f)?)
}
