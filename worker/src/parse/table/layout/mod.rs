//! Accounting for every record of a sheet: which rows are the header, which are data (and
//! which of those are blank), and which were set aside and why — above the table, notes under
//! it, or another table. The readers tell [`Tracker`] each row after the header as they read
//! it; it decides whether the row is data or past the table's end, and at the end builds the
//! sheet's [`SheetLayout`], whose counts add up to the sheet's records by construction.
//!
//! A table may end only at a row of names, or a single cell, after blank rows
//! ([`header::ends_table`]), and even then only once the rows after it have been seen
//! ([`Fate::Held`], at most [`MAX_HELD`]): when they are rows of the same kind as the table's
//! and the row does not repeat the header, or when more rows of the table's kind would be set
//! aside than the table keeps, they are all data ([`Tracker::resolve`]). So a row is never
//! dropped on the strength of one line.
//!
//! A person may force the table's end ([`ForcedEnd`], a layout override): then no end is
//! guessed, the rows up to the forced one are data, and the rows after it are set aside as a
//! detected end's would be, in blocks of notes or tables.

use shared::domain::layout_override::ForcedEnd;
use shared::domain::task_result::{DataRange, SetAside, SetAsideKind, SheetLayout};

mod tail;

use super::header::{self, Header, Look};
use tail::Tail;

/// The most rows held after a possible end of the table before deciding.
pub(crate) const MAX_HELD: usize = 50;

/// The most bytes of cell text held (as the readers count them) before deciding.
pub(crate) const MAX_HELD_BYTES: usize = 1 << 20;

/// What becomes of a row after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// A data row (or a blank one inside the data).
    Data,
    /// Past the table's end: counted in a set-aside range, not read.
    Aside,
    /// After a possible end: the reader keeps it until [`Tracker::resolve`] says.
    Held,
}

/// Whether rows held after a possible end are data after all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// Read them as data, in order.
    Data,
    /// They were set aside.
    Aside,
}

/// One non-blank row after a possible end, as the decision reads it.
#[derive(Debug, Clone, Copy)]
struct RowLook {
    number: u64,
    values: u32,
    texts: u32,
    /// No name over a typed column, no cell past the table's width, and a value in a typed
    /// column or half the table's cells filled: a row of the table's kind.
    like_data: bool,
}

/// Rows after a possible end of the table, starting with the row that may end it.
#[derive(Debug)]
struct Hold {
    rows: Vec<RowLook>,
    /// The first row repeats the header's names: a table of its own, even of the same kind.
    repeats_header: bool,
}

/// Tracks one sheet's rows from its header on.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    /// The header's rows, top first (empty without a header).
    header_rows: Vec<u64>,
    /// The first row of the table (its top header row, or its first data row).
    top: u64,
    /// The header's names, normalised, to tell a repeated header, and its width.
    header_words: Vec<String>,
    width: usize,
    /// Non-blank data rows read, and the last one's number (0: none yet).
    data_rows: u64,
    data_last: u64,
    /// The last non-blank row's number: the sheet's records so far, and the row a gap (blank
    /// rows) is measured from.
    last_filled: u64,
    hold: Option<Hold>,
    /// Rows up to this one were held and are data: they are read again without a new hold.
    replayed_to: u64,
    /// Past the table's end: the ranges set aside, the last one still open.
    tail: Option<Tail>,
    /// The table never ends before the sheet does (a templated sheet).
    to_the_end: bool,
    /// Rows are held or set aside, or the end is forced: no row takes the fast path of
    /// [`Tracker::fate`].
    busy: bool,
    /// The last row of the table when a person forced it (`u64::MAX` otherwise).
    end: u64,
}

impl Tracker {
    /// Starts the table at the header the header phase decided, ending where `end` says.
    pub fn new(header: &Header, end: ForcedEnd) -> Self {
        let header_rows = if header.row == 0 {
            Vec::new()
        } else {
            (header.row + 1 - u64::from(header.rows)..=header.row).collect()
        };
        let (to_the_end, end) = match end {
            ForcedEnd::Detect => (false, u64::MAX),
            ForcedEnd::SheetEnd => (true, u64::MAX),
            ForcedEnd::Row(row) => (true, row),
        };
        Self {
            top: header.first_row,
            header_words: header.names.iter().map(|n| header::normalise(n)).collect(),
            width: header.names.len(),
            last_filled: header.row.max(header.first_row.saturating_sub(1)),
            header_rows,
            to_the_end,
            busy: end != u64::MAX,
            end,
            ..Self::default()
        }
    }

    /// Makes every row after the header data (or blank).
    pub fn run_to_the_end(&mut self) {
        self.to_the_end = true;
    }

    /// Whether rows are being held after a possible end.
    pub fn holding(&self) -> bool {
        self.hold.is_some()
    }

    /// Whether the rows held are enough to decide.
    pub fn hold_is_full(&self) -> bool {
        self.hold.as_ref().is_some_and(|h| h.rows.len() >= MAX_HELD)
    }

    /// Row `number` after the header: `blank` when it has no cell, `cells` its non-empty
    /// (column, text) cells (any text standing for a typed value), `typed(c)` whether column
    /// `c`'s values so far are all of one type other than text.
    #[inline]
    pub fn fate<'t>(
        &mut self,
        number: u64,
        blank: bool,
        cells: impl Iterator<Item = (usize, &'t str)>,
        typed: impl Fn(usize) -> bool,
    ) -> Fate {
        // The next row of a table being read: all but a few rows of a sheet.
        if !blank && !self.busy && number == self.last_filled + 1 {
            self.last_filled = number;
            self.data_rows += 1;
            self.data_last = number;
            return Fate::Data;
        }
        self.fate_after_a_gap(number, blank, cells, typed)
    }

    /// [`Tracker::fate`] for a blank row, a row after blank rows, or any row once the table
    /// may have ended.
    #[cold]
    #[inline(never)]
    fn fate_after_a_gap<'t>(
        &mut self,
        number: u64,
        blank: bool,
        cells: impl Iterator<Item = (usize, &'t str)>,
        typed: impl Fn(usize) -> bool,
    ) -> Fate {
        if number > self.end {
            return self.past_a_forced_end(number, blank, cells, typed);
        }
        if blank {
            return if self.hold.is_some() {
                Fate::Held
            } else if self.tail.is_some() {
                Fate::Aside
            } else {
                Fate::Data
            };
        }
        let after_blank = number > self.last_filled + 1;
        self.last_filled = number;
        if let Some(tail) = self.tail.as_mut() {
            tail.push(
                look_of(number, self.width, cells, &typed),
                number > tail.last + 1,
            );
            return Fate::Aside;
        }
        if let Some(hold) = self.hold.as_mut() {
            hold.rows.push(look_of(number, self.width, cells, &typed));
            return Fate::Held;
        }
        if after_blank && number > self.replayed_to && !self.to_the_end {
            let texts: Vec<(usize, &str)> = cells.collect();
            if header::ends_table(texts.iter().copied(), self.width, &typed) {
                self.hold = Some(Hold {
                    rows: vec![look_of(number, self.width, texts.iter().copied(), &typed)],
                    repeats_header: self.repeats_header(&texts),
                });
                self.busy = true;
                return Fate::Held;
            }
        }
        self.data_rows += 1;
        self.data_last = number;
        Fate::Data
    }

    /// Row `number` after the table's forced end: set aside, in blocks of notes or tables
    /// from the row after the last one of the table.
    fn past_a_forced_end<'t>(
        &mut self,
        number: u64,
        blank: bool,
        cells: impl Iterator<Item = (usize, &'t str)>,
        typed: impl Fn(usize) -> bool,
    ) -> Fate {
        if blank {
            return Fate::Aside;
        }
        self.last_filled = number;
        let look = look_of(number, self.width, cells, &typed);
        match self.tail.as_mut() {
            Some(tail) => tail.push(look, number > tail.last + 1),
            None => self.tail = Some(Tail::new(self.last_accounted() + 1, look)),
        }
        Fate::Aside
    }

    /// Whether most of a row's names are the header's.
    fn repeats_header(&self, cells: &[(usize, &str)]) -> bool {
        let same = cells
            .iter()
            .filter(|(_, t)| {
                let w = header::normalise(t);
                !w.is_empty() && self.header_words.contains(&w)
            })
            .count();
        same * 2 > cells.len()
    }

    /// Decides what the rows held are: data when the rows after the first are all of the
    /// table's kind and it does not repeat the header (or it does, but they run past what is
    /// held, so how many would be set aside is unknown), or when more rows of the table's kind
    /// would be set aside than the table keeps; else the table ends at the first.
    pub fn resolve(&mut self) -> Resolution {
        let Some(hold) = self.hold.take() else {
            return Resolution::Data;
        };
        let after = &hold.rows[1..];
        let like_data = after.iter().filter(|r| r.like_data).count() as u64;
        let continues = !after.is_empty() && like_data == after.len() as u64;
        let open_ended = hold.rows.len() >= MAX_HELD;
        if like_data > self.data_rows || (continues && (!hold.repeats_header || open_ended)) {
            self.replayed_to = self.last_filled;
            self.busy = false;
            return Resolution::Data;
        }
        let from = self.last_accounted() + 1;
        let mut tail = Tail::new(from, hold.rows[0]);
        for r in after {
            tail.push(*r, r.number > tail.last + 1);
        }
        self.tail = Some(tail);
        Resolution::Aside
    }

    /// The last row of the header or the data.
    fn last_accounted(&self) -> u64 {
        self.data_last
            .max(self.header_rows.last().copied().unwrap_or(0))
            .max(self.top.saturating_sub(1))
    }

    /// The sheet's layout once every row was seen (rows still held must have been resolved).
    pub fn finish(self) -> SheetLayout {
        let mut set_aside = Vec::new();
        if self.top > 1 {
            set_aside.push(SetAside::new(1, self.top - 1, SetAsideKind::Above, None));
        }
        let first_row = self.header_rows.last().map_or(self.top, |h| h + 1);
        let data = (self.data_rows > 0).then(|| DataRange {
            first_row,
            last_row: self.data_last,
            blank_rows: self.data_last + 1 - first_row - self.data_rows,
        });
        if let Some(tail) = self.tail {
            set_aside.extend(tail.finish());
        }
        SheetLayout {
            records: self.last_filled,
            header_rows: self.header_rows,
            data,
            set_aside,
        }
    }
}

/// How row `number` reads against a table `width` columns wide.
fn look_of<'t>(
    number: u64,
    width: usize,
    cells: impl Iterator<Item = (usize, &'t str)>,
    typed: &impl Fn(usize) -> bool,
) -> RowLook {
    let (mut values, mut texts, mut typed_values, mut text_over_typed) = (0, 0, 0, false);
    let mut wider = false;
    for (c, text) in cells {
        wider |= c >= width;
        match Look::of(text) {
            Look::Empty => {}
            Look::Text => {
                texts += 1;
                text_over_typed |= typed(c);
            }
            _ => {
                values += 1;
                typed_values += u32::from(typed(c));
            }
        }
    }
    RowLook {
        number,
        values,
        texts,
        like_data: !text_over_typed
            && !wider
            && (typed_values > 0 || (values + texts) as usize >= width.div_ceil(2).max(2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Tracker {
        fn new_detected(header: &Header) -> Self {
            Tracker::new(header, ForcedEnd::Detect)
        }
    }

    fn header(row: u64, rows: u32, first_row: u64) -> Header {
        Header {
            names: vec!["year".into(), "value".into()],
            row,
            rows,
            first_row,
        }
    }

    /// Feeds `csv` lines numbered from `from`; the second column is typed.
    fn feed(t: &mut Tracker, from: u64, csv: &str) -> Vec<Fate> {
        let mut fates = Vec::new();
        for (i, line) in csv.lines().enumerate() {
            let cells: Vec<(usize, &str)> = line.split(',').enumerate().collect();
            let blank = line.trim().is_empty();
            fates.push(t.fate(from + i as u64, blank, cells.into_iter(), |c| c == 1));
        }
        fates
    }

    #[test]
    fn notes_under_the_table_are_set_aside_and_every_row_is_counted() {
        let mut t = Tracker::new_detected(&header(3, 1, 3));
        feed(&mut t, 4, "a,1\nb,2\n\nSource: office,note\n");
        assert_eq!(t.resolve(), Resolution::Aside);
        let layout = t.finish();
        assert_eq!(layout.records, 7);
        assert_eq!(layout.accounted(2), 7);
        assert_eq!(
            layout.set_aside,
            [
                SetAside::new(1, 2, SetAsideKind::Above, None),
                SetAside::new(6, 7, SetAsideKind::Notes, None)
            ]
        );
    }

    #[test]
    fn a_row_of_names_followed_by_rows_of_the_table_is_data() {
        let mut t = Tracker::new_detected(&header(1, 1, 1));
        feed(&mut t, 2, "a,1\n\nNorth,South\nc,3\nd,4\n");
        assert!(t.holding());
        assert_eq!(t.resolve(), Resolution::Data);
        // Read again as data, they are not held again.
        let fates = feed(&mut t, 4, "North,South\nc,3\nd,4\n");
        assert_eq!(fates, [Fate::Data; 3]);
        let layout = t.finish();
        assert_eq!(layout.data.map(|d| d.blank_rows), Some(1));
        assert_eq!(layout.accounted(4), layout.records);
    }

    #[test]
    fn a_repeated_header_over_more_rows_than_are_held_is_data() {
        let mut t = Tracker::new_detected(&header(1, 1, 1));
        let table: String = (0..60).map(|i| format!("r{i},{i}\n")).collect();
        feed(&mut t, 2, &format!("{table}\nyear,value\n{table}"));
        assert!(t.hold_is_full());
        assert_eq!(t.resolve(), Resolution::Data);
    }

    #[test]
    fn a_second_table_repeating_the_header_is_a_table_range() {
        let mut t = Tracker::new_detected(&header(1, 1, 1));
        feed(&mut t, 2, "a,1\nb,2\nc,3\n\nyear,value\nd,4\n\nnote\n");
        assert_eq!(t.resolve(), Resolution::Aside);
        let layout = t.finish();
        assert_eq!(
            layout.set_aside,
            [
                SetAside::new(5, 7, SetAsideKind::Table, Some(6)),
                SetAside::new(8, 9, SetAsideKind::Notes, None)
            ]
        );
        assert_eq!(layout.accounted(3), layout.records);
    }

    #[test]
    fn a_forced_end_keeps_the_rows_above_it_and_sets_aside_the_rows_below() {
        // Notes detection would set aside (row 6) are data up to the forced end at 7; the
        // table under it is set aside as a table.
        let mut t = Tracker::new(&header(1, 1, 1), ForcedEnd::Row(7));
        let fates = feed(&mut t, 2, "a,1\nb,2\n\nnote\nc,3\n\nyear,value\nd,4\n");
        use Fate::{Aside, Data};
        assert_eq!(fates, [Data, Data, Data, Data, Data, Data, Aside, Aside]);
        let layout = t.finish();
        assert_eq!(layout.data.map(|d| (d.first_row, d.last_row)), Some((2, 6)));
        assert_eq!(
            layout.set_aside,
            [SetAside::new(7, 9, SetAsideKind::Table, Some(8))]
        );
        assert_eq!(layout.accounted(4), layout.records);
    }

    #[test]
    fn a_forced_sheet_end_never_holds_a_row() {
        let mut t = Tracker::new(&header(1, 1, 1), ForcedEnd::SheetEnd);
        let fates = feed(&mut t, 2, "a,1\n\nSource: office\n");
        assert!(!fates.contains(&Fate::Held));
        assert!(t.finish().set_aside.is_empty());
    }
}
