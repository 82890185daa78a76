//! The one table of a CSV/TSV file, record by record: the header phase first (the first
//! records are buffered until [`HeaderPhase`] decides the header), then each data record as a
//! row's JSON text with every column's type narrowed, or, for a templated file, through the
//! template. Rows are handed on in batches ([`Rows`]).

use std::io;

use super::records::{OwnedRecord, Record};
use super::row::Rows;
use crate::parse::formats;
use crate::parse::table::driver;
use crate::parse::table::header::{self, Buffered, HeaderPhase, Headerless};
use crate::parse::table::layout::{Fate, Resolution};
use crate::parse::table::sheet::{check_cell, check_rows, ColumnTyping, SheetBuilder, SheetId};
use crate::parse::template::validate::Validation;
use crate::parse::writers::json;
use crate::parse::LayoutOverride;
use crate::parse::{ParseEvent, ParseFailure, ParseLimits, SheetSummary};
use template::Cell;

type Sink<'s> = &'s mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>;

/// The table being read.
pub(super) struct Table<'l, 's, 'v> {
    pub sheet: SheetBuilder,
    /// The first records, until the header is decided.
    phase: Option<HeaderPhase<OwnedRecord>>,
    /// A template's field labels, for the header phase.
    labels: Vec<Vec<String>>,
    /// Records after a possible end of the table, until it is decided, and their bytes.
    held: Vec<Buffered<OwnedRecord>>,
    held_bytes: usize,
    /// Rows' JSON is built as bytes and checked to be UTF-8 a batch at a time: cheaper than
    /// checking each record and then slicing every cell out of it as `&str`.
    rows: Rows,
    limits: &'l ParseLimits,
    validation: Option<&'s mut Validation<'v>>,
}

impl<'l, 's, 'v> Table<'l, 's, 'v> {
    pub fn new(
        id: SheetId,
        limits: &'l ParseLimits,
        validation: Option<&'s mut Validation<'v>>,
        layout: &LayoutOverride,
    ) -> Self {
        let labels = validation
            .as_deref()
            .map(|v| header::template_labels(v.template()))
            .unwrap_or_default();
        let index = id.index;
        let mut sheet = SheetBuilder::new(id, ColumnTyping::Inferred, limits.max_columns);
        let phase = formats::start_sheet(layout, index, Headerless::Allowed, &mut sheet);
        Self {
            sheet,
            phase: Some(phase),
            labels,
            held: Vec::new(),
            held_bytes: 0,
            rows: Rows::default(),
            limits,
            validation,
        }
    }

    /// Reads record `number` (1-based, as a person counts the file's lines).
    #[inline]
    pub fn record(
        &mut self,
        record: &Record<'_>,
        number: u64,
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        let Some(phase) = self.phase.as_mut() else {
            return self.data_record(record, number, on_event);
        };
        let texts = if record.is_blank() {
            Vec::new()
        } else {
            (0..record.len())
                .map(|i| String::from_utf8_lossy(&record.bytes[record.range(i)]).into_owned())
                .collect()
        };
        if phase.push(number, texts, OwnedRecord::of(record)) {
            self.decide(on_event)?;
        }
        Ok(())
    }

    /// Ends the header phase: sets the header it decided and reads the records it held.
    fn decide(&mut self, on_event: Sink<'_>) -> Result<(), ParseFailure> {
        let data = driver::start_table(
            &mut self.phase,
            &self.labels,
            &mut self.sheet,
            self.validation.as_deref_mut(),
            on_event,
        )?;
        for buffered in data {
            self.data_record(&buffered.row.record(), buffered.number, on_event)?;
        }
        Ok(())
    }

    fn data_record(
        &mut self,
        record: &Record<'_>,
        number: u64,
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        let sheet = &mut self.sheet;
        // Blank lines and rows of empty fields carry nothing: skip them, but a template's
        // report names a blank row inside its table.
        let blank = record.is_blank();
        if blank && self.validation.is_none() {
            return Ok(());
        }
        let bytes = record.bytes;
        let cells = record.spans().iter().enumerate().map(|(c, &(start, end))| {
            (
                c,
                std::str::from_utf8(&bytes[start..end]).unwrap_or("\u{FFFD}"),
            )
        });
        match sheet.fate(number, blank, cells) {
            Fate::Data => {}
            Fate::Aside => return Ok(()),
            Fate::Held => return self.hold(record, number, on_event),
        }
        if let Some(v) = self.validation.as_deref_mut() {
            return templated_row(v, sheet, number, record, self.limits, on_event);
        }
        let limits = self.limits;
        let width = record.len();
        sheet.ensure_width(width)?;
        let label = record
            .spans()
            .first()
            .map_or(&[][..], |&(s, e)| &bytes[s..e]);
        sheet.note_row(number, label, width);
        // One scan tells whether any cell needs JSON escaping (most records: none).
        let escape = if record.quotes_enclose {
            json::needs_escape::<false>(bytes)
        } else {
            json::needs_escape::<true>(bytes)
        };
        // No cell can be longer than its record.
        let check_cells = bytes.len() > limits.max_cell_bytes;
        let cells = sheet.header_len().max(width);
        let row = &mut self.rows;
        row.start(bytes.len(), cells);
        let data_row = sheet.rows;
        for (&(start, end), column) in record.spans().iter().zip(&mut sheet.columns_acc) {
            let cell = &bytes[start..end];
            if cell.is_empty() {
                row.null();
                continue;
            }
            if check_cells {
                check_cell(cell.len(), limits.max_cell_bytes, &sheet.id.name, data_row)?;
            }
            column.observe_text(cell, data_row);
            if escape && json::needs_escape::<true>(cell) {
                row.escaped_string(cell, bytes.len(), cells);
            } else {
                row.string(record.padded, start, end);
            }
        }
        for _ in width..sheet.header_len() {
            row.null();
        }
        check_rows(sheet.rows + 1, limits.max_rows)?;
        sheet.rows += 1;
        if row.finish() {
            emit(row, sheet.rows, on_event)?;
        }
        Ok(())
    }

    /// Keeps record `number`, after a possible end of the table, until enough are held to
    /// decide whether they are data.
    #[cold]
    #[inline(never)]
    fn hold(
        &mut self,
        record: &Record<'_>,
        number: u64,
        on_event: Sink<'_>,
    ) -> Result<(), ParseFailure> {
        self.held_bytes += record.bytes.len();
        self.held.push(Buffered {
            number,
            row: OwnedRecord::of(record),
        });
        if self.sheet.hold_is_full(self.held_bytes) {
            self.release(on_event)?;
        }
        Ok(())
    }

    /// Decides the records held: read as data, or set aside (counted already).
    fn release(&mut self, on_event: Sink<'_>) -> Result<(), ParseFailure> {
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        if self.sheet.resolve() == Resolution::Data {
            for buffered in held {
                self.data_record(&buffered.row.record(), buffered.number, on_event)?;
            }
        }
        Ok(())
    }

    /// Ends the file: decides the header if the file was shorter than the header phase, hands
    /// on the last rows, and sums the sheet up (`None`: every line was blank).
    pub fn finish(mut self, on_event: Sink<'_>) -> Result<Option<SheetSummary>, ParseFailure> {
        self.decide(on_event)?;
        if self.sheet.holding() {
            self.release(on_event)?;
        }
        emit(&mut self.rows, self.sheet.rows, on_event)?;
        if let Some(v) = self.validation {
            v.finish_sheet(on_event)?;
        }
        if !self.sheet.has_header() {
            return Ok(None);
        }
        Ok(Some(self.sheet.finish()))
    }
}

/// One data record of a templated file through the template: its cells as text (lossy where
/// the bytes are not UTF-8), its original cells as the plain parse would store them.
fn templated_row(
    v: &mut Validation<'_>,
    sheet: &mut SheetBuilder,
    record_no: u64,
    record: &Record<'_>,
    limits: &ParseLimits,
    on_event: Sink<'_>,
) -> Result<(), ParseFailure> {
    let bytes = record.bytes;
    if bytes.len() > limits.max_cell_bytes {
        for &(start, end) in record.spans() {
            check_cell(
                end - start,
                limits.max_cell_bytes,
                &sheet.id.name,
                sheet.rows,
            )?;
        }
    }
    // The records read so far bound the data rows (rows dropped for errors count too).
    check_rows(record_no - 1, limits.max_rows)?;
    v.blank_rows_before(sheet, record_no, on_event)?;
    // Whole records are valid UTF-8 but for a file that only looked like UTF-8; its cells are
    // then each read lossily.
    let lossy: Vec<String>;
    let mut cells = v.cells();
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => cells.extend(
            record
                .spans()
                .iter()
                .map(|&(start, end)| text_cell(&text[start..end])),
        ),
        Err(_) => {
            lossy = record
                .spans()
                .iter()
                .map(|&(start, end)| String::from_utf8_lossy(&bytes[start..end]).into_owned())
                .collect();
            cells.extend(lossy.iter().map(|t| text_cell(t)));
        }
    }
    let original = |cells: &[Cell<'_>], _: &SheetBuilder, out: &mut String| {
        out.push('[');
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match cell {
                Cell::Text(t) => json::push_str(out, t),
                _ => out.push_str("null"),
            }
        }
        out.push(']');
    };
    driver::templated_row(v, sheet, record_no, cells, original, on_event)
}

fn text_cell(text: &str) -> Cell<'_> {
    if text.is_empty() {
        Cell::Empty
    } else {
        Cell::Text(text)
    }
}

/// Hands the waiting rows on, numbered: they are the last of the sheet's `rows_so_far` rows.
fn emit(rows: &mut Rows, rows_so_far: u64, on_event: Sink<'_>) -> Result<(), ParseFailure> {
    let mut next = rows_so_far - rows.waiting() as u64;
    rows.flush(|values| {
        let index = next;
        next += 1;
        on_event(ParseEvent::Row {
            sheet: 0,
            index,
            values,
        })
    })
    .map_err(ParseFailure::sink)
}
