//! The cells a parser hands to a template: text (CSV and TSV fields, workbook string cells) or a
//! workbook's typed value, borrowed from the parser's buffers.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::number::Number;
use super::value::{write_date, write_json_str, write_time, Sink};

/// One cell of an upload, as the parser read it.
///
/// CSV parsers pass every field as `Text` (an empty field as `Text("")`, so that a schema
/// whose `missingValues` leaves out `""` can tell it from no cell). Workbook parsers pass
/// string cells as `Text`, blank cells as `Empty`, and an Excel time-only value (a serial
/// below 1) as `Time`; a date cell may come as `Date` or as a `DateTime` at midnight.
///
/// How each kind of cell casts to each field type (frictionless reads only text and Python
/// values; the typed rows are this engine's decisions, the ones frictionless does not make are
/// marked *):
///
/// | cell \ field | string | integer | number | boolean | date | datetime | time | year | any |
/// |---|---|---|---|---|---|---|---|---|---|
/// | `Empty` | null | null | null | null | null | null | null | null | null |
/// | `Text` | missing value → null, else by the field's format | | | | | | | | the text |
/// | `Int` | its digits* | itself | itself | its digits against `trueValues`/`falseValues`* | error | error | error | itself if 0–9999 | integer |
/// | `Float` | shortest text, integral ones without `.0`* | itself if integral | itself (exact shortest decimal) | shortest text against the lists* | error | error | error | integral 0–9999* | number |
/// | `Bool` | `TRUE`/`FALSE`* | error | error | itself | error | error | error | error | boolean |
/// | `DateTime` | ISO 8601 text* | error | error | error | its date when the time is 00:00:00 | itself | error | error | datetime |
/// | `Date` | `YYYY-MM-DD`* | error | error | error | itself | midnight* | error | error | date |
/// | `Time` | `HH:MM:SS[.ffffff]`* | error | error | error | error | error | itself | error | time |
/// | `Error` | error* | error | error | error | error | error | error | error | the text (`#N/A`) |
///
/// "error" is a `type-error`. `missingValues` apply to `Text` cells only: a typed cell holds a
/// value (frictionless compares `str(cell)`, so a numeric 0 would be missing under
/// `missingValues: ["0"]`). Dates and times outside the years 1–9999 are errors, as in Python.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Empty,
    Text(&'a str),
    Int(i64),
    Float(f64),
    Bool(bool),
    DateTime(NaiveDateTime),
    Date(NaiveDate),
    Time(NaiveTime),
    /// A workbook error value, e.g. `#DIV/0!`.
    Error(&'a str),
}

impl Cell<'_> {
    /// Appends the cell as text: a text cell as it is; a number as its shortest form (integral
    /// floats without `.0`); a boolean as `TRUE` or `FALSE`, as a workbook shows it; dates and
    /// times in ISO 8601.
    pub(crate) fn write_text(&self, out: &mut (impl Sink + ?Sized)) {
        match *self {
            Cell::Empty => {}
            Cell::Text(t) | Cell::Error(t) => out.put(t.as_bytes()),
            Cell::Int(i) => out.put(itoa::Buffer::new().format(i).as_bytes()),
            Cell::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => {
                out.put(itoa::Buffer::new().format(f as i64).as_bytes());
            }
            Cell::Float(f) => out.put(ryu::Buffer::new().format(f).as_bytes()),
            Cell::Bool(b) => out.put(if b { b"TRUE" } else { b"FALSE" }),
            Cell::Date(d) => write_date(out, d),
            Cell::DateTime(dt) => {
                write_date(out, dt.date());
                out.put(b"T");
                write_time(out, dt.time());
            }
            Cell::Time(t) => write_time(out, t),
        }
    }

    /// The cell's text (see [`Cell::write_text`]), for a message or an error record.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        self.write_text(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Appends the cell as the JSON of its original value, for a cell that fails its field: text
    /// as a string, numbers and booleans as themselves (non-finite numbers as the strings `"NaN"`,
    /// `"INF"`, `"-INF"`), dates and times as ISO 8601 strings, `Empty` as null.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match *self {
            Cell::Empty => out.extend_from_slice(b"null"),
            Cell::Text(t) | Cell::Error(t) => write_json_str(out, t),
            Cell::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Cell::Int(_) => self.write_text(out),
            Cell::Float(f) if f.is_finite() => self.write_text(out),
            Cell::Float(f) => Number::from_f64(f).write_json(out),
            Cell::Date(_) | Cell::DateTime(_) | Cell::Time(_) => {
                out.push(b'"');
                self.write_text(out);
                out.push(b'"');
            }
        }
    }
}
