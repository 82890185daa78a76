//! Turning an uploaded file into rows. [`parse_file`] decides what the file really is from its
//! bytes, runs the CSV/TSV or workbook parser, and reports sheets and rows through a callback as
//! they are read, so nothing but the current row is held. It runs inside an isolated child
//! process ([`isolate`]) because calamine can abort or balloon on hostile files; the parent
//! only sees events, a summary, or a [`ParseFailure`] with a stable code.

mod background_writer;
mod cfb_check;
pub mod csv;
mod delimiter;
mod encoding;
mod error;
mod excel;
mod excel_value;
pub mod isolate;
mod json;
mod limits;
mod sheet;
mod sniff;
mod xls_check;
mod zip_check;

use std::borrow::Cow;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use error::ParseFailure;
pub use limits::ParseLimits;
pub use shared::domain::{ColumnType, FileFormat, TaskErrorCode};

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
    /// Data rows, the header excluded.
    pub rows: u64,
    pub columns: Vec<String>,
    pub column_types: Vec<ColumnType>,
    /// Columns beyond the header, named `column_N`, that ragged rows brought.
    pub extra_columns: u32,
}

/// The outcome of a successful parse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParseSummary {
    pub sheets: Vec<SheetSummary>,
    pub rows_total: u64,
    /// Workbook parts that could not be read (chart sheets, macro sheets), in words.
    pub skipped_parts: Vec<String>,
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
    match sniff::content(path)? {
        sniff::Content::Text => csv::parse(path, format == FileFormat::Tsv, limits, on_event),
        sniff::Content::Zip => {
            let kind = zip_check::check(path, limits)?;
            excel::parse(path, kind.into(), limits, on_event)
        }
        sniff::Content::Cfb => {
            // An encrypted xlsx is a compound file without a workbook stream, so calamine
            // refuses it; only then is the whole file scanned for the encryption streams.
            let parsed = xls_check::check(path, limits)
                .and_then(|()| excel::parse(path, excel::Book::Xls, limits, on_event));
            match parsed {
                Err(_) if cfb_check::is_encrypted(path)? => Err(ParseFailure::password_protected()),
                parsed => parsed,
            }
        }
    }
}
