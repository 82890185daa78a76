//! Turning an uploaded file into rows. [`parse_file`] decides what the file really is from its
//! bytes, runs the CSV/TSV or workbook parser, and reports sheets and rows through a callback as
//! they are read, so nothing but the current row is held. It runs inside an isolated child
//! process ([`isolate`]) because calamine can abort or balloon on hostile files; the parent
//! only sees events, a summary, or a [`ParseFailure`] with a stable code.
//!
//! Grouped by concern: the formats and their readers ([`formats`]), the hostile-file checks run
//! before a reader opens a file ([`checks`]), the table every reader feeds: header, layout,
//! columns ([`table`]), import templates ([`template`]), how rows are written out
//! ([`writers`]), and the parse child ([`isolate`]).

mod checks;
mod error;
pub mod faults;
mod formats;
pub mod isolate;
mod limits;
mod table;
pub(crate) mod template;
mod writers;

use std::borrow::Cow;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
pub use shared::domain::layout_override::LayoutOverride;
use shared::domain::review::Review;
pub use shared::domain::task_result::SheetLayout;

pub use error::ParseFailure;
pub use formats::csv;
pub use limits::ParseLimits;
pub use shared::domain::ErrorRecord;
pub use shared::domain::{ColumnType, FileFormat, TaskErrorCode};
pub use template::job::TemplateJob;
pub use template::validate::{self, ValidationReport};

use checks::{cfb, xls, zip};
use formats::{excel, sniff};

/// What the parser reports while it reads, in order: for each sheet a `SheetStart`, its rows,
/// then a `SheetEnd` carrying the sheet's final columns (ragged rows can add some at the end).
#[derive(Debug, Clone, PartialEq)]
pub enum ParseEvent<'a> {
    SheetStart {
        index: u32,
        name: String,
        hidden: bool,
    },
    /// One data row. `values` is a JSON array text with one element per column (a row may be
    /// shorter than the sheet's final `columns`; missing trailing values are null). CSV cells are
    /// strings or null, to be typed at read time by [`shared::domain::column_type::render`];
    /// workbook cells are already typed. The text is borrowed from the parser's row buffer
    /// (no allocation per row on the hot path); [`ParseEvent::into_owned`] keeps it.
    Row {
        sheet: u32,
        index: u64,
        values: Cow<'a, str>,
    },
    SheetEnd(SheetSummary),
    /// A templated file: one error record (up to the job's cap).
    Invalid(ErrorRecord),
    /// A templated file: the original cells (a JSON array) of a row that had errors, at its
    /// 1-based row number in the file (up to the job's cap).
    Rejected {
        sheet: u32,
        row: u64,
        cells: Cow<'a, str>,
        /// How many of the sheet's rows were stored before it: where it sits among them (with
        /// `keep_invalid_rows`, its own index), or would join them once corrected.
        stored: u64,
    },
    /// A templated file: one bucket of a key set of its key index
    /// ([`shared::domain::key_index`]), sent when the validated sheet ends.
    Keys {
        sheet: u32,
        slot: i32,
        bucket: u32,
        buckets: u32,
        entries: Vec<u8>,
    },
    /// A templated file whose mapping needs a person: the review document, sent once at the
    /// end instead of rows (none were sent) and the validation's counts.
    NeedsReview(Review),
    /// A templated file with validation hooks: where the [`ParseEvent::Row`] that follows
    /// comes from (its 1-based row number in the file) and the errors the template found in it
    /// (none: valid), which the hooks' stage in the consumer needs to ask about it, to take an
    /// error back when a hook rewrites its cell, and to keep the counts.
    Origin {
        row: u64,
        faults: faults::Faults,
    },
}

impl ParseEvent<'_> {
    /// The event with its row text copied out of the parser's buffer, for callers that keep
    /// events beyond the callback.
    pub fn into_owned(self) -> ParseEvent<'static> {
        match self {
            ParseEvent::SheetStart {
                index,
                name,
                hidden,
            } => ParseEvent::SheetStart {
                index,
                name,
                hidden,
            },
            ParseEvent::Row {
                sheet,
                index,
                values,
            } => ParseEvent::Row {
                sheet,
                index,
                values: Cow::Owned(values.into_owned()),
            },
            ParseEvent::SheetEnd(summary) => ParseEvent::SheetEnd(summary),
            ParseEvent::Invalid(error) => ParseEvent::Invalid(error),
            ParseEvent::Rejected {
                sheet,
                row,
                cells,
                stored,
            } => ParseEvent::Rejected {
                sheet,
                row,
                cells: Cow::Owned(cells.into_owned()),
                stored,
            },
            ParseEvent::Keys {
                sheet,
                slot,
                bucket,
                buckets,
                entries,
            } => ParseEvent::Keys {
                sheet,
                slot,
                bucket,
                buckets,
                entries,
            },
            ParseEvent::NeedsReview(review) => ParseEvent::NeedsReview(review),
            ParseEvent::Origin { row, faults } => ParseEvent::Origin { row, faults },
        }
    }
}

/// One sheet's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SheetSummary {
    /// Position among the sheets read (0 for CSV/TSV).
    pub index: u32,
    pub name: String,
    pub hidden: bool,
    /// Data rows, the header excluded (a templated sheet: the rows stored).
    pub rows: u64,
    /// The 1-based row number of the header in the file (the rows above it are not data); 0
    /// for a text file without a header row, whose first row is data.
    #[serde(default)]
    pub header_row: u64,
    pub columns: Vec<String>,
    pub column_types: Vec<ColumnType>,
    /// Columns beyond the header, named `column_N`, that ragged rows brought.
    pub extra_columns: u32,
    /// Where the table lies in the sheet: its header rows, data rows and every range set
    /// aside, which add up to the sheet's records.
    #[serde(default)]
    pub layout: SheetLayout,
    /// Data rows with more or fewer cells than the header (padded, or adding columns).
    #[serde(default)]
    pub ragged_rows: u64,
    /// The 1-based row of a totals row ending the table: kept as data, but left out of the
    /// column types.
    #[serde(default)]
    pub totals_row: Option<u64>,
}

/// The outcome of a successful parse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParseSummary {
    pub sheets: Vec<SheetSummary>,
    pub rows_total: u64,
    /// Workbook parts that could not be read (chart sheets, macro sheets), in words.
    pub skipped_parts: Vec<String>,
    /// A templated file: what validation found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationReport>,
}

/// Parses `path` in this process. `format` is what the upload was recorded as; the content
/// decides where the two disagree (a CSV named `.xlsx` is parsed as CSV, a zip holding an
/// xlsb is read as xlsb). Used inside the isolated child and by benchmarks.
pub fn parse_file(
    path: &Path,
    format: FileFormat,
    limits: &ParseLimits,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<ParseSummary, ParseFailure> {
    parse_with(
        path,
        format,
        limits,
        None,
        &LayoutOverride::default(),
        on_event,
    )
}

/// [`parse_file`] (or [`parse_templated`] with a `template`) with the header rows and table
/// ends a person chose, `layout`, instead of the ones detection would find.
pub fn parse_with_layout(
    path: &Path,
    format: FileFormat,
    limits: &ParseLimits,
    template: Option<&TemplateJob>,
    layout: &LayoutOverride,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<ParseSummary, ParseFailure> {
    match template {
        None => parse_with(path, format, limits, None, layout, on_event),
        Some(job) => templated(path, format, limits, job, layout, on_event),
    }
}

/// [`parse_file`] validating against a template: the chosen sheet's rows come out under the
/// template's fields, with error records and rejected rows as events and the counts in the
/// summary's `validation`. A mapping that needs a review ends with a
/// [`ParseEvent::NeedsReview`] instead, no rows and no `validation`.
pub fn parse_templated(
    path: &Path,
    format: FileFormat,
    limits: &ParseLimits,
    job: &TemplateJob,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<ParseSummary, ParseFailure> {
    templated(
        path,
        format,
        limits,
        job,
        &LayoutOverride::default(),
        on_event,
    )
}

fn templated(
    path: &Path,
    format: FileFormat,
    limits: &ParseLimits,
    job: &TemplateJob,
    layout: &LayoutOverride,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<ParseSummary, ParseFailure> {
    let template = validate::Validation::compile(job)?;
    let mut validation = validate::Validation::new(&template, job)?;
    let mut summary = parse_with(
        path,
        format,
        limits,
        Some(&mut validation),
        layout,
        on_event,
    )?;
    let wanted = validation.sheet_wanted().to_owned();
    match validation.outcome() {
        Some(validate::Checked::Report(report)) => summary.validation = Some(report),
        Some(validate::Checked::NeedsReview(mut review)) => {
            // The sheet was read to its end: the review shows where its table lies.
            if let Some(sheet) = summary.sheets.iter().find(|s| s.name == review.sheet) {
                review.sheet_index = Some(sheet.index);
                review.layout = Some(sheet.layout.clone());
            }
            on_event(ParseEvent::NeedsReview(review)).map_err(ParseFailure::sink)?;
        }
        None => {
            return Err(ParseFailure::new(
                TaskErrorCode::ValidationFailed,
                format!("no sheet with a table to validate: the template wants {wanted}"),
            ))
        }
    }
    Ok(summary)
}

fn parse_with(
    path: &Path,
    format: FileFormat,
    limits: &ParseLimits,
    validation: Option<&mut validate::Validation<'_>>,
    layout: &LayoutOverride,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<ParseSummary, ParseFailure> {
    let read = formats::Reading {
        limits,
        validation,
        layout,
    };
    match sniff::content(path)? {
        sniff::Content::Text => csv::parse(path, format == FileFormat::Tsv, read, on_event),
        sniff::Content::Zip => {
            let kind = zip::check(path, limits)?;
            excel::parse(path, kind.into(), read, on_event)
        }
        sniff::Content::Cfb => {
            // An encrypted xlsx is a compound file without a workbook stream, so calamine
            // refuses it; only then is the whole file scanned for the encryption streams.
            let parsed = xls::check(path, limits)
                .and_then(|()| excel::parse(path, excel::Book::Xls, read, on_event));
            match parsed {
                Err(_) if cfb::is_encrypted(path)? => Err(ParseFailure::password_protected()),
                parsed => parsed,
            }
        }
    }
}
