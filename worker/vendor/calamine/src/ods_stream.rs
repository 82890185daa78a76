// SPDX-License-Identifier: MIT
//
// Patched in by sheetrelay (see `PATCH.md` at the crate root).

//! Streaming access to the cells of an OpenDocument spreadsheet.
//!
//! [`Ods::new`](crate::Ods) reads all of `content.xml` up front: every cell of every sheet as a
//! `Data`, a formula `String` beside each, then both copied into ranges (about 1.5 KB per
//! 12-column row, so a 1M-row sheet needs well over a gigabyte). [`OdsStream`] reads
//! `content.xml` once, in document order, holding only the current row. Cell values are decoded
//! by the same code as [`Ods`](crate::Ods), so both readers agree on every value.
//!
//! Repetition (`number-rows-repeated`, `number-columns-repeated`) is expanded lazily. Because a
//! few bytes can repeat a value billions of times, the copies it makes of non-empty cells are
//! capped at [`MAX_REPEATED_CELLS`]; past it the reader fails with
//! [`OdsError::CellLimitExceeded`]. Empty repeated cells and rows cost nothing.

use std::collections::HashMap;
use std::io::{BufRead, Read, Seek};

use quick_xml::events::Event;
use quick_xml::name::QName;
use zip::read::ZipArchive;

use crate::attrs::{decode_attr, RawAttributes};
use crate::ods::{
    cell_attrs, check_for_password_protected, check_mimetype, get_datatype, open_content, OdsError,
    OdsReader,
};
use crate::scan;
use crate::{Cell, Data, DataRef, DataType, Sheet, SheetType, SheetVisible};

/// The most copies of non-empty cells that repetition may produce in one workbook. A real
/// spreadsheet repeats a value only across identical neighbours (a run of zeros in a row, a
/// block of identical rows), never millions of times.
pub const MAX_REPEATED_CELLS: u64 = 10_000_000;

/// An ODS file opened for streaming.
pub struct OdsStream<RS> {
    zip: ZipArchive<RS>,
}

impl<RS: Read + Seek> OdsStream<RS> {
    /// Opens the archive and makes the same checks as [`Ods::new`](crate::Ods): the mimetype
    /// entry, and [`OdsError::Password`] for an encrypted document.
    pub fn new(reader: RS) -> Result<Self, OdsError> {
        let mut zip = ZipArchive::new(reader)?;
        check_mimetype(&mut zip)?;
        check_for_password_protected(&mut zip)?;
        Ok(Self { zip })
    }

    /// The sheets of the document, one after the other.
    pub fn sheets(&mut self) -> Result<OdsSheets<'_, RS>, OdsError> {
        Ok(OdsSheets {
            reader: open_content(&mut self.zip)?,
            buf: Vec::with_capacity(1024),
            cell_buf: Vec::with_capacity(1024),
            styles: HashMap::new(),
            style_name: None,
            in_table: false,
            row: Vec::new(),
            pos: 0,
            copy: 0,
            row_index: 0,
            row_copies_left: 0,
            next_row: 0,
            repeated: 0,
            between_tags: false,
            scanned_row: None,
        })
    }
}

/// A cursor over the sheets of `content.xml` and, within the current sheet, its cells.
pub struct OdsSheets<'a, RS: Read + Seek> {
    reader: OdsReader<'a, RS>,
    buf: Vec<u8>,
    cell_buf: Vec<u8>,
    /// Table style name → visibility (`table:display`), from the automatic styles that come
    /// before the body.
    styles: HashMap<String, SheetVisible>,
    style_name: Option<String>,
    in_table: bool,
    /// The current row's non-empty cells: first column, how many columns it repeats over, value.
    row: Vec<(u32, u32, Data)>,
    /// The cell of `row` to emit next, and which of its column copies.
    pos: usize,
    copy: u32,
    /// The sheet row `row` is being emitted as, and how many more times it repeats after that.
    row_index: u32,
    row_copies_left: u64,
    /// The sheet row the next `table:table-row` element starts at.
    next_row: u64,
    /// Copies of non-empty cells made by repetition so far.
    repeated: u64,
    /// Whether quick-xml's last event leaves it between markup, so that `scan` may read and
    /// consume the buffered bytes ahead of it (see `scan`'s module docs): true after an end tag.
    between_tags: bool,
    /// The `number-rows-repeated` of a row whose start tag `scan` has already consumed, together
    /// with the previous row's end tag.
    scanned_row: Option<u64>,
}

impl<RS: Read + Seek> OdsSheets<'_, RS> {
    /// Moves to the next sheet, skipping what is left of the current one; `None` after the last.
    /// Every sheet is a worksheet: ODS has no chart or macro sheets of its own.
    pub fn next_sheet(&mut self) -> Result<Option<Sheet>, OdsError> {
        while self.in_table {
            self.next_cell()?;
        }
        self.between_tags = false;
        loop {
            self.buf.clear();
            match self.reader.read_event_into(&mut self.buf)? {
                Event::Start(e) if e.name() == QName("style:style") => {
                    self.style_name = e.raw_attr("style:name")?.map(decode_attr).transpose()?;
                }
                Event::Start(e) if e.name() == QName("style:table-properties") => {
                    if let (Some(style), Some(display)) =
                        (&self.style_name, e.raw_attr("table:display")?)
                    {
                        let visible = if decode_attr(display)?.parse()? {
                            SheetVisible::Visible
                        } else {
                            SheetVisible::Hidden
                        };
                        self.styles.insert(style.clone(), visible);
                    }
                }
                Event::Start(e) if e.name() == QName("table:table") => {
                    let Some(name) = e.raw_attr("table:name")?.map(decode_attr).transpose()?
                    else {
                        continue;
                    };
                    let visible = match e.raw_attr("table:style-name")? {
                        Some(style) => self.styles.get(&decode_attr(style)?).copied(),
                        None => None,
                    };
                    self.in_table = true;
                    self.row.clear();
                    self.pos = 0;
                    self.copy = 0;
                    self.row_copies_left = 0;
                    self.next_row = 0;
                    return Ok(Some(Sheet {
                        name,
                        typ: SheetType::WorkSheet,
                        visible: visible.unwrap_or(SheetVisible::Visible),
                    }));
                }
                Event::Eof => return Ok(None),
                _ => (),
            }
        }
    }

    /// The next non-empty cell of the current sheet, in row-major order; `None` at its end.
    /// Values are owned (`DataRef::String`, never `SharedString`), as ODS shares no strings.
    pub fn next_cell(&mut self) -> Result<Option<Cell<DataRef<'static>>>, OdsError> {
        loop {
            if let Some(&(col, repeats, _)) = self.row.get(self.pos) {
                let col = col + self.copy;
                let last = self.copy + 1 == repeats;
                let value = if last && self.row_copies_left == 0 {
                    std::mem::take(&mut self.row[self.pos].2)
                } else {
                    self.row[self.pos].2.clone()
                };
                if last {
                    self.pos += 1;
                    self.copy = 0;
                } else {
                    self.copy += 1;
                }
                return Ok(Some(Cell::new((self.row_index, col), owned(value))));
            }
            if self.row_copies_left > 0 {
                self.row_copies_left -= 1;
                self.row_index += 1;
                self.pos = 0;
                continue;
            }
            if !self.in_table || !self.read_row()? {
                return Ok(None);
            }
        }
    }

    /// Reads up to the next row that has a value; `false` at the end of the table.
    fn read_row(&mut self) -> Result<bool, OdsError> {
        loop {
            let repeats = match self.scanned_row.take() {
                Some(repeats) => repeats,
                None => {
                    self.buf.clear();
                    let event = self.reader.read_event_into(&mut self.buf)?;
                    // A row's start tag may have been self-closing (quick-xml then owes its end
                    // tag), so only an end tag leaves this reader sure to be between markup.
                    self.between_tags = matches!(event, Event::End(_));
                    match event {
                        Event::Start(e) if e.name() == QName("table:table-row") => {
                            repeat_count(e.raw_attr("table:number-rows-repeated")?)?
                        }
                        Event::End(e) if e.name() == QName("table:table") => {
                            self.in_table = false;
                            return Ok(false);
                        }
                        Event::Eof => return Err(OdsError::Eof("table:table")),
                        _ => continue,
                    }
                }
            };
            let first = self.next_row;
            self.next_row = first.saturating_add(repeats);
            self.row.clear();
            self.pos = 0;
            self.copy = 0;
            let cells = self.read_cells()?;
            if self.row.is_empty() {
                continue;
            }
            let copies =
                cells.saturating_sub(self.row.len() as u64) + (repeats - 1).saturating_mul(cells);
            self.repeated = self.repeated.saturating_add(copies);
            if self.repeated > MAX_REPEATED_CELLS {
                return Err(OdsError::CellLimitExceeded {
                    requested: usize::try_from(self.repeated).unwrap_or(usize::MAX),
                    max: MAX_REPEATED_CELLS as usize,
                });
            }
            let last = first.saturating_add(repeats - 1);
            self.row_index = u32::try_from(first).map_err(|_| too_far("row", last))?;
            u32::try_from(last).map_err(|_| too_far("row", last))?;
            self.row_copies_left = repeats - 1;
            return Ok(true);
        }
    }

    /// Reads the cells of one `table:table-row` into `row` (non-empty ones only, run-length) and
    /// returns how many non-empty cells the row holds once its column repeats are expanded.
    /// `buf` holds each cell's start tag, `cell_buf` what `get_datatype` reads inside the cell.
    /// Cells and the switch to the next row are read straight from quick-xml's buffer when
    /// `scan` recognises them, through quick-xml otherwise.
    fn read_cells(&mut self) -> Result<u64, OdsError> {
        let mut col: u64 = 0;
        let mut cells: u64 = 0;
        loop {
            let (repeats, value) = match self.buffered_cell() {
                Some(cell) => cell,
                None => {
                    if self.between_tags {
                        if let Some(repeats) = self.buffered_row_switch() {
                            self.scanned_row = Some(repeats);
                            return Ok(cells);
                        }
                    }
                    self.buf.clear();
                    let event = self.reader.read_event_into(&mut self.buf)?;
                    self.between_tags = matches!(event, Event::End(_));
                    match event {
                        Event::Start(e)
                            if e.name() == QName("table:table-cell")
                                || e.name() == QName("table:covered-table-cell") =>
                        {
                            let repeats =
                                repeat_count(e.raw_attr("table:number-columns-repeated")?)?;
                            let (value, _formula, closed) =
                                get_datatype(&mut self.reader, &e, &mut self.cell_buf)?;
                            if !closed {
                                self.reader.read_to_end_into(e.name(), &mut self.cell_buf)?;
                            }
                            // Both end on the cell's end tag.
                            self.between_tags = true;
                            (repeats, value)
                        }
                        Event::End(e) if e.name() == QName("table:table-row") => return Ok(cells),
                        Event::Eof => return Err(OdsError::Eof("table:table-row")),
                        _ => continue,
                    }
                }
            };
            if !value.is_empty() {
                let last = col.saturating_add(repeats - 1);
                let start = u32::try_from(col).map_err(|_| too_far("column", last))?;
                let count = u32::try_from(repeats).map_err(|_| too_far("column", last))?;
                u32::try_from(last).map_err(|_| too_far("column", last))?;
                self.row.push((start, count, value));
                cells += repeats;
            }
            col = col.saturating_add(repeats);
        }
    }

    /// The next cell and its column repeats, read straight from the bytes quick-xml has
    /// buffered but not yet read, when they hold it whole in the shape `scan` recognises and
    /// quick-xml is between markup. Returns `None`, having consumed nothing, whenever quick-xml
    /// should read it instead, including when its attributes are in error (quick-xml's path then
    /// fails with the very same error).
    fn buffered_cell(&mut self) -> Option<(u64, Data)> {
        if !self.between_tags {
            return None;
        }
        let cell = scan::table_cell(self.reader.get_ref().buffer())?;
        let attrs = cell_attrs(cell.attrs).ok()?;
        let repeats = repeat_count(attrs.columns_repeated).ok()?;
        let value = if attrs.value_in_content {
            // `get_datatype` reads the one paragraph's text, or nothing.
            Data::String(cell.text.unwrap_or_default().to_owned())
        } else {
            attrs.value
        };
        let len = cell.len;
        self.reader.get_mut().consume(len);
        Some((repeats, value))
    }

    /// Recognises `</table:table-row><table:table-row …>` in the buffered bytes and consumes it:
    /// the new row's `number-rows-repeated`.
    fn buffered_row_switch(&mut self) -> Option<u64> {
        let (len, attrs) = scan::row_switch(self.reader.get_ref().buffer(), "table:table-row")?;
        let repeats = repeat_count(attrs.raw_attr("table:number-rows-repeated").ok()?).ok()?;
        self.reader.get_mut().consume(len);
        Some(repeats)
    }
}

/// The value as the cell readers of the other formats hand it out.
fn owned(value: Data) -> DataRef<'static> {
    match value {
        Data::Int(i) => DataRef::Int(i),
        Data::Float(f) => DataRef::Float(f),
        Data::String(s) => DataRef::String(s),
        Data::Bool(b) => DataRef::Bool(b),
        Data::DateTime(dt) => DataRef::DateTime(dt),
        Data::DateTimeIso(s) => DataRef::DateTimeIso(s),
        Data::DurationIso(s) => DataRef::DurationIso(s),
        Data::Error(e) => DataRef::Error(e),
        Data::Empty => DataRef::Empty,
    }
}

/// A `number-*-repeated` attribute: absent means once.
fn repeat_count(attr: Option<&str>) -> Result<u64, OdsError> {
    match attr {
        Some(v) => Ok(v.parse::<u64>()?.max(1)),
        None => Ok(1),
    }
}

fn too_far(what: &'static str, index: u64) -> OdsError {
    OdsError::Mismatch {
        expected: what,
        found: format!("{what} {index}, past the last a sheet can address"),
    }
}
