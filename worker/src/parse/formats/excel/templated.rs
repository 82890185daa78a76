//! A templated sheet's data rows: each row's cells through the template, its original cells
//! (as the plain parse would store them) kept for the error report.

use template::Cell as TemplateCell;

use super::{Cells, Run};
use crate::parse::formats::excel_value::{push_value, template_cell};
use crate::parse::table::driver;
use crate::parse::table::sheet::{check_rows, SheetBuilder};
use crate::parse::ParseFailure;

impl Run<'_, '_, '_> {
    /// One data row of a templated sheet through the template; its original cells are what the
    /// plain parse would store.
    pub(super) fn templated_row(
        &mut self,
        sheet: &mut SheetBuilder,
        cells: &mut Cells<'_>,
        at: u32,
    ) -> Result<(), ParseFailure> {
        self.emitted += 1;
        check_rows(self.emitted, self.limits.max_rows)?;
        let Some(v) = self.validation.as_deref_mut() else {
            return Ok(());
        };
        let number = u64::from(at) + 1;
        v.blank_rows_before(sheet, number, self.on_event)?;
        // A spreadsheet row is as wide as its header: its empty trailing cells are not missing.
        let width = cells
            .last()
            .map_or(0, |c| c.0 as usize + 1)
            .max(v.header_width());
        let mut row = v.cells();
        row.resize(width, TemplateCell::Empty);
        for (col, value) in cells.iter() {
            row[*col as usize] = template_cell(value);
        }
        let max_cell = self.limits.max_cell_bytes;
        let original = |_: &[TemplateCell<'_>], sheet: &SheetBuilder, out: &mut String| {
            out.push('[');
            let mut next_col = 0usize;
            for (col, value) in cells.iter() {
                let col = *col as usize;
                while next_col < col {
                    out.push_str(if next_col == 0 { "null" } else { ",null" });
                    next_col += 1;
                }
                if col > 0 {
                    out.push(',');
                }
                if push_value(out, value, max_cell, sheet).is_err() {
                    out.push_str("null");
                }
                next_col = col + 1;
            }
            out.push(']');
        };
        driver::templated_row(v, sheet, number, row, original, self.on_event)?;
        cells.clear();
        Ok(())
    }
}
