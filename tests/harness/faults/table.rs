//! One table of typed cells written out twice, as a CSV file and as an xlsx workbook, so the two
//! files of a case hold the same values and every fault sits at the same row number in both
//! (the header is row 1, as a person counts in a spreadsheet or in the text file).

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use rust_xlsxwriter::{DocProperties, ExcelDateTime, Format, Workbook, Worksheet};

/// The worksheet every case's workbook holds its table in.
pub const SHEET: &str = "Invoices";

/// A cell as a person would type it. CSV files get the text of every cell; workbooks get typed
/// cells or that same text, as the case chooses ([`XlsxCells`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Nothing at all: an empty CSV field, no cell in the workbook.
    Empty,
    Text(String),
    Int(i64),
    /// An amount in cents, written with `.` grouping thousands and `,` before the cents
    /// (`1.234,50`), the decimalChar and groupChar of the invoice schema.
    Amount(i64),
    /// Written `%d/%m/%Y`, the invoice schema's date format.
    Date(NaiveDate),
    /// Written as ISO 8601 in UTC (`2026-01-01T08:00:00Z`), the datetime type's default format.
    DateTime(NaiveDateTime),
    /// Written `%H:%M:%S`, the time type's default format.
    Time(NaiveTime),
}

impl Cell {
    pub fn text(s: &str) -> Cell {
        Cell::Text(s.to_owned())
    }

    /// The cell's text in a CSV file (and in a workbook written as text).
    fn to_text(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Amount(cents) => amount_text(*cents),
            Cell::Date(d) => d.format("%d/%m/%Y").to_string(),
            Cell::DateTime(dt) => dt.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            Cell::Time(t) => t.format("%H:%M:%S").to_string(),
        }
    }
}

/// `1234567` cents → `12.345,67`.
fn amount_text(cents: i64) -> String {
    let units = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, digit) in units.chars().enumerate() {
        if i > 0 && (units.len() - i).is_multiple_of(3) {
            grouped.push('.');
        }
        grouped.push(digit);
    }
    format!("{grouped},{:02}", cents % 100)
}

/// How a case's workbook stores its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XlsxCells {
    /// Numbers as numbers, dates, datetimes and times as date cells with a date number format:
    /// a workbook as a spreadsheet program saves it. Text cells stay text.
    Typed,
    /// Every cell as a string, with the text the CSV file has: a workbook exported by a system
    /// that writes everything as text.
    Text,
}

/// A header and its rows; rows may be shorter or longer than the header.
#[derive(Debug, Clone)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// The cells of the data row a person sees as row `row` (the header being row 1).
    pub fn row_mut(&mut self, row: u64) -> &mut Vec<Cell> {
        let index = usize::try_from(row)
            .ok()
            .and_then(|r| r.checked_sub(2))
            .expect("data rows start at row 2");
        &mut self.rows[index]
    }

    /// The cell of `row` in the column headed `column`.
    pub fn cell_mut(&mut self, row: u64, column: &str) -> &mut Cell {
        let at = self.column_index(column);
        &mut self.row_mut(row)[at]
    }

    /// Removes the column headed `column` from the header and from every row.
    pub fn remove_column(&mut self, column: &str) {
        let at = self.column_index(column);
        self.header.remove(at);
        for row in &mut self.rows {
            row.remove(at);
        }
    }

    /// Inserts a column headed `name` at position `at`, the cell of each row given by `cell` from
    /// the row's number.
    pub fn insert_column(&mut self, at: usize, name: &str, cell: impl Fn(u64) -> Cell) {
        self.header.insert(at, name.to_owned());
        for (row, cells) in (2..).zip(&mut self.rows) {
            cells.insert(at, cell(row));
        }
    }

    /// Puts the columns in the opposite order.
    pub fn reverse_columns(&mut self) {
        self.header.reverse();
        for row in &mut self.rows {
            row.reverse();
        }
    }

    pub fn column_index(&self, column: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == column)
            .unwrap_or_else(|| panic!("no column {column} in {:?}", self.header))
    }

    /// The table as RFC 4180 CSV: comma-separated, LF line ends, fields quoted when they hold a
    /// comma, a quote or a line break.
    pub fn csv(&self) -> Vec<u8> {
        let mut out = csv_line(self.header.iter().map(|h| csv_field(h)));
        for row in &self.rows {
            out.push_str(&csv_line(row.iter().map(|c| csv_field(&c.to_text()))));
        }
        out.into_bytes()
    }

    /// The table as an xlsx workbook with one worksheet, [`SHEET`]. Empty cells are not
    /// written, so a row with no cells at all is a gap between rows, as in a saved spreadsheet.
    pub fn xlsx(&self, cells: XlsxCells) -> Vec<u8> {
        let mut book = Workbook::new();
        // A fixed creation time (rust_xlsxwriter's default is now): the same table, the same bytes.
        let created = ExcelDateTime::from_ymd(2026, 1, 1).expect("a date");
        book.set_properties(&DocProperties::new().set_creation_datetime(&created));
        let sheet = book.add_worksheet();
        sheet.set_name(SHEET).expect("sheet name");
        for (col, name) in self.header.iter().enumerate() {
            sheet
                .write_string(0, column(col), name)
                .expect("write header");
        }
        let formats = DateFormats::new();
        for (r, row) in self.rows.iter().enumerate() {
            let r = u32::try_from(r + 1).expect("row fits in a sheet");
            for (col, cell) in row.iter().enumerate() {
                write_cell(sheet, r, column(col), cell, cells, &formats);
            }
        }
        book.save_to_buffer().expect("xlsx to buffer")
    }
}

fn csv_line(fields: impl Iterator<Item = String>) -> String {
    let mut line = fields.collect::<Vec<_>>().join(",");
    line.push('\n');
    line
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn column(col: usize) -> u16 {
    u16::try_from(col).expect("column fits in a sheet")
}

/// The number formats that make a cell a date, a datetime or a time for a spreadsheet program
/// (and for openpyxl, which frictionless reads workbooks with).
struct DateFormats {
    date: Format,
    datetime: Format,
    time: Format,
    amount: Format,
}

impl DateFormats {
    fn new() -> Self {
        DateFormats {
            date: Format::new().set_num_format("dd/mm/yyyy"),
            datetime: Format::new().set_num_format("yyyy-mm-dd hh:mm:ss"),
            time: Format::new().set_num_format("hh:mm:ss"),
            amount: Format::new().set_num_format("#,##0.00"),
        }
    }
}

fn write_cell(
    sheet: &mut Worksheet,
    row: u32,
    col: u16,
    cell: &Cell,
    cells: XlsxCells,
    formats: &DateFormats,
) {
    let written = match (cell, cells) {
        (Cell::Empty, _) => return,
        (Cell::Text(s), _) => sheet.write_string(row, col, s),
        (other, XlsxCells::Text) => sheet.write_string(row, col, other.to_text()),
        // i64 → f64 is exact for every number the cases write (far below 2^53).
        (Cell::Int(n), XlsxCells::Typed) => sheet.write_number(row, col, *n as f64),
        (Cell::Amount(cents), XlsxCells::Typed) => {
            sheet.write_number_with_format(row, col, *cents as f64 / 100.0, &formats.amount)
        }
        (Cell::Date(d), XlsxCells::Typed) => {
            sheet.write_datetime_with_format(row, col, excel_date(*d), &formats.date)
        }
        (Cell::DateTime(dt), XlsxCells::Typed) => {
            let at = excel_date(dt.date())
                .and_hms(narrow(dt.hour()), narrow(dt.minute()), dt.second())
                .expect("datetime in Excel's range");
            sheet.write_datetime_with_format(row, col, at, &formats.datetime)
        }
        (Cell::Time(t), XlsxCells::Typed) => {
            let at = ExcelDateTime::from_hms(narrow(t.hour()), narrow(t.minute()), t.second())
                .expect("time of day");
            sheet.write_datetime_with_format(row, col, at, &formats.time)
        }
    };
    written.expect("write cell");
}

fn excel_date(d: NaiveDate) -> ExcelDateTime {
    let year = u16::try_from(d.year()).expect("year in Excel's range");
    ExcelDateTime::from_ymd(year, narrow(d.month()), narrow(d.day()))
        .expect("date in Excel's range")
}

/// A calendar or clock component (month, day, hour, minute, second) in the width
/// rust_xlsxwriter takes it in; they are all small.
fn narrow<T: TryFrom<u32>>(n: u32) -> T {
    T::try_from(n).unwrap_or_else(|_| panic!("{n} is no calendar or clock component"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_group_thousands_with_dots_and_write_cents_after_a_comma() {
        assert_eq!(amount_text(5), "0,05");
        assert_eq!(amount_text(123_450), "1.234,50");
        assert_eq!(amount_text(123_456_789), "1.234.567,89");
    }
}
