//! The steps every reader takes with its table, whatever its cells are (a CSV record's byte
//! spans, a worksheet row's typed cells): the header phase ends by setting the header and
//! starting a template's validation of it, then the rows it held are read as data
//! ([`start_table`]); and a templated data row is checked, sent back when invalid, and stored
//! when the policy keeps it ([`templated_row`]). Each reader still decides how its rows are
//! held and written, which is where the formats differ.

use std::io;

use template::Cell;

use super::header::{Buffered, HeaderPhase};
use super::sheet::SheetBuilder;
use crate::parse::template::validate::Validation;
use crate::parse::{ParseEvent, ParseFailure};

type Sink<'s> = &'s mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>;

/// Ends the header `phase`, if it has not ended yet: sets the header it decided (preferring the
/// row that names a template's fields, `labels`) and starts the template's validation of it.
/// Returns the rows the phase held, to be read as data in order (none when every row was
/// blank).
pub(crate) fn start_table<R>(
    phase: &mut Option<HeaderPhase<R>>,
    labels: &[Vec<String>],
    sheet: &mut SheetBuilder,
    validation: Option<&mut Validation<'_>>,
    on_event: Sink<'_>,
) -> Result<Vec<Buffered<R>>, ParseFailure> {
    let Some(decision) = phase.take().and_then(|p| p.decide(labels)) else {
        return Ok(Vec::new());
    };
    let header = decision.header;
    let raw = validation.is_some().then(|| header.names.clone());
    let header_row = header.row;
    sheet.start_table(header)?;
    if let (Some(v), Some(raw)) = (validation, raw) {
        v.start_sheet(sheet, &raw, header_row, on_event)?;
    }
    Ok(decision.data)
}

/// Data row `number` of a templated sheet, as `cells` in file column order (from
/// [`Validation::cells`]): its error records are sent, its original cells too when it is
/// invalid (written by `original`, from the row's cells, as the plain parse would store them),
/// and it is stored under the template's fields when the policy keeps it.
pub(crate) fn templated_row<'c>(
    v: &mut Validation<'_>,
    sheet: &mut SheetBuilder,
    number: u64,
    cells: Vec<Cell<'c>>,
    original: impl FnOnce(&[Cell<'c>], &SheetBuilder, &mut String),
    on_event: Sink<'_>,
) -> Result<(), ParseFailure> {
    let index = sheet.id.index;
    let verdict = v.check(index, number, &cells, on_event)?;
    if !verdict.valid {
        v.reject(index, number, |out| original(&cells, sheet, out), on_event)?;
    }
    v.recycle(cells);
    if verdict.store {
        v.store(sheet, on_event)?;
    }
    Ok(())
}
