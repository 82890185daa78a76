//! Validating a file's rows against a template as they stream through the parser: each row is
//! cast field by field and written as the JSON array a templated upload stores (typed values
//! in field order; a failing cell's original value, so a kept invalid row loses nothing), with
//! one [`ErrorRecord`] per problem and running [`Counts`]. `unique` and `primaryKey` hold
//! across all rows of the file, exactly, in memory proportional to the rows: a 128-bit xxh3
//! fingerprint of each typed value (a composite key: of its values' fingerprints) with the
//! first row it was seen in, 20 bytes an entry; integers that arrive in increasing order are
//! kept as themselves in a sorted run instead, 12 bytes each (`fingerprint::FirstRows`).
//!
//! As in frictionless: a later duplicate is the error (the first occurrence is not); nulls and
//! NaN take no part in `unique`; a row with fewer cells than the header gets a `missing-cell`
//! per mapped field it lacks, one with more an `extra-cell` per extra cell; a row whose cells
//! are all empty or missing values is one `blank-row` error and nothing else.
//!
//! Deliberate differences: the duplicate's message names the first row with the value
//! (frictionless names the latest); a missing cell is not also a `required` error; a blank
//! row gets no `primary-key` error; a primary key's fields are required (the v2
//! specification; frictionless instead reports a key whose values are all null), so a key
//! with a null, ill-typed or unmapped part is not checked for uniqueness; fields are matched
//! to columns by header text (see [`map_columns`]) rather than by position, so a field without
//! a column is one `missing-label` error and null in every row, and a header text found in
//! several columns one of which is mapped is a `duplicate-label` per further column.

pub(crate) mod mapping;
mod record;
mod review;
mod shortcut;

pub use mapping::{
    chosen, label, map_columns, map_columns_with, mapping, values, Evidence, MappedField, Mapping,
    MatchKind, FUZZY_THRESHOLD,
};
pub use record::{Counts, ErrorCode, ErrorRecord};
pub use review::{review_reason, ReviewReason};

use std::collections::HashMap;

use super::cell::Cell;
use super::check::clip;
use super::fingerprint::FirstRows;
use super::transform::{Applied, Buffers, Transforms};
use super::value::{composite_fingerprint, MissingValues, Value};
use super::{Field, FieldType, Template};
use shortcut::Shortcut;

/// Validates the rows of one file (one sheet) against a template.
pub struct RowValidator<'t> {
    template: &'t Template,
    header: Vec<String>,
    /// One per field, in field order.
    slots: Vec<Slot<'t>>,
    /// `None` without a key or with an unmapped key field.
    key: Option<PrimaryKey>,
    counts: Counts,
    keys: KeyLog,
}

/// The slot of the primary key among a file's key sets (a unique field's slot is its index).
pub const PRIMARY_KEY_SLOT: i32 = -1;

/// A value of a unique field (`slot`: the field's index) or a primary key
/// ([`PRIMARY_KEY_SLOT`]) and a row that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyEntry {
    pub slot: i32,
    pub fingerprint: u128,
    pub row: u64,
}

/// What the validator notes of key values beyond the first rows: the later rows holding a value
/// (the duplicates), and, when tracking, every key value of the current row.
#[derive(Default)]
struct KeyLog {
    track: bool,
    row: Vec<(i32, u128)>,
    dups: Vec<KeyEntry>,
}

impl KeyLog {
    /// Notes `fingerprint` in `slot` for `row`, a duplicate when `seen`.
    fn note(&mut self, slot: i32, fingerprint: u128, row: u64, seen: bool) {
        if self.track {
            self.row.push((slot, fingerprint));
        }
        if seen {
            self.dups.push(KeyEntry {
                slot,
                fingerprint,
                row,
            });
        }
    }
}

/// The primary key's state: where each key first appeared, and the current row's key values.
#[derive(Default)]
struct PrimaryKey {
    first_rows: FirstRows,
    parts: Vec<u128>,
    /// The last key part's value if it is an integer (for a one-field key, the key itself).
    integer: Option<i64>,
    scratch: Vec<u8>,
}

/// A field as this file has it.
struct Slot<'t> {
    /// The field's index in the template.
    index: usize,
    field: &'t Field,
    column: Option<usize>,
    shortcut: Shortcut,
    /// Whether a valid text may be copied without a typed value: nothing to check beyond
    /// `required`, no value to remember.
    direct: bool,
    in_key: bool,
    /// Where each value first appeared, for a `unique` field.
    first_rows: Option<FirstRows>,
    /// The buffers the field's transforms write into, kept between rows.
    scratch: Buffers,
}

/// Where errors go: counted, then handed to the caller.
struct Reporter<'r> {
    header: &'r [String],
    counts: &'r mut Counts,
    keys: &'r mut KeyLog,
    on_error: &'r mut dyn FnMut(ErrorRecord),
    /// The cell as in the file while a field's transforms changed it: errors then show it as
    /// `value` (the cell they are given as `transformed`), and a failing cell is stored as it.
    original: Option<Cell<'r>>,
}

impl Reporter<'_> {
    fn emit(&mut self, record: ErrorRecord) {
        self.counts.add(&record);
        (self.on_error)(record);
    }

    /// An error of `field`'s cell in `column` (its text in `value`).
    fn cell(
        &self,
        row: u64,
        column: Option<usize>,
        field: &Field,
        value: Option<String>,
        code: ErrorCode,
        message: String,
    ) -> ErrorRecord {
        let (value, transformed) = match self.original {
            Some(original) => (Some(original.text()), value),
            None => (value, None),
        };
        ErrorRecord {
            column: column.map(|c| self.header[c].clone()),
            field: Some(field.name.clone()),
            value: value.map(|v| clip(&v).into_owned()),
            transformed: transformed.map(|v| clip(&v).into_owned()),
            ..bare(row, code, message)
        }
    }

    /// Stores a failing `cell` as the file had it.
    fn write_failing(&self, cell: Cell<'_>, out: &mut Vec<u8>) {
        self.original.unwrap_or(cell).write_json(out);
    }
}

/// An error record without column, field or value.
fn bare(row: u64, code: ErrorCode, message: String) -> ErrorRecord {
    ErrorRecord {
        row,
        column: None,
        field: None,
        value: None,
        code,
        constraint: None,
        message,
        transformed: None,
    }
}

impl<'t> RowValidator<'t> {
    /// Starts a validation of a file whose header row (row number `header_row`) is `header`,
    /// with fields found in columns as `mapping` says. The label errors come first: a
    /// `missing-label` for each field without a column and a `duplicate-label` for each
    /// further column headed like a mapped one. A mapping entry past the header, or naming a
    /// column another field already has, counts as no column.
    pub fn new(
        template: &'t Template,
        header: &[&str],
        mapping: Mapping,
        header_row: u64,
    ) -> (Self, Vec<ErrorRecord>) {
        let mut taken = vec![false; header.len()];
        let slots: Vec<Slot<'t>> = template
            .fields
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let column = mapping
                    .get(i)
                    .copied()
                    .flatten()
                    .filter(|&c| c < header.len() && !std::mem::replace(&mut taken[c], true));
                let in_key = template.primary_key.contains(&i);
                Slot {
                    index: i,
                    field,
                    column,
                    shortcut: Shortcut::of(field),
                    direct: field.rules.is_empty() && !field.unique && !in_key,
                    in_key,
                    first_rows: field.unique.then(FirstRows::default),
                    scratch: Buffers::default(),
                }
            })
            .collect();
        let key_mapped = template
            .primary_key
            .iter()
            .all(|&i| slots[i].column.is_some());
        let mut validator = RowValidator {
            template,
            header: header.iter().map(|h| h.to_string()).collect(),
            slots,
            key: (!template.primary_key.is_empty() && key_mapped).then(PrimaryKey::default),
            counts: Counts::default(),
            keys: KeyLog::default(),
        };
        let mut records = Vec::new();
        validator.label_errors(header_row, &mut |r| records.push(r));
        (validator, records)
    }

    fn label_errors(&mut self, header_row: u64, on_error: &mut dyn FnMut(ErrorRecord)) {
        let mut report = Reporter {
            header: &self.header,
            counts: &mut self.counts,
            keys: &mut self.keys,
            on_error,
            original: None,
        };
        for slot in self.slots.iter().filter(|s| s.column.is_none()) {
            let field = slot.field;
            let mut labels = vec![format!("\"{}\"", field.name)];
            labels.extend(field.title.iter().map(|t| format!("\"{t}\"")));
            labels.extend(field.alternate_names.iter().map(|a| format!("\"{a}\"")));
            let message = format!(
                "{}: no column of the header is headed {}",
                field.name,
                labels.join(" or ")
            );
            let record = report.cell(
                header_row,
                None,
                field,
                None,
                ErrorCode::MissingLabel,
                message,
            );
            report.emit(record);
        }
        // Columns by header text, in column order (a header may have thousands of columns).
        let mut columns_of: HashMap<&str, Vec<usize>> = HashMap::new();
        for (c, text) in self.header.iter().enumerate() {
            if !text.is_empty() {
                columns_of.entry(text.as_str()).or_default().push(c);
            }
        }
        let field_of = |c: usize| {
            self.slots
                .iter()
                .find(|s| s.column == Some(c))
                .map(|s| s.field)
        };
        let mut duplicates: Vec<(usize, &Field, String)> = Vec::new();
        for (text, same) in &columns_of {
            let Some(owner) = same.iter().find_map(|&c| field_of(c)) else {
                continue;
            };
            let list: Vec<String> = same.iter().map(|c| (c + 1).to_string()).collect();
            for &c in &same[1..] {
                let message = format!(
                    "\"{text}\" heads columns {}; column {} is a duplicate",
                    list.join(", "),
                    c + 1
                );
                duplicates.push((c, field_of(c).unwrap_or(owner), message));
            }
        }
        duplicates.sort_by_key(|(c, _, _)| *c);
        for (c, field, message) in duplicates {
            let record = report.cell(
                header_row,
                Some(c),
                field,
                None,
                ErrorCode::DuplicateLabel,
                message,
            );
            report.emit(record);
        }
    }

    /// Reserves room for the unique and primary-key values of `rows` more rows (when the
    /// caller knows the size, e.g. a sheet's dimension), so the sets do not grow by steps.
    pub fn reserve(&mut self, rows: usize) {
        for set in self.slots.iter_mut().filter_map(|s| s.first_rows.as_mut()) {
            set.reserve(rows);
        }
        if let Some(key) = &mut self.key {
            key.first_rows.reserve(rows);
        }
    }

    /// The totals so far, label errors included.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The key sets this file checks: each unique field's index, and [`PRIMARY_KEY_SLOT`] when
    /// the primary key is checked (all its fields have a column).
    pub fn key_slots(&self) -> Vec<i32> {
        let mut slots: Vec<i32> = self
            .slots
            .iter()
            .filter(|s| s.first_rows.is_some())
            .map(|s| i32::try_from(s.index).unwrap_or(i32::MAX))
            .collect();
        if self.key.is_some() {
            slots.push(PRIMARY_KEY_SLOT);
        }
        slots
    }

    /// The first rows of key set `slot`.
    fn key_set(&self, slot: i32) -> Option<&FirstRows> {
        if slot == PRIMARY_KEY_SLOT {
            return self.key.as_ref().map(|k| &k.first_rows);
        }
        let slot = usize::try_from(slot).ok()?;
        self.slots.get(slot)?.first_rows.as_ref()
    }

    /// How many (value, row) pairs key set `slot` holds ([`RowValidator::key_values`]).
    pub fn key_count(&self, slot: i32) -> usize {
        let dups = self.keys.dups.iter().filter(|d| d.slot == slot).count();
        self.key_set(slot).map_or(0, FirstRows::len) + dups
    }

    /// Every value of key set `slot` with every row that holds it (its first row and each
    /// duplicate), as (fingerprint, row), in no order: what a correction needs to re-check
    /// uniqueness against the whole file without reading it again. Rows past `u32::MAX` are
    /// left out. Computed as it is read (an integer run's fingerprints too), so a caller can
    /// take it in passes without holding it.
    pub fn key_values(&self, slot: i32) -> impl Iterator<Item = (u128, u64)> + '_ {
        let firsts = self.key_set(slot).into_iter().flat_map(FirstRows::entries);
        let dups = self
            .keys
            .dups
            .iter()
            .filter(move |d| d.slot == slot)
            .map(|d| (d.fingerprint, d.row));
        firsts
            .chain(dups)
            .filter(|&(_, row)| row < u64::from(u32::MAX))
    }

    /// From now on, notes the key values of each row validated ([`RowValidator::row_keys`]).
    pub fn track_keys(&mut self) {
        self.keys.track = true;
    }

    /// The key values of the row validated last, as (slot, fingerprint), when tracking.
    pub fn row_keys(&self) -> &[(i32, u128)] {
        &self.keys.row
    }

    /// Forgets every key value and count, as for a new file (the label errors' counts too).
    pub fn forget(&mut self) {
        for set in self.slots.iter_mut().filter_map(|s| s.first_rows.as_mut()) {
            *set = FirstRows::default();
        }
        if let Some(key) = &mut self.key {
            key.first_rows = FirstRows::default();
        }
        self.counts = Counts::default();
        self.keys.dups.clear();
    }

    /// Records that `row`, a row of the file not being validated now, holds `fingerprint` in
    /// key set `slot`: a row validated after this is a duplicate of it if it has the value.
    pub fn seed(&mut self, slot: i32, fingerprint: u128, row: u64) {
        let set = if slot == PRIMARY_KEY_SLOT {
            self.key.as_mut().map(|k| &mut k.first_rows)
        } else {
            usize::try_from(slot)
                .ok()
                .and_then(|i| self.slots.get_mut(i))
                .and_then(|s| s.first_rows.as_mut())
        };
        if let Some(set) = set {
            set.seed(fingerprint, row);
        }
    }

    /// Validates one data row (its cells in file column order; a short row has fewer cells
    /// than the header, a long one more). Appends the row as a JSON array of the template's
    /// fields in field order to `out`, calls `on_error` for each error, and says whether the
    /// row is valid.
    pub fn row(
        &mut self,
        row: u64,
        cells: &[Cell<'_>],
        out: &mut Vec<u8>,
        on_error: &mut dyn FnMut(ErrorRecord),
    ) -> bool {
        let errors_before = self.counts.errors_total;
        self.keys.row.clear();
        let mut report = Reporter {
            header: &self.header,
            counts: &mut self.counts,
            keys: &mut self.keys,
            on_error,
            original: None,
        };
        let missing = &self.template.missing_values;
        if cells.iter().all(|c| is_blank(c, missing)) {
            write_nulls(self.slots.len(), out);
            report.emit(bare(row, ErrorCode::BlankRow, "the row is blank".into()));
            self.counts.rows_rejected += 1;
            return false;
        }
        if let Some(key) = &mut self.key {
            key.parts.clear();
        }
        let mut key_complete = self.key.is_some();
        out.push(b'[');
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            key_complete &= slot.write(row, cells, out, &mut report, &mut self.key);
        }
        out.push(b']');
        report.extra_cells(row, cells);
        if let (true, Some(key)) = (key_complete, &mut self.key) {
            key.check(
                &self.template.primary_key,
                &self.slots,
                row,
                cells,
                &mut report,
            );
        }
        let valid = report.counts.errors_total == errors_before;
        if valid {
            report.counts.rows_valid += 1;
        } else {
            report.counts.rows_rejected += 1;
        }
        valid
    }
}

/// A blank row as stored: a null for each of `fields`.
fn write_nulls(fields: usize, out: &mut Vec<u8>) {
    out.push(b'[');
    for i in 0..fields {
        out.extend_from_slice(if i == 0 { b"null" } else { b",null" });
    }
    out.push(b']');
}

impl Reporter<'_> {
    /// An `extra-cell` for each cell of `cells` past the header.
    fn extra_cells(&mut self, row: u64, cells: &[Cell<'_>]) {
        for (column, cell) in cells.iter().enumerate().skip(self.header.len()) {
            let message = format!(
                "column {}: the row has more cells than the header",
                column + 1
            );
            self.emit(ErrorRecord {
                value: Some(clip(&cell.text()).into_owned()),
                ..bare(row, ErrorCode::ExtraCell, message)
            });
        }
    }
}

impl Slot<'_> {
    /// Writes this field's value of the row `cells` to `out` (the cell's original value when it
    /// has an error), reports its errors, and adds it to the unique values and, for a key field,
    /// to the row's key. Says whether the row's key may still be complete: `false` when this key
    /// field's cell is missing, ill-typed or has no fingerprint. Inlined into the row loop, the
    /// body of which it was before it had a name (the error paths it calls stay out of line).
    #[inline(always)]
    fn write<'r>(
        &mut self,
        row: u64,
        cells: &[Cell<'r>],
        out: &mut Vec<u8>,
        report: &mut Reporter<'r>,
        key: &mut Option<PrimaryKey>,
    ) -> bool {
        let Some(column) = self.column else {
            out.extend_from_slice(b"null");
            return true;
        };
        let Some(&cell) = cells.get(column) else {
            out.extend_from_slice(b"null");
            self.missing_cell(row, column, report);
            return !self.in_key;
        };
        if let Some(transforms) = &self.field.transforms {
            if !transforms.leave(cell) {
                return self.write_transformed(transforms, row, column, cell, out, report, key);
            }
        }
        self.write_cell(row, column, cell, out, report, key)
    }

    /// [`Slot::write`] of a field with transforms: the cell is cast as they leave it, its
    /// errors say both texts, and a failing cell is stored as the file had it. Out of line:
    /// fields without transforms never pay for it.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn write_transformed<'r>(
        &mut self,
        transforms: &Transforms,
        row: u64,
        column: usize,
        cell: Cell<'r>,
        out: &mut Vec<u8>,
        report: &mut Reporter<'r>,
        key: &mut Option<PrimaryKey>,
    ) -> bool {
        let field = self.field;
        let mut buffers = std::mem::take(&mut self.scratch);
        let string_field = field.field_type == FieldType::String;
        let applied = transforms.apply(cell, string_field, &field.missing_values, &mut buffers);
        let text = &buffers.out;
        let written = match applied {
            Applied::Unchanged => self.write_cell(row, column, cell, out, report, key),
            Applied::Changed => {
                report.original = Some(cell);
                let written = self.write_cell(row, column, Cell::Text(text), out, report, key);
                report.original = None;
                written
            }
            Applied::Unreadable(expected) => {
                cell.write_json(out);
                let message = format!(
                    "{}: \"{}\" is not {expected}",
                    field.name,
                    clip(&cell.text())
                );
                let record = report.cell(
                    row,
                    Some(column),
                    field,
                    Some(cell.text()),
                    ErrorCode::TypeError,
                    message,
                );
                report.emit(record);
                !self.in_key
            }
        };
        self.scratch = buffers;
        written
    }

    /// Casts, checks and writes the field's `cell` (see [`Slot::write`]).
    #[inline(always)]
    fn write_cell(
        &mut self,
        row: u64,
        column: usize,
        cell: Cell<'_>,
        out: &mut Vec<u8>,
        report: &mut Reporter<'_>,
        key: &mut Option<PrimaryKey>,
    ) -> bool {
        let field = self.field;
        if let Cell::Text(text) = cell {
            if field.missing_values.contains(text) {
                if !field.required {
                    out.extend_from_slice(b"null");
                    return true;
                }
            } else if self.direct && self.shortcut.write(field, text, out) {
                return true;
            }
        }
        let Ok(value) = field.cast(cell) else {
            report.write_failing(cell, out);
            self.type_error(row, column, cell, report);
            return !self.in_key;
        };
        self.write_checked(row, column, cell, &value, out, report);
        if self.first_rows.is_none() && !self.in_key {
            return true;
        }
        self.remember(row, column, cell, &value, report);
        match key {
            Some(key) if self.in_key => key.add_part(&value),
            _ => true,
        }
    }

    /// A `missing-cell`: the row ends before this field's column.
    fn missing_cell(&self, row: u64, column: usize, report: &mut Reporter<'_>) {
        let message = format!(
            "{}: the row ends before column {} (\"{}\")",
            self.field.name,
            column + 1,
            report.header[column]
        );
        let record = report.cell(
            row,
            Some(column),
            self.field,
            None,
            ErrorCode::MissingCell,
            message,
        );
        report.emit(record);
    }

    /// A `type-error`: `cell` is not of the field's type and format.
    fn type_error(&self, row: u64, column: usize, cell: Cell<'_>, report: &mut Reporter<'_>) {
        let field = self.field;
        let text = cell.text();
        let message = format!(
            "{}: \"{}\" is not {}",
            field.name,
            clip(&text),
            field.expected()
        );
        let record = report.cell(
            row,
            Some(column),
            field,
            Some(text),
            ErrorCode::TypeError,
            message,
        );
        report.emit(record);
    }

    /// Checks the cast `value` of `cell` against the field's constraints and writes it (copied
    /// from the cell's text when the shortcut can), or writes the cell and reports a
    /// `constraint-error`.
    #[inline]
    fn write_checked(
        &self,
        row: u64,
        column: usize,
        cell: Cell<'_>,
        value: &Value<'_>,
        out: &mut Vec<u8>,
        report: &mut Reporter<'_>,
    ) {
        match self.field.check(value) {
            Ok(()) => {
                let copied = !matches!(value, Value::Null)
                    && matches!(cell, Cell::Text(t) if self.shortcut.copy(t, out));
                if !copied {
                    value.write_json(out);
                }
            }
            Err((constraint, message)) => {
                report.write_failing(cell, out);
                let record = ErrorRecord {
                    constraint: Some(constraint),
                    ..report.cell(
                        row,
                        Some(column),
                        self.field,
                        Some(cell.text()),
                        ErrorCode::ConstraintError,
                        message,
                    )
                };
                report.emit(record);
            }
        }
    }

    /// Remembers `value` for a `unique` field, reporting a `unique-error` if an earlier row had it.
    #[inline]
    fn remember(
        &mut self,
        row: u64,
        column: usize,
        cell: Cell<'_>,
        value: &Value<'_>,
        report: &mut Reporter<'_>,
    ) {
        let Some(first_rows) = self.first_rows.as_mut() else {
            return;
        };
        let seen = first_rows.insert_value(value, row);
        if report.keys.track || seen.is_some() {
            if let Some(fingerprint) = value.fingerprint() {
                let slot = i32::try_from(self.index).unwrap_or(i32::MAX);
                report.keys.note(slot, fingerprint, row, seen.is_some());
            }
        }
        let Some(first) = seen else {
            return;
        };
        let field = self.field;
        let text = cell.text();
        let message = format!(
            "{}: \"{}\" already appears in {}",
            field.name,
            clip(&text),
            row_name(first)
        );
        let record = report.cell(
            row,
            Some(column),
            field,
            Some(text),
            ErrorCode::UniqueError,
            message,
        );
        report.emit(record);
    }
}

impl PrimaryKey {
    /// Adds a key field's value to the current row's key; `false` when it has no fingerprint
    /// (the key is then incomplete, and not checked).
    #[inline]
    fn add_part(&mut self, value: &Value<'_>) -> bool {
        self.integer = match value {
            Value::Integer(i) => Some(*i),
            _ => None,
        };
        match value.fingerprint() {
            Some(f) => {
                self.parts.push(f);
                true
            }
            None => false,
        }
    }

    /// The key of a row whose key values all cast (the fields `key` of `slots`): an error if an
    /// earlier row had it.
    fn check(
        &mut self,
        key: &[usize],
        slots: &[Slot<'_>],
        row: u64,
        cells: &[Cell<'_>],
        report: &mut Reporter<'_>,
    ) {
        let fingerprint = match self.parts.as_slice() {
            [single] => *single,
            parts => composite_fingerprint(parts, &mut self.scratch),
        };
        let seen = match (self.parts.len(), self.integer) {
            (1, Some(i)) => self.first_rows.insert_integer(i, row),
            _ => self.first_rows.insert(fingerprint, row),
        };
        if report.keys.track || seen.is_some() {
            report
                .keys
                .note(PRIMARY_KEY_SLOT, fingerprint, row, seen.is_some());
        }
        let Some(first) = seen else {
            return;
        };
        let key: Vec<&Slot<'_>> = key.iter().map(|&i| &slots[i]).collect();
        let texts: Vec<String> = key
            .iter()
            .map(|s| {
                s.column
                    .and_then(|c| cells.get(c))
                    .map(Cell::text)
                    .unwrap_or_default()
            })
            .collect();
        let quoted: Vec<String> = texts.iter().map(|t| format!("\"{}\"", clip(t))).collect();
        if let [slot] = key.as_slice() {
            let message = format!(
                "{}: {} already appears in {} (primary key)",
                slot.field.name,
                quoted.join(", "),
                row_name(first)
            );
            let value = texts.into_iter().next();
            let record = report.cell(
                row,
                slot.column,
                slot.field,
                value,
                ErrorCode::PrimaryKey,
                message,
            );
            report.emit(record);
        } else {
            let names: Vec<&str> = key.iter().map(|s| s.field.name.as_str()).collect();
            let message = format!(
                "primary key ({}): {} already appears in {}",
                names.join(", "),
                quoted.join(", "),
                row_name(first)
            );
            report.emit(ErrorRecord {
                value: Some(clip(&texts.join(", ")).into_owned()),
                ..bare(row, ErrorCode::PrimaryKey, message)
            });
        }
    }
}

/// Whether a cell counts as empty for `blank-row`: no cell, `""` or a schema missing value.
fn is_blank(cell: &Cell<'_>, missing: &MissingValues) -> bool {
    match cell {
        Cell::Empty => true,
        Cell::Text(t) => t.is_empty() || missing.contains(t),
        _ => false,
    }
}

fn row_name(row: u64) -> String {
    if row == u64::from(u32::MAX) {
        "an earlier row".into()
    } else {
        format!("row {row}")
    }
}
