//! A hook's answer merged into its batch: each written-back value replaces its cell and is
//! checked again by the engine that checked the upload ([`RowValidator`], the same cast,
//! transforms and constraints; the row's other cells as the template typed them), each error
//! joins the report as `hook-error` with the application's code as its `constraint`, and a row
//! that was valid and is not any more moves from `rows_valid` to `rows_rejected`: the counts stay
//! exact, whatever the report's cap keeps of the records.

use std::collections::HashMap;

use shared::domain::ErrorRecord;
use template::validate::{ErrorRecord as EngineRecord, RowValidator};
use template::{json_cells, Cell, Template};

use super::call::{Answer, HookValue};
use super::spool::SpooledRow;
use crate::parse::template::report_record;
use crate::parse::ValidationReport;

/// The longest message of a hook's error kept; a longer one is cut.
const MAX_MESSAGE_CHARS: usize = 1000;
/// The longest code of a hook's error (the report's `constraint` column holds 64).
pub const MAX_CODE_CHARS: usize = 64;

/// What merging answers into a file's rows needs and changes.
pub struct Merge<'a> {
    template: &'a Template,
    validator: RowValidator<'a>,
    /// Each field's column header in the file, in field order.
    columns: Vec<Option<String>>,
    sheet: u32,
    max_errors: usize,
    pub validation: &'a mut ValidationReport,
    pub errors: &'a mut Vec<ErrorRecord>,
}

impl<'a> Merge<'a> {
    pub fn new(
        template: &'a Template,
        validation: &'a mut ValidationReport,
        errors: &'a mut Vec<ErrorRecord>,
        max_errors: usize,
    ) -> Self {
        // The row as the template stored it: one column per field, in field order.
        let names: Vec<&str> = template.fields.iter().map(|f| f.name.as_str()).collect();
        let identity = (0..names.len()).map(Some).collect();
        let (validator, _labels) = RowValidator::new(template, &names, identity, 0);
        let columns = template
            .fields
            .iter()
            .map(|f| {
                validation
                    .mapping
                    .iter()
                    .find(|m| m.field == f.name)
                    .and_then(|m| m.column.clone())
            })
            .collect();
        Self {
            template,
            validator,
            columns,
            sheet: validation.sheet,
            max_errors,
            validation,
            errors,
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
                for record in found {
                    self.add(&mut window[i], report_record(self.sheet, record));
                }
            }
        }
        for e in answer.errors {
            let Some(&i) = at.get(&e.row) else { continue };
            let value = self
                .template
                .field_index(&e.field)
                .and_then(|f| cell_text(&window[i].values, f));
            let record = ErrorRecord {
                sheet: i32::try_from(self.sheet).unwrap_or(i32::MAX),
                row: i64::try_from(e.row).unwrap_or(i64::MAX),
                column: self
                    .template
                    .field_index(&e.field)
                    .and_then(|f| self.columns[f].clone()),
                field: Some(e.field),
                value,
                code: "hook-error".into(),
                constraint: e.code,
                message: e.message.chars().take(MAX_MESSAGE_CHARS).collect(),
                transformed: None,
            };
            self.add(&mut window[i], record);
        }
    }

    /// One more error on `row`: counted, kept within the cap, and the row invalid.
    fn add(&mut self, row: &mut SpooledRow, record: ErrorRecord) {
        let v = &mut *self.validation;
        v.errors_total += 1;
        *v.errors_by_code.entry(record.code.clone()).or_default() += 1;
        if let Some(field) = &record.field {
            *v.errors_by_field.entry(field.clone()).or_default() += 1;
        }
        if row.valid {
            row.valid = false;
            row.spoiled = true;
            v.rows_valid = v.rows_valid.saturating_sub(1);
            v.rows_rejected += 1;
        }
        if self.errors.len() < self.max_errors {
            self.errors.push(record);
        } else {
            v.errors_truncated = true;
        }
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
        {
            let mut cells: Vec<Cell<'_>> = stored.iter().map(json_cells::typed).collect();
            for &(f, value) in &fields {
                if let Some(cell) = cells.get_mut(f) {
                    *cell = json_cells::typed(value);
                }
            }
            self.validator.forget();
            self.validator
                .row(row.row, &cells, &mut out, &mut |e| found.push(e));
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
        for e in &mut found {
            e.column = e
                .field
                .as_deref()
                .and_then(|name| self.template.field_index(name))
                .and_then(|f| self.columns[f].clone());
        }
        found
    }
}

/// A row's value of field `f` as the report's `value`: its text, at most 200 characters.
fn cell_text(values: &str, f: usize) -> Option<String> {
    let stored: serde_json::Value = serde_json::from_str(values).ok()?;
    let text = match stored.get(f)? {
        serde_json::Value::Null => return None,
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(if text.chars().count() > 200 {
        text.chars().take(199).chain(['…']).collect()
    } else {
        text
    })
}
