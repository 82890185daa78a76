//! The release's side: calamine 0.38.0 from crates.io. Where the worker reads through a reader
//! only the fork has (xls, ods), the release's answer is the non-empty cells of each sheet's
//! range, in row-major order.

use super::View;

crate::views::stock_api_views!(calamine_stock);

pub(super) fn dump(view: View, format: Format, book: &[u8]) -> Dump {
    match view {
        View::Cells => {
            let cells = match format {
                Format::Xlsx | Format::Xlsb => streamed_cells(format, book),
                Format::Xls => range_cells::<Xls<_>>(book),
                Format::Ods => range_cells::<Ods<_>>(book),
            };
            cells.unwrap_or_else(Dump::failed)
        }
        View::Range => ranges(format, book, false),
        View::Formulas => ranges(format, book, true),
    }
}

/// Each worksheet's non-empty cells, read from its range.
fn range_cells<'b, R: Reader<Source<'b>>>(book: &'b [u8]) -> Result<Dump, String>
where
    R::Error: Display,
{
    let mut book = open::<R>(book)?;
    let sheets = book.sheets_metadata().to_vec();
    let mut dump = Dump::default();
    each_worksheet(&mut dump, &sheets, |name, dump| {
        let range = book.worksheet_range(name).map_err(text)?;
        let (top, left) = range.start().unwrap_or((0, 0));
        for (row, col, value) in range.used_cells() {
            dump.cell((top + row as u32, left + col as u32), value);
        }
        Ok(())
    })?;
    Ok(dump)
}
