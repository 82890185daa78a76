//! A hook's answer merged into its batch: each written-back value replaces its cell and is
//! checked again by the engine that checked the upload ([`RowValidator`], the same cast,
//! transforms and constraints; the row's other cells as the template typed them): the errors
//! the cell had before (the template's, or an earlier hook's value's) are taken back and its new
//! ones found, each error of the answer joins the report as `hook-error` with the application's
//! code as its `constraint`, and a row moves between `rows_valid` and `rows_rejected` as its
//! errors come and go: the counts stay exact, whatever the report's cap keeps of the records.
//! A value written into a unique or primary-key field notes the row's key values before and
//! after on the row: whether it collides with another row, and whether a later row that held
//! its old value is no longer a duplicate, is for [`super::unique`], once the parse has sent the
//! whole file's key index.

use std::collections::{BTreeMap, HashMap, HashSet};

use shared::db::validation::RejectedRow;
use shared::domain::ErrorRecord;
use template::validate::{ErrorCode, ErrorRecord as EngineRecord, RowValidator};
use template::{json_cells, Cell, Template};

use super::call::{self, Answer, HookValue};
use super::spool::SpooledRow;
use crate::parse::faults::Fault;
use crate::parse::template::report_record;
use crate::parse::ValidationReport;

/// What the hooks' answers changed in the report, added to the parse's at the end: the
/// answers arrive while the parse still runs, before its counts and mapping are known.
#[derive(Debug, Default)]
pub struct Tally {
    pub errors_total: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    pub errors_by_field: BTreeMap<String, u64>,
    /// Rows that were valid and are not any more, less rows that were invalid and are valid
    /// again.
    pub spoiled: i64,
    /// More records were found than the cap keeps.
    pub truncated: bool,
    /// Records in the order found, at most the report's cap (their `column` is filled at the
    /// end, from the mapping).
    pub records: Vec<ErrorRecord>,
    /// Errors counted before (by the parse, or an earlier hook's tally) that a written value
    /// took back: (sheet, row, field, code).
    pub taken_back: Vec<(i32, i64, Option<String>, ErrorCode)>,
    /// Rows whose entry among the parse's rejected rows goes: valid now, or with cells a hook
    /// wrote (the row then joins them as the hooks left it, as a spoiled row does).
    pub superseded: HashSet<(i32, i64)>,
}

impl Tally {
    /// Adds these counts and records to the parse's: the errors taken back leave the counts
    /// and the records (those the cap kept), the rows superseded leave the rejected rows, and the
    /// new records join within the cap, after the ones already there, each with its field's
    /// column in the file.
    pub fn settle(
        self,
        validation: &mut ValidationReport,
        (errors, rejected): (&mut Vec<ErrorRecord>, &mut Vec<RejectedRow>),
        max_errors: usize,
    ) {
        validation.errors_total += self.errors_total;
        add_counts(&mut validation.errors_by_code, self.errors_by_code);
        add_counts(&mut validation.errors_by_field, self.errors_by_field);
        take_back(validation, errors, &self.taken_back);
        rejected.retain(|r| !self.superseded.contains(&(r.sheet, r.row_number)));
        let moved = self.spoiled.unsigned_abs();
        if self.spoiled >= 0 {
            validation.rows_valid = validation.rows_valid.saturating_sub(moved);
            validation.rows_rejected += moved;
        } else {
            validation.rows_valid += moved;
            validation.rows_rejected = validation.rows_rejected.saturating_sub(moved);
        }
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

fn add_counts(to: &mut BTreeMap<String, u64>, counts: BTreeMap<String, u64>) {
    for (key, n) in counts {
        *to.entry(key).or_default() += n;
    }
}

/// A record's field and code.
type FieldCode<'a> = (Option<&'a str>, &'a str);

/// Takes each error out of the counts (a count that reaches 0 leaves its map, as a parse that
/// never found it would have it) and one record matching it out of `errors`, when the cap kept
/// it.
fn take_back(
    validation: &mut ValidationReport,
    errors: &mut Vec<ErrorRecord>,
    taken: &[(i32, i64, Option<String>, ErrorCode)],
) {
    fn less(map: &mut BTreeMap<String, u64>, key: &str) {
        if let Some(n) = map.get_mut(key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(key);
            }
        }
    }
    let mut wanted: HashMap<(i32, i64), Vec<FieldCode<'_>>> = HashMap::new();
    for (sheet, row, field, code) in taken {
        validation.errors_total = validation.errors_total.saturating_sub(1);
        less(&mut validation.errors_by_code, code.as_str());
        if let Some(field) = field {
            less(&mut validation.errors_by_field, field);
        }
        wanted
            .entry((*sheet, *row))
            .or_default()
            .push((field.as_deref(), code.as_str()));
    }
    errors.retain(|e| {
        let Some(of_row) = wanted.get_mut(&(e.sheet, e.row)) else {
            return true;
        };
        let this = (e.field.as_deref(), e.code.as_str());
        match of_row.iter().position(|w| *w == this) {
            Some(i) => {
                of_row.swap_remove(i);
                false
            }
            None => true,
        }
    });
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
                self.write(&mut window[i], &values);
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
            self.add_hook_error(&mut window[i], record);
        }
    }

    /// Writes a hook's values into the row: the errors their cells had are taken back, the
    /// errors the values have join the row, and the row is valid or not by what it has left.
    fn write(&mut self, row: &mut SpooledRow, values: &[HookValue]) {
        let was_valid = row.valid();
        let fields: Vec<usize> = values
            .iter()
            .filter_map(|v| self.template.field_index(&v.field))
            .collect();
        // A hook's own errors stay: only what the engine found in a cell it checks again goes.
        // A duplicate's error goes or stays once the whole file's keys are known
        // ([`super::unique`]).
        self.take_back(row, |f| {
            f.code != ErrorCode::HookError
                && !f.is_duplicate()
                && f.field.is_some_and(|f| fields.contains(&f))
        });
        let found = self.recheck(row, values);
        let sheet = row.sheet;
        for record in found {
            self.count(row, record.code, report_record(sheet, record));
        }
        self.revalue(row, was_valid);
        if !row.valid() && !row.spoiled {
            // Still rejected: with the cells the hook wrote, as a row it spoiled would be.
            self.tally.superseded.insert(place(row));
            row.spoiled = true;
        }
    }

    /// Takes the row's errors that `which` picks back: out of its errors, out of the counts,
    /// and out of the report's records. The caller settles the row's validity
    /// ([`Merge::revalue`]).
    pub fn take_back(&mut self, row: &mut SpooledRow, which: impl Fn(&Fault) -> bool) {
        let (gone, kept): (Vec<Fault>, Vec<Fault>) = std::mem::take(&mut row.faults.0)
            .into_iter()
            .partition(which);
        row.faults.0 = kept;
        let (sheet, number) = place(row);
        for fault in gone {
            let field = fault
                .field
                .and_then(|f| self.template.fields.get(f))
                .map(|f| f.name.clone());
            self.tally
                .taken_back
                .push((sheet, number, field, fault.code));
        }
    }

    /// Moves the row between the valid and the rejected rows when its errors changed that: a
    /// valid row that has errors now is spoiled (its cells join the rejected rows), and one
    /// left without errors is valid again (it leaves the rejected rows: the parse's, or the
    /// spoiled ones).
    pub fn revalue(&mut self, row: &mut SpooledRow, was_valid: bool) {
        match (was_valid, row.valid()) {
            (true, false) => {
                row.spoiled = true;
                self.tally.spoiled += 1;
            }
            (false, true) => {
                if !row.spoiled {
                    self.tally.superseded.insert(place(row));
                }
                row.spoiled = false;
                self.tally.spoiled -= 1;
            }
            _ => {}
        }
    }

    /// One more error a hook answered about `row`: counted, kept within the cap, and the row
    /// invalid.
    fn add_hook_error(&mut self, row: &mut SpooledRow, record: ErrorRecord) {
        let was_valid = row.valid();
        self.count(row, ErrorCode::HookError, record);
        self.revalue(row, was_valid);
    }

    /// An error (`code` is `record`'s) joins the row's, the counts, and the records within the
    /// cap.
    fn count(&mut self, row: &mut SpooledRow, code: ErrorCode, record: ErrorRecord) {
        row.faults
            .0
            .push(Fault::of(self.template, record.field.as_deref(), code));
        let t = &mut self.tally;
        t.errors_total += 1;
        *t.errors_by_code.entry(record.code.clone()).or_default() += 1;
        if let Some(field) = &record.field {
            *t.errors_by_field.entry(field.clone()).or_default() += 1;
        }
        if t.records.len() < self.max_errors {
            t.records.push(record);
        } else {
            t.truncated = true;
        }
    }

    /// Checks a row's key values against the rest of the file: `earlier` is the row each of
    /// them is a duplicate of (key set, fingerprint, row), as the key index says. Each is a
    /// `unique-error` or `primary-key` record on the row, worded as the upload words a
    /// duplicate. The caller settles the row's validity ([`Merge::revalue`]).
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
                self.count(row, record.code, report_record(sheet, record));
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

/// A row's sheet and number as the report's records and rejected rows have them.
fn place(row: &SpooledRow) -> (i32, i64) {
    (
        i32::try_from(row.sheet).unwrap_or(i32::MAX),
        i64::try_from(row.row).unwrap_or(i64::MAX),
    )
}
