//! Validating a file's rows against a template as they stream through the parser: each row is
//! cast field by field and written as the JSON array a templated upload stores (typed values
//! in field order; a failing cell's original value, so a kept invalid row loses nothing), with
//! one [`ErrorRecord`] per problem and running [`Counts`]. `unique` and `primaryKey` hold
//! across all rows of the file, exactly, in memory proportional to the rows: a 128-bit xxh3
//! fingerprint of each typed value (a composite key: of its values' fingerprints) with the
//! first row it was seen in, 20 bytes an entry.
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

mod mapping;
mod record;

pub use mapping::{map_columns, mapping, MappedField, Mapping, MatchKind};
pub use record::{Counts, ErrorCode, ErrorRecord};

use std::collections::HashMap;

use super::cell::Cell;
use super::check::clip;
use super::fingerprint::FirstRows;
use super::value::{composite_fingerprint, MissingValues};
use super::{Field, Template};

/// Validates the rows of one file (one sheet) against a template.
pub struct RowValidator<'t> {
    template: &'t Template,
    header: Vec<String>,
    mapping: Mapping,
    /// Per field: whether it is part of the primary key.
    in_key: Vec<bool>,
    /// Per field with `unique`: where each value first appeared.
    unique: Vec<Option<FirstRows>>,
    /// The primary key's first rows; `None` without a key or with an unmapped key field.
    primary: Option<FirstRows>,
    key_parts: Vec<u128>,
    scratch: Vec<u8>,
    counts: Counts,
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
        let mapping: Mapping = (0..template.fields.len())
            .map(|i| {
                let c = mapping
                    .get(i)
                    .copied()
                    .flatten()
                    .filter(|&c| c < header.len())?;
                (!std::mem::replace(&mut taken[c], true)).then_some(c)
            })
            .collect();
        let mut in_key = vec![false; template.fields.len()];
        for &i in &template.primary_key {
            in_key[i] = true;
        }
        let key_mapped = template.primary_key.iter().all(|&i| mapping[i].is_some());
        let mut validator = RowValidator {
            template,
            header: header.iter().map(|h| h.to_string()).collect(),
            unique: template
                .fields
                .iter()
                .map(|f| f.unique.then(FirstRows::default))
                .collect(),
            primary: (!template.primary_key.is_empty() && key_mapped).then(FirstRows::default),
            mapping,
            in_key,
            key_parts: Vec::new(),
            scratch: Vec::new(),
            counts: Counts::default(),
        };
        let mut records = Vec::new();
        validator.label_errors(header_row, &mut |r| records.push(r));
        (validator, records)
    }

    fn label_errors(&mut self, header_row: u64, on_error: &mut dyn FnMut(ErrorRecord)) {
        let template = self.template;
        for (field, column) in template.fields.iter().zip(self.mapping.clone()) {
            if column.is_none() {
                let mut labels = vec![format!("\"{}\"", field.name)];
                labels.extend(field.title.iter().map(|t| format!("\"{t}\"")));
                labels.extend(field.alternate_names.iter().map(|a| format!("\"{a}\"")));
                let message = format!(
                    "{}: no column of the header is headed {}",
                    field.name,
                    labels.join(" or ")
                );
                self.emit(
                    on_error,
                    self.record(
                        header_row,
                        None,
                        Some(field),
                        None,
                        ErrorCode::MissingLabel,
                        message,
                    ),
                );
            }
        }
        // Columns by header text, in column order (a header may have thousands of columns).
        let mut columns_of: HashMap<&str, Vec<usize>> = HashMap::new();
        for (c, text) in self.header.iter().enumerate() {
            if !text.is_empty() {
                columns_of.entry(text.as_str()).or_default().push(c);
            }
        }
        let mut duplicates: Vec<(usize, usize, String)> = Vec::new();
        for (text, same) in &columns_of {
            let field_of = |c: usize| self.mapping.iter().position(|m| *m == Some(c));
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
            let record = self.record(
                header_row,
                Some(c),
                Some(&template.fields[field]),
                None,
                ErrorCode::DuplicateLabel,
                message,
            );
            self.emit(on_error, record);
        }
    }

    /// Reserves room for the unique and primary-key values of `rows` more rows (when the
    /// caller knows the size, e.g. a sheet's dimension), so the sets do not grow by steps.
    pub fn reserve(&mut self, rows: usize) {
        for set in self.unique.iter_mut().flatten() {
            set.reserve(rows);
        }
        if let Some(set) = &mut self.primary {
            set.reserve(rows);
        }
    }

    /// The totals so far, label errors included.
    pub fn counts(&self) -> &Counts {
        &self.counts
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
        let template = self.template;
        if cells.iter().all(|c| is_blank(c, &template.missing_values)) {
            out.push(b'[');
            for i in 0..template.fields.len() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"null");
            }
            out.push(b']');
            self.emit(
                on_error,
                self.record(
                    row,
                    None,
                    None,
                    None,
                    ErrorCode::BlankRow,
                    "the row is blank".into(),
                ),
            );
            self.counts.rows_rejected += 1;
            return false;
        }
        let errors_before = self.counts.errors_total;
        self.key_parts.clear();
        let mut key_complete = self.primary.is_some();
        out.push(b'[');
        for (i, field) in template.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let Some(column) = self.mapping[i] else {
                out.extend_from_slice(b"null");
                continue;
            };
            let Some(&cell) = cells.get(column) else {
                out.extend_from_slice(b"null");
                key_complete &= !self.in_key[i];
                let message = format!(
                    "{}: the row ends before column {} (\"{}\")",
                    field.name,
                    column + 1,
                    self.header[column]
                );
                self.emit(
                    on_error,
                    self.record(
                        row,
                        Some(column),
                        Some(field),
                        None,
                        ErrorCode::MissingCell,
                        message,
                    ),
                );
                continue;
            };
            let value = match field.cast(cell) {
                Ok(value) => value,
                Err(_) => {
                    cell.write_json(out);
                    key_complete &= !self.in_key[i];
                    let text = cell.text();
                    let message = format!(
                        "{}: \"{}\" is not {}",
                        field.name,
                        clip(&text),
                        field.expected()
                    );
                    self.emit(
                        on_error,
                        self.record(
                            row,
                            Some(column),
                            Some(field),
                            Some(text),
                            ErrorCode::TypeError,
                            message,
                        ),
                    );
                    continue;
                }
            };
            match field.check(&value) {
                Ok(()) => value.write_json(out),
                Err((constraint, message)) => {
                    cell.write_json(out);
                    let record = self.record(
                        row,
                        Some(column),
                        Some(field),
                        Some(cell.text()),
                        ErrorCode::ConstraintError,
                        message,
                    );
                    self.emit(
                        on_error,
                        ErrorRecord {
                            constraint: Some(constraint),
                            ..record
                        },
                    );
                }
            }
            if !field.unique && !self.in_key[i] {
                continue;
            }
            let fingerprint = value.fingerprint();
            if let (Some(first_rows), Some(f)) = (&mut self.unique[i], fingerprint) {
                if let Some(first) = first_rows.insert(f, row) {
                    let text = cell.text();
                    let message = format!(
                        "{}: \"{}\" already appears in {}",
                        field.name,
                        clip(&text),
                        row_name(first)
                    );
                    self.emit(
                        on_error,
                        self.record(
                            row,
                            Some(column),
                            Some(field),
                            Some(text),
                            ErrorCode::UniqueError,
                            message,
                        ),
                    );
                }
            }
            if self.in_key[i] {
                match fingerprint {
                    Some(f) => self.key_parts.push(f),
                    None => key_complete = false,
                }
            }
        }
        out.push(b']');
        for (column, cell) in cells.iter().enumerate().skip(self.header.len()) {
            let text = cell.text();
            let message = format!(
                "column {}: the row has more cells than the header",
                column + 1
            );
            self.emit(
                on_error,
                self.record(row, None, None, Some(text), ErrorCode::ExtraCell, message),
            );
        }
        if key_complete {
            self.check_key(row, cells, on_error);
        }
        let valid = self.counts.errors_total == errors_before;
        if valid {
            self.counts.rows_valid += 1;
        } else {
            self.counts.rows_rejected += 1;
        }
        valid
    }

    /// The primary key of a row whose key values all cast: an error if an earlier row had it.
    fn check_key(&mut self, row: u64, cells: &[Cell<'_>], on_error: &mut dyn FnMut(ErrorRecord)) {
        let template = self.template;
        let fingerprint = match self.key_parts.as_slice() {
            [single] => *single,
            parts => composite_fingerprint(parts, &mut self.scratch),
        };
        let Some(first) = self
            .primary
            .as_mut()
            .and_then(|p| p.insert(fingerprint, row))
        else {
            return;
        };
        let key = &template.primary_key;
        let texts: Vec<String> = key
            .iter()
            .map(|&i| {
                self.mapping[i]
                    .and_then(|c| cells.get(c))
                    .map(Cell::text)
                    .unwrap_or_default()
            })
            .collect();
        let quoted: Vec<String> = texts.iter().map(|t| format!("\"{}\"", clip(t))).collect();
        if let [i] = key.as_slice() {
            let field = &template.fields[*i];
            let message = format!(
                "{}: {} already appears in {} (primary key)",
                field.name,
                quoted.join(", "),
                row_name(first)
            );
            let column = self.mapping[*i];
            self.emit(
                on_error,
                self.record(
                    row,
                    column,
                    Some(field),
                    texts.into_iter().next(),
                    ErrorCode::PrimaryKey,
                    message,
                ),
            );
        } else {
            let names: Vec<&str> = key
                .iter()
                .map(|&i| template.fields[i].name.as_str())
                .collect();
            let message = format!(
                "primary key ({}): {} already appears in {}",
                names.join(", "),
                quoted.join(", "),
                row_name(first)
            );
            self.emit(
                on_error,
                self.record(
                    row,
                    None,
                    None,
                    Some(texts.join(", ")),
                    ErrorCode::PrimaryKey,
                    message,
                ),
            );
        }
    }

    fn record(
        &self,
        row: u64,
        column: Option<usize>,
        field: Option<&Field>,
        value: Option<String>,
        code: ErrorCode,
        message: String,
    ) -> ErrorRecord {
        ErrorRecord {
            row,
            column: column.map(|c| self.header[c].clone()),
            field: field.map(|f| f.name.clone()),
            value: value.map(|v| clip(&v).into_owned()),
            code,
            constraint: None,
            message,
        }
    }

    fn emit(&mut self, on_error: &mut dyn FnMut(ErrorRecord), record: ErrorRecord) {
        self.counts.add(&record);
        on_error(record);
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
