//! Validation against an import template inside the streaming parse: the glue between the
//! format readers (which find the header and hand over each data row's cells) and the template
//! engine ([`template`]), which types each cell, checks its constraints and writes the
//! row under the template's fields. What the engine finds leaves the child as events: each error
//! record ([`ParseEvent::Invalid`], up to the job's cap) and each rejected row's original cells
//! ([`ParseEvent::Rejected`], capped alike), while the counts in the [`ValidationReport`] stay
//! exact past the caps. Which rows are stored follows the policy: valid ones always, invalid
//! ones with `keep_invalid_rows` (a rejected file's valid rows are kept, unserved, for the
//! corrections that may complete it). When the sheet ends, its key index goes too
//! ([`ParseEvent::Keys`]): every unique and primary-key value with the rows that hold it, for
//! corrections to re-check uniqueness without reading the file again.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io;

use serde::{Deserialize, Serialize};
use shared::domain::review::Review;
pub use shared::domain::task_result::{MappingEntry, SkippedSheet};
use shared::domain::{key_index, ColumnType, ErrorRecord, OnInvalid};
use template::validate::{self as engine, RowValidator};
use template::{Cell, FieldType, Template};

use super::job::TemplateJob;
use super::review::{chosen_mapping, Sampling};
use crate::parse::faults::{Fault, Faults};
use crate::parse::table::sheet::SheetBuilder;
use crate::parse::{ParseEvent, ParseFailure, TaskErrorCode};

/// The bytes of rejected rows' cells one file may send, besides the count cap.
const MAX_REJECTED_BYTES: usize = 16 << 20;

/// What validating a file came to.
#[derive(Debug)]
pub enum Checked {
    Report(ValidationReport),
    /// The mapping needs a person: nothing was checked or stored.
    NeedsReview(Review),
}

/// The outcome of validating a file: exact counts, whatever the caps let through.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ValidationReport {
    /// The sheet validated, and the 1-based row of its header.
    pub sheet: u32,
    pub header_row: u64,
    /// The header texts as in the file: the columns of the rejected-rows export.
    pub source_columns: Vec<String>,
    /// Workbook sheets read before the one validated and passed over: a cover page with no
    /// table, or a table none of whose columns the template names.
    #[serde(default)]
    pub skipped_sheets: Vec<SkippedSheet>,
    pub mapping: Vec<MappingEntry>,
    pub rows_valid: u64,
    pub rows_rejected: u64,
    pub errors_total: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    pub errors_by_field: BTreeMap<String, u64>,
    /// Fewer error records (or rejected rows) were sent than were found.
    pub errors_truncated: bool,
}

type Sink<'s> = &'s mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>;

/// What became of one checked row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub valid: bool,
    /// The policy stores it.
    pub store: bool,
}

/// The validation of one file.
pub(crate) struct Validation<'t> {
    template: &'t Template,
    job: &'t TemplateJob,
    sheet_pattern: Option<glob::Pattern>,
    validator: Option<RowValidator<'t>>,
    report: Option<ValidationReport>,
    /// The review the mapping needs, instead of a report.
    review: Option<Sampling>,
    /// The sheet being read, whether another one follows it, and the sheets passed over.
    sheet_name: String,
    more_sheets: bool,
    passed_over: bool,
    skipped_sheets: Vec<SkippedSheet>,
    errors_sent: u32,
    rejected_sent: u32,
    rejected_bytes: usize,
    /// The current row as the template's JSON array, and as the file's original cells.
    typed: Vec<u8>,
    original: String,
    /// The memory of the rows' cells, lent to the reader for each row ([`Validation::cells`]).
    spare_cells: Vec<Cell<'static>>,
    /// The last row of the sheet checked (the header's row at first), and how many cells the
    /// header has.
    last_row: u64,
    header_width: usize,
    /// The rows of the validated sheet stored so far.
    stored_rows: u64,
    /// The errors of the row checked last, when a hooked template's consumer needs them.
    last_faults: Faults,
}

impl<'t> Validation<'t> {
    pub fn new(template: &'t Template, job: &'t TemplateJob) -> Result<Self, ParseFailure> {
        let sheet_pattern = job
            .sheet
            .as_deref()
            .map(glob::Pattern::new)
            .transpose()
            .map_err(|e| {
                ParseFailure::new(
                    TaskErrorCode::ValidationFailed,
                    format!("the template's sheet pattern cannot be used: {e}"),
                )
            })?;
        Ok(Self {
            template,
            job,
            sheet_pattern,
            validator: None,
            report: None,
            review: None,
            sheet_name: String::new(),
            more_sheets: false,
            passed_over: false,
            skipped_sheets: Vec::new(),
            errors_sent: 0,
            rejected_sent: 0,
            rejected_bytes: 0,
            typed: Vec::new(),
            original: String::new(),
            spare_cells: Vec::new(),
            last_row: 0,
            header_width: 0,
            stored_rows: 0,
            last_faults: Faults::default(),
        })
    }

    /// Compiles the job's schema (the api checked it when it was stored; a failure here means a
    /// template written by another version of the engine).
    pub fn compile(job: &TemplateJob) -> Result<Template, ParseFailure> {
        let mut template = template::compile(&job.schema).map_err(|problems| {
            let first = problems
                .first()
                .map(|p| format!("{}: {}", p.pointer, p.message))
                .unwrap_or_default();
            ParseFailure::new(
                TaskErrorCode::ValidationFailed,
                format!("the template cannot be applied: {first}"),
            )
        })?;
        template.learn_values(&job.values);
        Ok(template)
    }

    /// Whether to read the workbook sheet `name` (`more`: other sheets follow it): the one a
    /// review was answered for, else the first that matches the template's `sheet`, else, when
    /// it names none, each in turn until one has a table with a column the template names (the
    /// last sheet is taken whatever its columns). Sheets after the validated one are not read.
    pub fn wants_sheet(&mut self, name: &str, more: bool) -> bool {
        if self.report.is_some() || self.review.is_some() {
            return false;
        }
        let wanted = match (&self.job.confirmed_sheet, &self.sheet_pattern) {
            (Some(sheet), _) => sheet == name,
            (None, Some(p)) => p.matches(name),
            (None, None) => true,
        };
        if wanted {
            self.reading_sheet(name, more);
        }
        wanted
    }

    /// The sheet `name` is read next (`more`: others follow it).
    pub fn reading_sheet(&mut self, name: &str, more: bool) {
        self.sheet_name = name.to_owned();
        self.more_sheets = more;
        self.passed_over = false;
    }

    /// Whether a sheet may be passed over for a later one: the template names none, and one
    /// follows.
    fn may_pass_over(&self) -> bool {
        self.more_sheets && self.sheet_pattern.is_none() && self.job.confirmed_sheet.is_none()
    }

    /// What the validation came to: a report, a review, or nothing (no sheet matched, or the
    /// file had no header).
    pub fn outcome(self) -> Option<Checked> {
        match (self.report, self.review) {
            (_, Some(review)) => Some(Checked::NeedsReview(review.into_review(self.template))),
            (Some(report), None) => Some(Checked::Report(report)),
            (None, None) => None,
        }
    }

    /// The template, whose field names help find the header.
    pub fn template(&self) -> &'t Template {
        self.template
    }

    /// The template's sheet pattern, for the message when no sheet matched.
    pub fn sheet_wanted(&self) -> &str {
        self.job.sheet.as_deref().unwrap_or("the first sheet")
    }

    /// Starts validating `sheet`, whose header is `header` on 1-based row `header_row`: maps the
    /// fields to columns (by the header texts, the texts learned for the template and the
    /// columns' first values, `samples`), sends the label errors, and makes the template's
    /// fields the sheet's columns. A mapping that needs a review instead starts sampling the
    /// rows for it, and no row is checked or stored.
    pub fn start_sheet(
        &mut self,
        sheet: &mut SheetBuilder,
        header: &[String],
        header_row: u64,
        samples: &[Vec<String>],
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        let texts: Vec<&str> = header.iter().map(String::as_str).collect();
        let evidence = engine::Evidence {
            learned: &self.job.learned,
            samples,
        };
        let mut mapped = chosen_mapping(self.template, self.job, &texts)
            .unwrap_or_else(|| engine::map_columns_with(self.template, &texts, evidence));
        if self.may_pass_over() && mapped.iter().all(|m| m.column.is_none()) {
            self.passed_over = true;
            self.skipped_sheets.push(SkippedSheet {
                name: self.sheet_name.clone(),
                reason: "no_matching_columns".into(),
            });
            return Ok(());
        }
        if let Some(reason) = engine::review_reason(self.template, &mapped) {
            // The review asks anyway: fill what names did not with what values suggest.
            engine::values::suggest_by_values(self.template, samples, &mut mapped);
            self.review = Some(Sampling::new(
                reason,
                self.template,
                &self.sheet_name,
                header,
                header_row,
                &mapped,
            ));
            return Ok(());
        }
        let mapping: Vec<Option<usize>> = mapped.iter().map(|m| m.column).collect();
        let (validator, label_errors) =
            RowValidator::new(self.template, &texts, mapping, header_row);
        self.report = Some(ValidationReport {
            sheet: sheet.id.index,
            header_row,
            source_columns: header.to_vec(),
            skipped_sheets: std::mem::take(&mut self.skipped_sheets),
            mapping: mapped
                .iter()
                .zip(&self.template.fields)
                .map(|(m, field)| MappingEntry {
                    field: field.name.clone(),
                    column: m.column.and_then(|i| header.get(i).cloned()),
                    column_index: m.column,
                    how: m.how.map(|h| h.as_str().to_owned()),
                    confidence: m.confidence,
                })
                .collect(),
            ..ValidationReport::default()
        });
        self.validator = Some(validator);
        self.last_row = header_row;
        self.header_width = header.len();
        sheet.set_template_columns(
            self.template
                .fields
                .iter()
                .map(|f| f.name.clone())
                .collect(),
            self.template
                .fields
                .iter()
                .map(|f| column_type(f.field_type))
                .collect(),
        );
        for record in label_errors {
            self.send_error(sheet.id.index, record, on_event)?;
        }
        Ok(())
    }

    /// Validates one data row given as cells in file column order, `row` being its 1-based row
    /// number in the file, and sends its error records. The caller then sends its original
    /// cells if it is invalid ([`Validation::reject`]) and stores it if the policy says so
    /// ([`Validation::store`]).
    pub fn check(
        &mut self,
        sheet: u32,
        row: u64,
        cells: &[Cell<'_>],
        on_event: Sink<'_>,
    ) -> Result<Verdict, ParseFailure> {
        if let Some(review) = self.review.as_mut() {
            review.sample(self.template, cells);
        }
        let Some(validator) = self.validator.as_mut() else {
            return Ok(Verdict {
                valid: true,
                store: false,
            });
        };
        self.last_row = row;
        self.typed.clear();
        let mut found = Vec::new();
        let valid = validator.row(row, cells, &mut self.typed, &mut |e| found.push(e));
        if self.job.hooked {
            let template = self.template;
            self.last_faults.0.clear();
            self.last_faults.0.extend(
                found
                    .iter()
                    .map(|e| Fault::of(template, e.field.as_deref(), e.code)),
            );
        }
        // A hooked file's row whose only errors are duplicates goes on to the hooks too: a hook
        // that takes the earlier row's value away makes it valid, and the consumer, which
        // decides that once the whole file's keys are known, drops it if it stays invalid.
        let keep_all = self.job.on_invalid == OnInvalid::KeepInvalidRows;
        let store = if self.job.hooked {
            self.last_faults.may_be_stored(keep_all)
        } else {
            keep_all || valid
        };
        for record in found {
            self.send_error(sheet, record, on_event)?;
        }
        Ok(Verdict { valid, store })
    }

    /// An empty vector for a row's cells, to hand back with [`Validation::recycle`]: a row's
    /// cells borrow the reader's buffer, so no vector of them outlives the row, but the memory
    /// can (an allocation and a free per row were 2.5 % of a validating CSV parse).
    pub fn cells<'a>(&mut self) -> Vec<Cell<'a>> {
        reuse(std::mem::take(&mut self.spare_cells))
    }

    /// Takes back the vector of [`Validation::cells`].
    pub fn recycle(&mut self, cells: Vec<Cell<'_>>) {
        self.spare_cells = reuse(cells);
    }

    /// How many cells the sheet's header has.
    pub fn header_width(&self) -> usize {
        self.header_width
    }

    /// A workbook has no cells for an empty row, so the rows between the last one checked and
    /// `row` were blank: each is checked (and reported) as the blank row it is, as a text file's
    /// line of bare delimiters is.
    pub fn blank_rows_before(
        &mut self,
        sheet: &mut SheetBuilder,
        row: u64,
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        if self.validator.is_none() || self.last_row + 1 >= row {
            return Ok(());
        }
        let blank = vec![Cell::Empty; self.header_width];
        while self.validator.is_some() && self.last_row + 1 < row {
            let number = self.last_row + 1;
            let verdict = self.check(sheet.id.index, number, &blank, on_event)?;
            if !verdict.valid {
                self.reject(sheet.id.index, number, |out| out.push_str("[]"), on_event)?;
            }
            if verdict.store {
                self.store(sheet, on_event)?;
            }
        }
        Ok(())
    }

    /// Sends an invalid row's original cells (a JSON array, written by `original`), within the
    /// caps.
    pub fn reject(
        &mut self,
        sheet: u32,
        row: u64,
        original: impl FnOnce(&mut String),
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        if self.rejected_sent >= self.job.max_errors || self.rejected_bytes >= MAX_REJECTED_BYTES {
            return Ok(());
        }
        self.original.clear();
        original(&mut self.original);
        self.rejected_sent += 1;
        self.rejected_bytes += self.original.len();
        on_event(ParseEvent::Rejected {
            sheet,
            row,
            cells: Cow::Borrowed(&self.original),
            stored: self.stored_rows,
        })
        .map_err(ParseFailure::sink)
    }

    /// Stores the row just checked, under the template's fields, as the sheet's next row.
    pub fn store(
        &mut self,
        sheet: &mut SheetBuilder,
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        // simdutf8: with the row's non-ASCII text (names, addresses) std's check was 3.5 % of
        // the validating CSV parse child's time, this one is under 1 %.
        let values = simdutf8::basic::from_utf8(&self.typed).map_err(|_| {
            ParseFailure::new(
                TaskErrorCode::ParserCrashed,
                "the template engine wrote a row that is not UTF-8",
            )
        })?;
        if self.job.hooked {
            on_event(ParseEvent::Origin {
                row: self.last_row,
                faults: std::mem::take(&mut self.last_faults),
            })
            .map_err(ParseFailure::sink)?;
        }
        on_event(ParseEvent::Row {
            sheet: sheet.id.index,
            index: sheet.rows,
            values: Cow::Borrowed(values),
        })
        .map_err(ParseFailure::sink)?;
        sheet.rows += 1;
        self.stored_rows += 1;
        Ok(())
    }

    /// Ends the sheet: the engine's exact counts go into the report, and its key index is sent
    /// when the sheet has an error to correct. A sheet that was neither validated, reviewed nor
    /// passed over for its columns had no table.
    pub fn finish_sheet(&mut self, on_event: Sink<'_>) -> Result<(), ParseFailure> {
        if self.report.is_none() && self.review.is_none() && !self.passed_over {
            self.skipped_sheets.push(SkippedSheet {
                name: std::mem::take(&mut self.sheet_name),
                reason: "no_table".into(),
            });
        }
        let (Some(validator), Some(report)) = (self.validator.take(), self.report.as_mut()) else {
            return Ok(());
        };
        let counts = validator.counts();
        // Corrections only edit rows of the error report, so a sheet without errors never reads
        // its key index: not keeping it spared a clean 1M-row file 0.5 s of Postgres time in
        // the task's transaction (`bench templates`, BENCHMARKS.md) and 49 MB of child memory.
        // A hooked template's rows may get their errors from its hooks after the child: keep it.
        if counts.errors_total > 0 || self.job.hooked {
            send_keys(report.sheet, &validator, on_event)?;
        }
        report.rows_valid = counts.rows_valid;
        report.rows_rejected = counts.rows_rejected;
        report.errors_total = counts.errors_total;
        report.errors_by_code = counts
            .errors_by_code
            .iter()
            .map(|(code, n)| (code.to_string(), *n))
            .collect();
        report.errors_by_field = counts.errors_by_field.clone();
        report.errors_truncated = report.errors_total > u64::from(self.errors_sent)
            || report.rows_rejected > u64::from(self.rejected_sent);
        Ok(())
    }

    fn send_error(
        &mut self,
        sheet: u32,
        record: engine::ErrorRecord,
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        if self.errors_sent >= self.job.max_errors {
            return Ok(());
        }
        self.errors_sent += 1;
        on_event(ParseEvent::Invalid(report_record(sheet, record))).map_err(ParseFailure::sink)
    }
}

/// The engine's record, typed and without the sheet, as the report's.
pub(crate) fn report_record(sheet: u32, record: engine::ErrorRecord) -> ErrorRecord {
    ErrorRecord {
        sheet: i32::try_from(sheet).unwrap_or(i32::MAX),
        row: i64::try_from(record.row).unwrap_or(i64::MAX),
        column: record.column,
        field: record.field,
        value: record.value,
        code: record.code.as_str().to_owned(),
        constraint: record.constraint.map(|c| c.as_str().to_owned()),
        message: record.message,
        transformed: record.transformed,
    }
}

/// Values of a key set bucketed at a time when its index is sent: 2M, 64 MB as they are
/// grouped (a 1M-row file's keys go in one pass, a 10M-row file's in five).
const KEYS_PER_PASS: usize = 2 * 1024 * 1024;

/// Sends the validator's key index, a bucket a frame, each key set with at least one bucket.
/// A key set is read in passes of [`KEYS_PER_PASS`] values' buckets, so the child never holds
/// a second copy of a big file's keys (10M keys would be 240 MB more, past its memory limit).
fn send_keys(
    sheet: u32,
    validator: &RowValidator<'_>,
    on_event: Sink<'_>,
) -> Result<(), ParseFailure> {
    for slot in validator.key_slots() {
        let buckets = key_index::buckets_for(validator.key_count(slot));
        let per_pass = u32::try_from((KEYS_PER_PASS / key_index::PER_BUCKET).max(1)).unwrap_or(1);
        let mut first = 0;
        while first < buckets {
            let last = first.saturating_add(per_pass).min(buckets);
            let mut groups: Vec<Vec<(u128, u64)>> = vec![Vec::new(); (last - first) as usize];
            for (fingerprint, row) in validator.key_values(slot) {
                let bucket = key_index::bucket_of(fingerprint, buckets);
                if (first..last).contains(&bucket) {
                    groups[(bucket - first) as usize].push((fingerprint, row));
                }
            }
            for (bucket, mut group) in (first..).zip(groups) {
                on_event(ParseEvent::Keys {
                    sheet,
                    slot,
                    bucket,
                    buckets,
                    entries: key_index::encode(&mut group),
                })
                .map_err(ParseFailure::sink)?;
            }
            first = last;
        }
    }
    Ok(())
}

/// `cells` emptied, as a vector of cells of another lifetime in the same memory (collecting a
/// vector's own iterator into elements of the same size reuses its allocation).
fn reuse<'b>(mut cells: Vec<Cell<'_>>) -> Vec<Cell<'b>> {
    cells.clear();
    cells.into_iter().map(|_| Cell::Empty).collect()
}

/// How a template field's values are typed when read back.
fn column_type(t: FieldType) -> ColumnType {
    match t {
        FieldType::Integer | FieldType::Year => ColumnType::Integer,
        FieldType::Number => ColumnType::Decimal,
        FieldType::Boolean => ColumnType::Boolean,
        FieldType::Date => ColumnType::Date,
        FieldType::DateTime => ColumnType::DateTime,
        FieldType::String | FieldType::Time => ColumnType::Text,
        FieldType::Any => ColumnType::Mixed,
    }
}
