//! What every format shares once cells are decoded: the header (as the header phase decided it,
//! blank names filled in, duplicates made unique), generated names for the extra cells of ragged
//! rows, row numbering, the row and column limits, per-column type inference, and what the sheet
//! reports about its table: where every record went ([`layout::Tracker`]), ragged rows, a
//! totals row. The format modules feed it cells and write each row's JSON text themselves.

use std::collections::HashSet;

use shared::domain::layout_override::ForcedEnd;
use shared::domain::{ColumnType, TypeSet};

use super::header::{self, Header};
use super::layout::{self, Fate, Resolution};
use crate::parse::{ParseEvent, ParseFailure, SheetSummary, TaskErrorCode};

/// What kind of typed value an Excel cell held, for column type reporting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Integer = 1,
    Decimal = 2,
    Boolean = 4,
    Date = 8,
    DateTime = 16,
    Text = 32,
}

/// Per-column inference state.
#[derive(Debug, Clone)]
pub(crate) struct ColumnAcc {
    /// CSV: the types every value so far fits.
    pub set: TypeSet,
    /// Whether any non-empty value was seen.
    pub seen: bool,
    /// Excel: the kinds of typed value seen (a bit per [`Kind`]).
    kinds: u8,
    /// The state before the last data row that changed it, so that a totals row can be left
    /// out of the column's type (`Total` under numbers) once it turns out to be the last row.
    before: Before,
}

/// A column's inference state before data row `row` (0-based) changed it.
#[derive(Debug, Clone, Copy)]
struct Before {
    row: u64,
    set: TypeSet,
    seen: bool,
    kinds: u8,
}

impl ColumnAcc {
    fn new() -> Self {
        Self {
            set: TypeSet::ANY,
            seen: false,
            kinds: 0,
            before: Before {
                row: u64::MAX,
                set: TypeSet::ANY,
                seen: false,
                kinds: 0,
            },
        }
    }

    /// Records a non-empty CSV value of data row `row` (0-based).
    #[inline]
    pub fn observe_text(&mut self, value: &[u8], row: u64) {
        if !self.set.is_text() {
            let narrowed = self.set.narrow(value);
            if narrowed != self.set {
                self.remember(row);
                self.set = narrowed;
            }
        }
        self.seen = true;
    }

    /// Records a non-empty typed (Excel) value of data row `row` (0-based).
    #[inline]
    pub fn observe_kind(&mut self, kind: Kind, row: u64) {
        let kinds = self.kinds | kind as u8;
        if kinds != self.kinds {
            self.remember(row);
            self.kinds = kinds;
        }
        self.seen = true;
    }

    /// Keeps the state as it was before data row `row` changed it (rare: a column's state
    /// changes a few times at most).
    #[cold]
    fn remember(&mut self, row: u64) {
        self.before = Before {
            row,
            set: self.set,
            seen: self.seen,
            kinds: self.kinds,
        };
    }

    /// Undoes what data row `row` did to the column, if it was the last to change it.
    fn forget(&mut self, row: u64) {
        if self.before.row == row {
            self.set = self.before.set;
            self.seen = self.before.seen;
            self.kinds = self.before.kinds;
        }
    }

    /// Whether every value so far has one type other than text (a name among them would
    /// stand out as a second table's header or a note).
    fn is_typed(&self, typing: ColumnTyping) -> bool {
        match typing {
            ColumnTyping::Inferred => self.seen && !self.set.is_text(),
            ColumnTyping::FromCells => self.kinds != 0 && self.kinds & Kind::Text as u8 == 0,
        }
    }

    fn column_type(&self, typing: ColumnTyping) -> ColumnType {
        if typing == ColumnTyping::Inferred {
            return self.set.column_type(self.seen);
        }
        const NUM: u8 = Kind::Integer as u8 | Kind::Decimal as u8;
        const DATES: u8 = Kind::Date as u8 | Kind::DateTime as u8;
        match self.kinds {
            0 => ColumnType::Text,
            k if k == Kind::Integer as u8 => ColumnType::Integer,
            k if k & !NUM == 0 => ColumnType::Decimal,
            k if k == Kind::Boolean as u8 => ColumnType::Boolean,
            k if k == Kind::Date as u8 => ColumnType::Date,
            k if k & !DATES == 0 => ColumnType::DateTime,
            k if k == Kind::Text as u8 => ColumnType::Text,
            _ => ColumnType::Mixed,
        }
    }
}

/// Which sheet of a file is being read: what its `SheetStart` event and summary say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SheetId {
    /// Position among the sheets read.
    pub index: u32,
    pub name: String,
    pub hidden: bool,
}

impl SheetId {
    /// The event that opens the sheet.
    pub fn start_event(&self) -> ParseEvent<'static> {
        ParseEvent::SheetStart {
            index: self.index,
            name: self.name.clone(),
            hidden: self.hidden,
        }
    }
}

/// Where a sheet's column types come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnTyping {
    /// Workbook cells carry their own types ([`ColumnAcc::observe_kind`]).
    FromCells,
    /// CSV values are text; a column's type is what all of them parse as
    /// ([`ColumnAcc::observe_text`]).
    Inferred,
}

/// One sheet being parsed.
pub(crate) struct SheetBuilder {
    pub id: SheetId,
    /// Column names: the header's, then generated ones for extra cells.
    columns: Vec<String>,
    header_len: usize,
    has_header: bool,
    pub columns_acc: Vec<ColumnAcc>,
    /// Data rows emitted so far.
    pub rows: u64,
    typing: ColumnTyping,
    max_columns: u32,
    /// The 1-based row number of the header in the file (0 until it is found).
    header_row: u64,
    /// A templated sheet's column types: the template's, not inferred.
    fixed_types: Option<Vec<ColumnType>>,
    /// Where each row after the header goes (none until the header is decided).
    tracker: Option<layout::Tracker>,
    /// Data rows with more or fewer cells than the header.
    ragged_rows: u64,
    /// The last data row's 1-based number when its label says it totals the rows above.
    last_total: Option<u64>,
    /// Where a person said the table ends (detected otherwise).
    end: ForcedEnd,
}

impl SheetBuilder {
    pub fn new(id: SheetId, typing: ColumnTyping, max_columns: u32) -> Self {
        Self {
            id,
            columns: Vec::new(),
            header_len: 0,
            has_header: false,
            columns_acc: Vec::new(),
            rows: 0,
            typing,
            max_columns,
            header_row: 0,
            fixed_types: None,
            tracker: None,
            ragged_rows: 0,
            last_total: None,
            end: ForcedEnd::Detect,
        }
    }

    /// Ends the table where a person said instead of guessing.
    pub fn force_end(&mut self, end: ForcedEnd) {
        self.end = end;
    }

    pub fn has_header(&self) -> bool {
        self.has_header
    }

    /// Sets the header the header phase decided.
    pub fn start_table(&mut self, header: Header) -> Result<(), ParseFailure> {
        self.tracker = Some(layout::Tracker::new(&header, self.end));
        self.set_header(header.names, header.row)
    }

    /// Sets the header from its texts, which are row `header_row` (1-based) of the file.
    fn set_header(&mut self, names: Vec<String>, header_row: u64) -> Result<(), ParseFailure> {
        self.header_row = header_row;
        self.check_width(names.len())?;
        let mut seen = HashSet::with_capacity(names.len());
        self.columns = Vec::with_capacity(names.len());
        for (i, raw) in names.into_iter().enumerate() {
            let trimmed = raw.trim();
            let base = if trimmed.is_empty() {
                format!("column_{}", i + 1)
            } else {
                trimmed.to_owned()
            };
            let name = unique(&mut seen, base);
            self.columns.push(name);
        }
        self.header_len = self.columns.len();
        self.columns_acc = vec![ColumnAcc::new(); self.header_len];
        self.has_header = true;
        Ok(())
    }

    /// A templated sheet: its columns are the template's fields, typed by the template.
    /// Its table runs to the sheet's end: every row is validated, a note as much as a data
    /// row, and the error report says where each one failed.
    pub fn set_template_columns(&mut self, names: Vec<String>, types: Vec<ColumnType>) {
        if let Some(tracker) = self.tracker.as_mut() {
            tracker.run_to_the_end();
        }
        self.columns = names;
        self.header_len = self.columns.len();
        self.columns_acc = vec![ColumnAcc::new(); self.header_len];
        self.fixed_types = Some(types);
    }

    /// Makes room for a row of `width` cells, naming any extra columns it brings.
    #[inline]
    pub fn ensure_width(&mut self, width: usize) -> Result<(), ParseFailure> {
        if width <= self.columns.len() {
            return Ok(());
        }
        self.widen(width)
    }

    fn widen(&mut self, width: usize) -> Result<(), ParseFailure> {
        self.check_width(width)?;
        let mut seen: HashSet<String> = self.columns.iter().cloned().collect();
        for i in self.columns.len()..width {
            let name = unique(&mut seen, format!("column_{}", i + 1));
            self.columns.push(name);
            self.columns_acc.push(ColumnAcc::new());
        }
        Ok(())
    }

    /// The width a data row is padded to: the header's (extra cells come on top).
    pub fn header_len(&self) -> usize {
        self.header_len
    }

    /// What becomes of row `number` after the header, with these non-empty cells (column,
    /// text; `blank` when there is none): data, set aside past the table's end, or held by
    /// the reader until [`SheetBuilder::resolve`] once [`SheetBuilder::hold_is_full`] or the
    /// sheet ends ([`layout::Tracker::fate`]).
    #[inline]
    pub fn fate<'t>(
        &mut self,
        number: u64,
        blank: bool,
        cells: impl Iterator<Item = (usize, &'t str)>,
    ) -> Fate {
        let Some(tracker) = self.tracker.as_mut() else {
            return Fate::Data;
        };
        let (acc, typing) = (&self.columns_acc, self.typing);
        tracker.fate(number, blank, cells, |c| {
            acc.get(c).is_some_and(|a| a.is_typed(typing))
        })
    }

    /// Whether the reader holds enough rows after a possible end of the table to decide.
    pub fn hold_is_full(&self, held_bytes: usize) -> bool {
        self.tracker.as_ref().is_some_and(|t| {
            t.holding() && (t.hold_is_full() || held_bytes >= layout::MAX_HELD_BYTES)
        })
    }

    /// Whether rows are held after a possible end of the table.
    pub fn holding(&self) -> bool {
        self.tracker.as_ref().is_some_and(layout::Tracker::holding)
    }

    /// Decides what the rows held are: [`Resolution::Data`] to read them again, in order.
    pub fn resolve(&mut self) -> Resolution {
        self.tracker
            .as_mut()
            .map_or(Resolution::Data, layout::Tracker::resolve)
    }

    /// Notes data row `number` (1-based), the next of the sheet's rows: its `label` (first
    /// cell) may say it is a totals row, and `width` cells other than the header's make it
    /// ragged.
    #[inline]
    pub fn note_row(&mut self, number: u64, label: &[u8], width: usize) {
        self.last_total = header::is_total_label(label).then_some(number);
        if width != self.header_len {
            self.ragged_rows += 1;
        }
    }

    fn check_width(&self, width: usize) -> Result<(), ParseFailure> {
        if width > self.max_columns as usize {
            return Err(ParseFailure::new(
                TaskErrorCode::TooManyColumns,
                format!(
                    "sheet '{}' has {} columns, more than the limit of {}",
                    self.id.name, width, self.max_columns
                ),
            ));
        }
        Ok(())
    }

    pub fn finish(mut self) -> SheetSummary {
        // A totals row ending the table is data, but its label and sums say nothing of the
        // types of the columns above it.
        let totals_row = match (self.last_total, self.rows) {
            (Some(number), 2..) => Some(number),
            _ => None,
        };
        if totals_row.is_some() {
            for acc in &mut self.columns_acc {
                acc.forget(self.rows - 1);
            }
        }
        let typing = self.typing;
        let column_types = match self.fixed_types {
            Some(types) => types,
            None => self
                .columns_acc
                .iter()
                .map(|c| c.column_type(typing))
                .collect(),
        };
        SheetSummary {
            index: self.id.index,
            name: self.id.name,
            hidden: self.id.hidden,
            rows: self.rows,
            header_row: self.header_row,
            column_types,
            extra_columns: (self.columns.len() - self.header_len) as u32,
            columns: self.columns,
            layout: self
                .tracker
                .map(layout::Tracker::finish)
                .unwrap_or_default(),
            ragged_rows: self.ragged_rows,
            totals_row,
        }
    }
}

fn unique(seen: &mut HashSet<String>, base: String) -> String {
    if seen.insert(base.clone()) {
        return base;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{base}_{n}");
        if seen.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

/// Fails when the file's data rows pass the limit.
#[inline]
pub(crate) fn check_rows(rows_total: u64, max_rows: u64) -> Result<(), ParseFailure> {
    if rows_total > max_rows {
        return Err(ParseFailure::new(
            TaskErrorCode::TooManyRows,
            format!("the file has more than {max_rows} data rows"),
        ));
    }
    Ok(())
}

/// Fails when one cell's text passes the limit.
#[inline]
pub(crate) fn check_cell(
    len: usize,
    max: usize,
    sheet: &str,
    row: u64,
) -> Result<(), ParseFailure> {
    if len > max {
        return Err(ParseFailure::new(
            TaskErrorCode::CellTooLarge,
            format!(
                "sheet '{sheet}', data row {row}: a cell of {len} bytes exceeds the limit of {max}"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_id() -> SheetId {
        SheetId {
            index: 0,
            name: "s".into(),
            hidden: false,
        }
    }

    #[test]
    fn blank_and_duplicate_header_names_are_filled_in() {
        let mut s = SheetBuilder::new(test_id(), ColumnTyping::Inferred, 100);
        let names = ["id", "", "id", " name ", "id"].map(String::from).to_vec();
        assert!(s.set_header(names, 1).is_ok());
        assert!(s.ensure_width(7).is_ok());
        let summary = s.finish();
        assert_eq!(
            summary.columns,
            ["id", "column_2", "id_2", "name", "id_3", "column_6", "column_7"]
        );
        assert_eq!(summary.extra_columns, 2);
    }

    #[test]
    fn generated_names_do_not_collide_with_header_names() {
        let mut s = SheetBuilder::new(test_id(), ColumnTyping::Inferred, 100);
        assert!(s.set_header(vec!["column_2".into()], 1).is_ok());
        assert!(s.ensure_width(2).is_ok());
        assert_eq!(s.finish().columns, ["column_2", "column_2_2"]);
    }

    #[test]
    fn too_wide_rows_fail() {
        let mut s = SheetBuilder::new(test_id(), ColumnTyping::Inferred, 2);
        assert!(s.set_header(vec!["a".into()], 1).is_ok());
        let err = s.ensure_width(3).err().map(|e| e.code);
        assert_eq!(err, Some(TaskErrorCode::TooManyColumns));
    }
}
