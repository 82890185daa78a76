//! A workbook cell's value as the JSON text of a row: numbers, booleans and strings as
//! themselves, dates and datetimes as ISO 8601 under either date system (written digit by digit:
//! they are most of a business sheet's cells), durations as ISO 8601 durations, error cells as
//! their text; and the [`Kind`] of each value, from which the sheet's column types follow. For a
//! templated sheet, each cell as the template engine reads it ([`template_cell`]).

use std::fmt::Write;

use calamine::DataRef;
use template::Cell as TemplateCell;

use crate::parse::table::sheet::{check_cell, Kind, SheetBuilder};
use crate::parse::writers::json;
use crate::parse::ParseFailure;

/// Writes one typed cell as JSON and says what kind of value it was (`None` for null).
pub(super) fn push_value(
    out: &mut String,
    value: &DataRef<'_>,
    max_cell: usize,
    sheet: &SheetBuilder,
) -> Result<Option<Kind>, ParseFailure> {
    let kind = match value {
        DataRef::Int(i) => {
            out.push_str(itoa::Buffer::new().format(*i));
            Kind::Integer
        }
        DataRef::Float(f) => {
            json::push_f64(out, *f);
            if f.fract() == 0.0 {
                Kind::Integer
            } else {
                Kind::Decimal
            }
        }
        DataRef::String(s) => return push_text(out, s, max_cell, sheet),
        DataRef::SharedString(s) => return push_text(out, s, max_cell, sheet),
        DataRef::Bool(b) => {
            out.push_str(if *b { "true" } else { "false" });
            Kind::Boolean
        }
        DataRef::DateTime(dt) => {
            // ISO 8601 text never needs JSON escaping.
            out.push('"');
            let kind = write_excel_datetime(out, dt);
            out.push('"');
            kind
        }
        DataRef::DateTimeIso(s) => {
            json::push_str(out, s);
            if s.contains('T') {
                Kind::DateTime
            } else if s.len() == 10 {
                Kind::Date
            } else {
                Kind::Text
            }
        }
        DataRef::DurationIso(s) => {
            json::push_str(out, s);
            Kind::Text
        }
        DataRef::Error(e) => {
            json::push_str(out, &e.to_string());
            Kind::Text
        }
        DataRef::Empty => {
            out.push_str("null");
            return Ok(None);
        }
    };
    Ok(Some(kind))
}

fn push_text(
    out: &mut String,
    s: &str,
    max_cell: usize,
    sheet: &SheetBuilder,
) -> Result<Option<Kind>, ParseFailure> {
    if s.is_empty() {
        out.push_str("null");
        return Ok(None);
    }
    check_cell(s.len(), max_cell, &sheet.id.name, sheet.rows)?;
    json::push_str(out, s);
    Ok(Some(Kind::Text))
}

/// An Excel serial date as ISO 8601: a date when it has no time of day, a datetime otherwise,
/// a time of day alone below 1.0, and an ISO 8601 duration for duration formats (`[h]:mm`).
fn write_excel_datetime(out: &mut String, dt: &calamine::ExcelDateTime) -> Kind {
    if dt.is_duration() {
        let total_ms = (dt.as_f64() * 86_400_000.0).round() as i64;
        let sign = if total_ms < 0 { "-" } else { "" };
        let ms = total_ms.unsigned_abs();
        let (h, m, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
        // `write!` to a String cannot fail.
        let _ = write!(out, "{sign}PT{h}H{m}M{s}");
        if frac != 0 {
            let _ = write!(out, ".{frac:03}");
        }
        out.push('S');
        return Kind::Text;
    }
    // Dates are most of a business sheet's cells: written digit by digit, not through `fmt`.
    let (y, mo, d, h, mi, s, ms) = dt.to_ymd_hms_milli();
    let v = dt.as_f64();
    let time_only = (0.0..1.0).contains(&v);
    if !time_only {
        push_digits(out, u32::from(y), 4);
        out.push('-');
        push_digits(out, u32::from(mo), 2);
        out.push('-');
        push_digits(out, u32::from(d), 2);
        if h == 0 && mi == 0 && s == 0 && ms == 0 {
            return Kind::Date;
        }
        out.push('T');
    }
    push_digits(out, u32::from(h), 2);
    out.push(':');
    push_digits(out, u32::from(mi), 2);
    out.push(':');
    push_digits(out, u32::from(s), 2);
    if ms != 0 {
        out.push('.');
        push_digits(out, u32::from(ms), 3);
    }
    if time_only {
        Kind::Text
    } else {
        Kind::DateTime
    }
}

/// Appends `n` zero-padded to `width` digits (more if it needs them).
fn push_digits(out: &mut String, n: u32, width: usize) {
    let mut digits = itoa::Buffer::new();
    let text = digits.format(n);
    for _ in text.len()..width {
        out.push('0');
    }
    out.push_str(text);
}

/// A header cell's text, whatever its type.
pub(super) fn header_text(value: &DataRef<'_>) -> String {
    match value {
        DataRef::String(s) => s.clone(),
        DataRef::SharedString(s) => (*s).to_owned(),
        DataRef::DateTime(dt) => {
            let mut s = String::new();
            write_excel_datetime(&mut s, dt);
            s
        }
        DataRef::Float(f) => {
            let mut s = String::new();
            json::push_f64(&mut s, *f);
            s
        }
        DataRef::Int(i) => i.to_string(),
        DataRef::Bool(b) => b.to_string(),
        DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::Error(e) => e.to_string(),
        DataRef::Empty => String::new(),
    }
}

/// A workbook cell as the template engine reads it: typed where the workbook typed it.
pub(super) fn template_cell<'a>(value: &'a DataRef<'_>) -> TemplateCell<'a> {
    match value {
        DataRef::Int(i) => TemplateCell::Int(*i),
        DataRef::Float(f) => TemplateCell::Float(*f),
        DataRef::String(s) => TemplateCell::Text(s),
        DataRef::SharedString(s) => TemplateCell::Text(s),
        DataRef::Bool(b) => TemplateCell::Bool(*b),
        // A serial below 1 has no date: Excel's time of day (`12:30`).
        DataRef::DateTime(dt) => match dt.as_datetime() {
            Some(at) if dt.is_datetime() && dt.as_f64() < 1.0 => TemplateCell::Time(at.time()),
            Some(at) if dt.is_datetime() => TemplateCell::DateTime(at),
            _ => TemplateCell::Float(dt.as_f64()),
        },
        DataRef::DateTimeIso(s) => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .map(TemplateCell::Date)
            .or_else(|_| {
                s.parse::<chrono::NaiveDateTime>()
                    .map(TemplateCell::DateTime)
            })
            .unwrap_or(TemplateCell::Text(s)),
        DataRef::DurationIso(s) => TemplateCell::Text(s),
        DataRef::Error(e) => TemplateCell::Error(error_text(e)),
        DataRef::Empty => TemplateCell::Empty,
    }
}

/// An error cell's text, as Excel shows it.
fn error_text(e: &calamine::CellErrorType) -> &'static str {
    use calamine::CellErrorType as E;
    match e {
        E::Div0 => "#DIV/0!",
        E::NA => "#N/A",
        E::Name => "#NAME?",
        E::Null => "#NULL!",
        E::Num => "#NUM!",
        E::Ref => "#REF!",
        E::Value => "#VALUE!",
        E::GettingData => "#DATA!",
    }
}
