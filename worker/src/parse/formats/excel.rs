//! Workbooks through calamine: every worksheet in workbook order with its name and hidden flag,
//! cells emitted already typed (numbers, booleans, strings, error texts, ISO 8601 dates under
//! either date system, cached formula results). xlsx, xlsb and ods are streamed cell by cell
//! (calamine's cells readers; for ods the stream our calamine patch adds), so memory does not
//! grow with the sheet; xls has no such reader and is loaded a sheet at a time (BIFF8 holds at
//! most 65,536 rows a sheet, and the isolated child's memory limit bounds it).
//! Fully empty rows are skipped, as in CSV; merged cells keep their value in the top-left cell
//! because that is where Excel stores it. Each sheet's first rows go through the header phase
//! ([`HeaderPhase`]) before the rest streams.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader};
use std::path::Path;

use calamine::{Cell, Data, DataRef, Reader, SheetType, SheetVisible, Xls, Xlsb, Xlsx};

mod templated;

use super::excel_error::{open_error, read_failure, sheet_error, ReadError};
use super::excel_value::{header_text, push_value};
use crate::parse::checks::zip::ZipKind;
use crate::parse::formats::{self, Reading};
use crate::parse::table::driver;
use crate::parse::table::header::{self, Buffered, HeaderPhase, Headerless};
use crate::parse::table::layout::{Fate, Resolution};
use crate::parse::table::sheet::{check_rows, ColumnTyping, SheetBuilder, SheetId};
use crate::parse::template::validate::Validation;
use crate::parse::{LayoutOverride, ParseEvent, ParseFailure, ParseLimits, ParseSummary};

/// The workbook formats read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Book {
    Xlsx,
    Xlsb,
    Xls,
    Ods,
}

impl From<ZipKind> for Book {
    fn from(k: ZipKind) -> Self {
        match k {
            ZipKind::Xlsx => Book::Xlsx,
            ZipKind::Xlsb => Book::Xlsb,
            ZipKind::Ods => Book::Ods,
        }
    }
}

type Sink<'s> = &'s mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>;

/// Parses every worksheet of a workbook.
pub(crate) fn parse(
    path: &Path,
    book: Book,
    read: Reading<'_, '_, '_>,
    on_event: Sink<'_>,
) -> Result<ParseSummary, ParseFailure> {
    let Reading {
        limits,
        validation,
        layout,
    } = read;
    let file = File::open(path)
        .map_err(|e| ParseFailure::corrupt(format!("cannot read the file: {e}")))?;
    let rs = BufReader::with_capacity(64 * 1024, file);
    let labels = validation
        .as_deref()
        .map(|v| header::template_labels(v.template()))
        .unwrap_or_default();
    let mut run = Run {
        labels,
        limits,
        layout,
        on_event,
        summary: ParseSummary::default(),
        emitted: 0,
        row: String::new(),
        validation,
    };
    match book {
        Book::Xlsx => {
            let mut wb = Xlsx::new(rs).map_err(|e| open_error(&e))?;
            let worksheets = run.worksheets(wb.sheets_metadata());
            let last = worksheets.len().saturating_sub(1);
            for (i, worksheet) in worksheets.into_iter().enumerate() {
                if !run.wants(&worksheet, i < last) {
                    continue;
                }
                let id = run.start(&worksheet)?;
                let mut cells = wb
                    .worksheet_cells_reader(&id.name)
                    .map_err(|e| sheet_error(&id.name, &e))?;
                let sheet = run.stream(id, || cells.next_cell())?;
                run.finish(sheet)?;
            }
        }
        Book::Xlsb => {
            let mut wb = Xlsb::new(rs).map_err(|e| open_error(&e))?;
            let worksheets = run.worksheets(wb.sheets_metadata());
            let last = worksheets.len().saturating_sub(1);
            for (i, worksheet) in worksheets.into_iter().enumerate() {
                if !run.wants(&worksheet, i < last) {
                    continue;
                }
                let id = run.start(&worksheet)?;
                let mut cells = wb
                    .worksheet_cells_reader(&id.name)
                    .map_err(|e| sheet_error(&id.name, &e))?;
                let sheet = run.stream(id, || cells.next_cell())?;
                run.finish(sheet)?;
            }
        }
        Book::Xls => {
            let mut wb = Xls::new(rs).map_err(|e| open_error(&e))?;
            xls_sheets(&mut run, &mut wb)?;
        }
        Book::Ods => {
            // calamine's `Ods` loads every sheet whole (about 1.5 KB a row); the stream holds
            // one row.
            let mut book = calamine::OdsStream::new(rs).map_err(|e| open_error(&e))?;
            let mut sheets = book.sheets().map_err(|e| open_error(&e))?;
            // A stream does not tell whether another sheet follows: each is taken as the last
            // (the first sheet with a table is validated, whatever its columns).
            while let Some(worksheet) = sheets.next_sheet().map_err(|e| open_error(&e))? {
                if !run.wants(&worksheet, false) {
                    continue;
                }
                let id = run.start(&worksheet)?;
                let sheet = run.stream(id, || sheets.next_cell())?;
                run.finish(sheet)?;
            }
        }
    }
    Ok(run.summary)
}

/// xls, which has no cells reader: calamine loads the whole workbook; each sheet's cells are
/// moved out of it (not copied, and not spread into a dense range) and walked in order.
fn xls_sheets<RS>(run: &mut Run<'_, '_, '_>, wb: &mut Xls<RS>) -> Result<(), ParseFailure>
where
    RS: io::Read + io::Seek,
{
    let worksheets = run.worksheets(wb.sheets_metadata());
    let last = worksheets.len().saturating_sub(1);
    for (i, worksheet) in worksheets.into_iter().enumerate() {
        if !run.wants(&worksheet, i < last) {
            continue;
        }
        let id = run.start(&worksheet)?;
        let cells = wb
            .take_worksheet_cells(&id.name)
            .map_err(|e| sheet_error(&id.name, &e))?;
        let mut used = cells.iter().filter(|c| *c.get_value() != Data::Empty);
        let sheet = run.stream(id, || {
            Ok::<_, std::convert::Infallible>(
                used.next()
                    .map(|c| Cell::new(c.get_position(), data_ref(c.get_value()))),
            )
        })?;
        run.finish(sheet)?;
    }
    Ok(())
}

fn data_ref(d: &Data) -> DataRef<'_> {
    match d {
        Data::Int(i) => DataRef::Int(*i),
        Data::Float(f) => DataRef::Float(*f),
        Data::String(s) => DataRef::SharedString(s),
        Data::Bool(b) => DataRef::Bool(*b),
        Data::DateTime(dt) => DataRef::DateTime(*dt),
        Data::DateTimeIso(s) => DataRef::DateTimeIso(s.clone()),
        Data::DurationIso(s) => DataRef::DurationIso(s.clone()),
        Data::Error(e) => DataRef::Error(e.clone()),
        Data::Empty => DataRef::Empty,
    }
}

/// A row's non-empty cells by column, in order.
type Cells<'a> = Vec<(u32, DataRef<'a>)>;

struct Run<'l, 's, 'v> {
    /// A template's field labels, for the header phase.
    labels: Vec<Vec<String>>,
    limits: &'l ParseLimits,
    /// Where a person said the tables lie.
    layout: &'l LayoutOverride,
    on_event: Sink<'s>,
    summary: ParseSummary,
    /// Data rows emitted so far in the whole workbook (the row limit counts all sheets).
    emitted: u64,
    /// The current row's JSON text, reused from row to row.
    row: String,
    /// A templated file's validation: only its sheet is read.
    validation: Option<&'s mut Validation<'v>>,
}

impl Run<'_, '_, '_> {
    /// The worksheets to read, in workbook order; other parts are reported as skipped.
    fn worksheets(&mut self, sheets: &[calamine::Sheet]) -> Vec<calamine::Sheet> {
        let mut out = Vec::new();
        for s in sheets {
            let what = match s.typ {
                SheetType::WorkSheet => {
                    out.push(s.clone());
                    continue;
                }
                SheetType::ChartSheet => "chart sheet",
                SheetType::MacroSheet => "Excel 4.0 macro sheet",
                SheetType::DialogSheet => "dialog sheet",
                SheetType::Vba => "VBA module",
            };
            self.summary
                .skipped_parts
                .push(format!("{what} '{}' not readable", s.name));
        }
        out
    }

    /// Whether to read `worksheet` (`more`: others follow it): every one, or a templated
    /// file's chosen one.
    fn wants(&mut self, worksheet: &calamine::Sheet, more: bool) -> bool {
        self.validation
            .as_deref_mut()
            .is_none_or(|v| v.wants_sheet(&worksheet.name, more))
    }

    /// Opens the next sheet: numbers it and emits its `SheetStart`.
    fn start(&mut self, worksheet: &calamine::Sheet) -> Result<SheetId, ParseFailure> {
        let id = SheetId {
            index: self.summary.sheets.len() as u32,
            name: worksheet.name.clone(),
            hidden: worksheet.visible != SheetVisible::Visible,
        };
        (self.on_event)(id.start_event()).map_err(ParseFailure::sink)?;
        Ok(id)
    }

    fn finish(&mut self, sheet: SheetBuilder) -> Result<(), ParseFailure> {
        if let Some(v) = self.validation.as_deref_mut() {
            v.finish_sheet(&mut *self.on_event)?;
        }
        let summary = sheet.finish();
        self.summary.rows_total += summary.rows;
        (self.on_event)(ParseEvent::SheetEnd(summary.clone())).map_err(ParseFailure::sink)?;
        self.summary.sheets.push(summary);
        Ok(())
    }

    /// Assembles rows from cells arriving in row-major order and emits them.
    fn stream<'a, E: ReadError>(
        &mut self,
        id: SheetId,
        mut next: impl FnMut() -> Result<Option<Cell<DataRef<'a>>>, E>,
    ) -> Result<SheetBuilder, ParseFailure> {
        let index = id.index;
        let mut sheet = SheetBuilder::new(id, ColumnTyping::FromCells, self.limits.max_columns);
        let mut phase = Pending {
            phase: Some(formats::start_sheet(
                self.layout,
                index,
                Headerless::Never,
                &mut sheet,
            )),
            held: Vec::new(),
            held_bytes: 0,
        };
        let mut current: Option<u32> = None;
        let mut cells: Cells<'a> = Vec::new();
        loop {
            let cell = next().map_err(|e| {
                read_failure(
                    &e,
                    format_args!(
                        "sheet '{}' near row {}",
                        sheet.id.name,
                        current.map_or(1, |r| r + 1)
                    ),
                )
            })?;
            let Some(cell) = cell else { break };
            let (row, col) = cell.get_position();
            if current != Some(row) {
                if let Some(prev) = current {
                    if row < prev {
                        return Err(ParseFailure::corrupt(format!(
                            "sheet '{}': row {} comes after row {}",
                            sheet.id.name,
                            row + 1,
                            prev + 1
                        )));
                    }
                    self.row_done(&mut sheet, &mut phase, &mut cells, prev)?;
                }
                current = Some(row);
            }
            if col >= self.limits.max_columns {
                sheet.ensure_width(col as usize + 1)?;
            }
            let value = cell.get_value();
            if !matches!(value, DataRef::Empty) {
                cells.push((col, value.clone()));
            }
        }
        if let Some(last) = current {
            self.row_done(&mut sheet, &mut phase, &mut cells, last)?;
        }
        self.decide(&mut sheet, &mut phase)?;
        if sheet.holding() {
            self.release(&mut sheet, &mut phase)?;
        }
        Ok(sheet)
    }

    /// Takes row `at` (0-based, as calamine numbers rows) from its non-empty cells: into the
    /// header phase while it lasts, else as data.
    fn row_done<'a>(
        &mut self,
        sheet: &mut SheetBuilder,
        phase: &mut Pending<'a>,
        cells: &mut Cells<'a>,
        at: u32,
    ) -> Result<(), ParseFailure> {
        if cells.is_empty() {
            return Ok(());
        }
        if !cells.windows(2).all(|w| w[0].0 < w[1].0) {
            cells.sort_by_key(|c| c.0);
            cells.dedup_by_key(|c| c.0);
        }
        let Some(buffer) = phase.phase.as_mut() else {
            return self.data_or_hold(sheet, phase, cells, at);
        };
        let width = cells.last().map_or(0, |c| c.0 as usize + 1);
        let mut texts = vec![String::new(); width];
        for (col, value) in cells.iter() {
            texts[*col as usize] = header_text(value);
        }
        if buffer.push(u64::from(at) + 1, texts, std::mem::take(cells)) {
            self.decide(sheet, phase)?;
        }
        Ok(())
    }

    /// Ends the header phase: sets the header it decided and reads the rows it held.
    fn decide<'a>(
        &mut self,
        sheet: &mut SheetBuilder,
        phase: &mut Pending<'a>,
    ) -> Result<(), ParseFailure> {
        let data = driver::start_table(
            &mut phase.phase,
            &self.labels,
            sheet,
            self.validation.as_deref_mut(),
            self.on_event,
        )?;
        for mut buffered in data {
            // Row numbers come from calamine's `u32` rows.
            let at = u32::try_from(buffered.number - 1).unwrap_or(u32::MAX);
            self.data_or_hold(sheet, phase, &mut buffered.row, at)?;
        }
        Ok(())
    }

    /// Reads row `at` as data, or keeps it while the rows after a possible end of the table
    /// are gathered; once enough are, decides them.
    fn data_or_hold<'a>(
        &mut self,
        sheet: &mut SheetBuilder,
        pending: &mut Pending<'a>,
        cells: &mut Cells<'a>,
        at: u32,
    ) -> Result<(), ParseFailure> {
        if self.data_row(sheet, cells, at)? == Fate::Held {
            pending.held_bytes += cells.len() * HELD_CELL_BYTES;
            pending.held.push(Buffered {
                number: u64::from(at) + 1,
                row: std::mem::take(cells),
            });
            if sheet.hold_is_full(pending.held_bytes) {
                self.release(sheet, pending)?;
            }
        }
        Ok(())
    }

    /// Decides the rows held: read as data, in order, or set aside (counted already).
    fn release(
        &mut self,
        sheet: &mut SheetBuilder,
        pending: &mut Pending<'_>,
    ) -> Result<(), ParseFailure> {
        let held = std::mem::take(&mut pending.held);
        pending.held_bytes = 0;
        if sheet.resolve() == Resolution::Data {
            for mut buffered in held {
                let at = u32::try_from(buffered.number - 1).unwrap_or(u32::MAX);
                self.data_row(sheet, &mut buffered.row, at)?;
            }
        }
        Ok(())
    }

    /// Emits data row `at` (0-based) from its non-empty cells, in column order, unless it
    /// lies past the table's end (cleared) or is held (left as it was).
    fn data_row(
        &mut self,
        sheet: &mut SheetBuilder,
        cells: &mut Cells<'_>,
        at: u32,
    ) -> Result<Fate, ParseFailure> {
        let number = u64::from(at) + 1;
        let texts = cells.iter().map(|(col, value)| {
            let text = match value {
                DataRef::String(s) => s.as_str(),
                DataRef::SharedString(s) => s,
                // Only names matter at a table's end: any value reads as one.
                _ => "0",
            };
            (*col as usize, text)
        });
        match sheet.fate(number, false, texts) {
            Fate::Data => {}
            Fate::Aside => {
                cells.clear();
                return Ok(Fate::Aside);
            }
            Fate::Held => return Ok(Fate::Held),
        }
        if self.validation.is_some() {
            self.templated_row(sheet, cells, at)?;
            return Ok(Fate::Data);
        }
        let width = cells.last().map_or(0, |c| c.0 as usize + 1);
        sheet.ensure_width(width)?;
        let label = match cells.first() {
            Some((0, DataRef::String(s))) => s.as_bytes(),
            Some((0, DataRef::SharedString(s))) => s.as_bytes(),
            _ => &[],
        };
        // A spreadsheet row is as wide as its header: its empty trailing cells are not missing.
        sheet.note_row(number, label, width.max(sheet.header_len()));
        let row = &mut self.row;
        row.clear();
        row.push('[');
        let mut next_col = 0usize;
        for (col, value) in cells.iter() {
            let col = *col as usize;
            while next_col < col {
                row.push_str(if next_col == 0 { "null" } else { ",null" });
                next_col += 1;
            }
            if col > 0 {
                row.push(',');
            }
            if let Some(kind) = push_value(row, value, self.limits.max_cell_bytes, sheet)? {
                sheet.columns_acc[col].observe_kind(kind, sheet.rows);
            }
            next_col = col + 1;
        }
        while next_col < sheet.header_len() {
            row.push_str(if next_col == 0 { "null" } else { ",null" });
            next_col += 1;
        }
        row.push(']');
        cells.clear();
        self.emitted += 1;
        check_rows(self.emitted, self.limits.max_rows)?;
        (self.on_event)(ParseEvent::Row {
            sheet: sheet.id.index,
            index: sheet.rows,
            values: Cow::Borrowed(&self.row),
        })
        .map_err(ParseFailure::sink)?;
        sheet.rows += 1;
        Ok(Fate::Data)
    }
}

/// What a held cell counts against the hold's byte limit (its text is borrowed or small).
const HELD_CELL_BYTES: usize = 32;

/// A sheet's rows waiting on a decision: its first rows until the header is decided, then
/// rows after a possible end of the table.
struct Pending<'a> {
    phase: Option<HeaderPhase<Cells<'a>>>,
    held: Vec<Buffered<Cells<'a>>>,
    held_bytes: usize,
}
