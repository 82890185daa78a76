//! The fork's side: the stock API through the vendored crate, and the readers only the fork has,
//! which are what the worker reads xls and ods with.

use calamine::OdsStream;

use super::View;

crate::views::stock_api_views!(calamine);

pub(super) fn dump(view: View, format: Format, book: &[u8]) -> Dump {
    match view {
        View::Cells => {
            let cells = match format {
                Format::Xlsx | Format::Xlsb => streamed_cells(format, book),
                Format::Xls => xls_cells(book),
                Format::Ods => ods_cells(book),
            };
            cells.unwrap_or_else(Dump::failed)
        }
        View::Range => ranges(format, book, false),
        View::Formulas => ranges(format, book, true),
    }
}

/// Each worksheet's cells moved out of the workbook, as the worker takes them; it skips the
/// empty ones.
fn xls_cells(book: &[u8]) -> Result<Dump, String> {
    let mut book = open::<Xls<_>>(book)?;
    let sheets = book.sheets_metadata().to_vec();
    let mut dump = Dump::default();
    each_worksheet(&mut dump, &sheets, |name, dump| {
        for cell in book.take_worksheet_cells(name).map_err(text)? {
            if *cell.get_value() != Data::Empty {
                dump.cell(cell.get_position(), cell.get_value());
            }
        }
        Ok(())
    })?;
    Ok(dump)
}

/// Every table of `content.xml` streamed: its line, then its non-empty cells.
fn ods_cells(book: &[u8]) -> Result<Dump, String> {
    let mut book = OdsStream::new(Cursor::new(book)).map_err(text)?;
    let mut sheets = book.sheets().map_err(text)?;
    let mut dump = Dump::default();
    while let Some(sheet) = sheets.next_sheet().map_err(text)? {
        dump.sheet(&sheet.name, sheet.typ, sheet.visible);
        drain(&mut dump, || sheets.next_cell())?;
    }
    Ok(dump)
}
