//! The ways a workbook is read, each producing a [`Dump`] from the fork and one from the release.
//! The two crates have the same stock API but distinct types, so the code that reads through the
//! stock API is written once, as a macro expanded against each crate (`fork`, `stock`); what only
//! the fork has (`OdsStream`, `take_worksheet_cells`) is read in `fork` and compared with the
//! release's range of the same sheet in `stock`.

use std::fmt;
use std::path::Path;

use crate::dump::Dump;

pub mod fork;
pub mod stock;

/// The workbook formats, told by extension, as the test packages name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Xlsx,
    Xlsb,
    Xls,
    Ods,
}

impl Format {
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "xlsx" | "xlsm" => Some(Format::Xlsx),
            "xlsb" => Some(Format::Xlsb),
            "xls" => Some(Format::Xls),
            "ods" => Some(Format::Ods),
            _ => None,
        }
    }
}

/// What is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum View {
    /// The path the worker reads: the cells readers (xlsx, xlsb), `take_worksheet_cells` (xls)
    /// and `OdsStream` (ods) on the fork's side, the same readers (xlsx, xlsb) or the sheet's
    /// range (xls, ods) on the release's. As in the worker, a reading that fails anywhere is
    /// its error alone: the task fails with it and keeps no rows.
    Cells,
    /// `worksheet_range` of every sheet: the stock API, which the patches must leave as it was.
    Range,
    /// `worksheet_formula` of every sheet.
    Formulas,
}

impl View {
    pub const ALL: [View; 3] = [View::Cells, View::Range, View::Formulas];

    pub fn parse(name: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.to_string() == name)
    }

    /// The view through the fork and through the release, panics included.
    pub fn dumps(self, format: Format, book: &[u8]) -> (Dump, Dump) {
        let fork = Dump::catching(|| fork::dump(self, format, book));
        let stock = Dump::catching(|| stock::dump(self, format, book));
        (fork, stock)
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            View::Cells => "cells",
            View::Range => "range",
            View::Formulas => "formulas",
        })
    }
}

/// The views read through the stock API, written once for both crates: `$krate` is `calamine`
/// (the fork) or `calamine_stock` (the release).
macro_rules! stock_api_views {
    ($krate:ident) => {
        use std::fmt::Display;
        use std::io::Cursor;

        use $krate::{Data, DataRef, Ods, Range, Reader, SheetType, Xls, Xlsb, Xlsx};

        use crate::dump::Dump;
        use crate::views::Format;

        /// A workbook read from memory: the same bytes for every view and both crates.
        type Source<'b> = Cursor<&'b [u8]>;

        fn open<'b, R: Reader<Source<'b>>>(book: &'b [u8]) -> Result<R, String>
        where
            R::Error: Display,
        {
            R::new(Cursor::new(book)).map_err(text)
        }

        /// `worksheet_range` (or, with `formulas`, `worksheet_formula`) of every sheet.
        fn ranges(format: Format, book: &[u8], formulas: bool) -> Dump {
            match format {
                Format::Xlsx => ranges_of::<Xlsx<_>>(book, formulas),
                Format::Xlsb => ranges_of::<Xlsb<_>>(book, formulas),
                Format::Xls => ranges_of::<Xls<_>>(book, formulas),
                Format::Ods => ranges_of::<Ods<_>>(book, formulas),
            }
        }

        fn ranges_of<'b, R: Reader<Source<'b>>>(book: &'b [u8], formulas: bool) -> Dump
        where
            R::Error: Display,
        {
            let mut book = match open::<R>(book) {
                Ok(book) => book,
                Err(e) => return Dump::failed(e),
            };
            let mut dump = Dump::default();
            for sheet in book.sheets_metadata().to_vec() {
                dump.sheet(&sheet.name, sheet.typ, sheet.visible);
                if formulas {
                    match book.worksheet_formula(&sheet.name) {
                        Ok(range) => range_lines(&mut dump, &range),
                        Err(e) => dump.error(e),
                    }
                } else {
                    match book.worksheet_range(&sheet.name) {
                        Ok(range) => range_lines(&mut dump, &range),
                        Err(e) => dump.error(e),
                    }
                }
            }
            dump
        }

        /// A range's bounds and its non-empty cells (`Data::Empty`, or a formula's "").
        fn range_lines<T: $krate::CellType + std::fmt::Debug>(dump: &mut Dump, range: &Range<T>) {
            dump.bounds(range.start(), range.end());
            let (top, left) = range.start().unwrap_or((0, 0));
            let empty = T::default();
            for (row, col, value) in range.cells() {
                if *value != empty {
                    dump.cell((top + row as u32, left + col as u32), value);
                }
            }
        }

        /// The cells reader of every worksheet of an xlsx or xlsb, each cell as it comes.
        fn streamed_cells(format: Format, book: &[u8]) -> Result<Dump, String> {
            let mut dump = Dump::default();
            match format {
                Format::Xlsb => {
                    let mut book = open::<Xlsb<_>>(book)?;
                    let sheets = book.sheets_metadata().to_vec();
                    each_worksheet(&mut dump, &sheets, |name, dump| {
                        let mut cells = book.worksheet_cells_reader(name).map_err(text)?;
                        drain(dump, || cells.next_cell())
                    })?;
                }
                _ => {
                    let mut book = open::<Xlsx<_>>(book)?;
                    let sheets = book.sheets_metadata().to_vec();
                    each_worksheet(&mut dump, &sheets, |name, dump| {
                        let mut cells = book.worksheet_cells_reader(name).map_err(text)?;
                        drain(dump, || cells.next_cell())
                    })?;
                }
            }
            Ok(dump)
        }

        /// Writes each sheet's line and, for a worksheet (the only sheets the worker reads),
        /// what `read` writes.
        fn each_worksheet(
            dump: &mut Dump,
            sheets: &[$krate::Sheet],
            mut read: impl FnMut(&str, &mut Dump) -> Result<(), String>,
        ) -> Result<(), String> {
            for sheet in sheets {
                dump.sheet(&sheet.name, sheet.typ, sheet.visible);
                if sheet.typ == SheetType::WorkSheet {
                    read(&sheet.name, dump)?;
                }
            }
            Ok(())
        }

        fn drain<'a, E: Display>(
            dump: &mut Dump,
            mut next: impl FnMut() -> Result<Option<$krate::Cell<DataRef<'a>>>, E>,
        ) -> Result<(), String> {
            while let Some(cell) = next().map_err(text)? {
                dump.cell(cell.get_position(), value_of(cell.get_value()));
            }
            Ok(())
        }

        fn text(e: impl Display) -> String {
            e.to_string()
        }

        /// A streamed value as the `Data` it stands for: whether a string is shared is how the
        /// reader holds it, not what the cell holds.
        fn value_of(value: &DataRef<'_>) -> Data {
            match value {
                DataRef::Int(i) => Data::Int(*i),
                DataRef::Float(f) => Data::Float(*f),
                DataRef::String(s) => Data::String(s.clone()),
                DataRef::SharedString(s) => Data::String((*s).to_owned()),
                DataRef::Bool(b) => Data::Bool(*b),
                DataRef::DateTime(dt) => Data::DateTime(*dt),
                DataRef::DateTimeIso(s) => Data::DateTimeIso(s.clone()),
                DataRef::DurationIso(s) => Data::DurationIso(s.clone()),
                DataRef::Error(e) => Data::Error(e.clone()),
                DataRef::Empty => Data::Empty,
            }
        }
    };
}

pub(crate) use stock_api_views;
