//! A stored CSV string read as its column's type: as the JSON the rows endpoint returns
//! ([`render`]), or as a value the export writes straight into its output ([`render_str`]);
//! dates and datetimes as ISO 8601 text in a fixed buffer ([`IsoText`]).

use chrono::{Datelike as _, NaiveDate};
use serde_json::Value;

use super::recognise::{datetime_text, parse_bool, parse_date, parse_decimal, parse_integer};
use super::ColumnType;

/// Converts a stored cell to the JSON the rows endpoint returns for a column of type `ty`.
/// Strings that do not match the type (which inference never produces) are returned unchanged,
/// as are nulls and values that are already typed.
pub fn render(value: Value, ty: ColumnType) -> Value {
    let Value::String(s) = &value else {
        return value;
    };
    render_str(s, ty).map_or(value, Value::from)
}

/// A stored CSV string read as its column's type: what [`render`] turns it into, without
/// building a `serde_json::Value` (the export writes it straight into its output).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rendered {
    Integer(i64),
    /// Always finite.
    Decimal(f64),
    Boolean(bool),
    /// A date or datetime in its ISO 8601 form.
    Iso(IsoText),
}

impl From<Rendered> for Value {
    fn from(r: Rendered) -> Value {
        match r {
            Rendered::Integer(i) => Value::from(i),
            Rendered::Decimal(f) => {
                serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
            }
            Rendered::Boolean(b) => Value::Bool(b),
            Rendered::Iso(t) => Value::String(t.as_str().to_owned()),
        }
    }
}

/// `s` as a value of type `ty`, or `None` when it stays the string it is: the type is text or
/// mixed, or `s` does not fit it.
pub fn render_str(s: &str, ty: ColumnType) -> Option<Rendered> {
    match ty {
        ColumnType::Integer => parse_integer(s).map(Rendered::Integer),
        ColumnType::Decimal => parse_integer(s).map(Rendered::Integer).or_else(|| {
            parse_decimal(s)
                .filter(|f| f.is_finite())
                .map(Rendered::Decimal)
        }),
        ColumnType::Boolean => parse_bool(s).map(Rendered::Boolean),
        ColumnType::Date => parse_date(s).map(|d| Rendered::Iso(IsoText::date(d))),
        ColumnType::DateTime => match parse_date(s) {
            Some(d) => Some(IsoText::datetime(d, (0, 0, 0, 0), "")),
            None => datetime_text(s),
        }
        .map(Rendered::Iso),
        ColumnType::Text | ColumnType::Mixed => None,
    }
}

/// A date or datetime written out in ISO 8601 (`2024-01-31`, `2024-01-31T09:05:00`,
/// `2024-01-31T09:05:00.250+09:00`) in a fixed buffer: ASCII digits, `-`, `T`, `:`, `.`, an
/// offset's `+`/`-` or `Z`, so it never needs escaping in JSON or quoting in CSV.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct IsoText {
    bytes: [u8; 32],
    len: u8,
}

impl IsoText {
    /// `%Y-%m-%d` as chrono writes it (a four-digit year, which is all the recognisers read).
    fn date(d: NaiveDate) -> IsoText {
        let mut t = IsoText {
            bytes: [0; 32],
            len: 0,
        };
        let year = u32::try_from(d.year()).unwrap_or(0) % 10_000;
        t.digits(year, 4);
        t.push(b'-');
        t.digits(d.month(), 2);
        t.push(b'-');
        t.digits(d.day(), 2);
        t
    }

    /// `%Y-%m-%dT%H:%M:%S`, then `%.3f` (milliseconds, truncated) when there is a fraction,
    /// then `offset` (`Z` or `±hh:mm`, at most 6 bytes) as given.
    pub(super) fn datetime(
        d: NaiveDate,
        (hour, minute, second, nanos): (u32, u32, u32, u32),
        offset: &str,
    ) -> IsoText {
        let mut t = IsoText::date(d);
        t.push(b'T');
        t.digits(hour, 2);
        t.push(b':');
        t.digits(minute, 2);
        t.push(b':');
        t.digits(second, 2);
        if nanos != 0 {
            t.push(b'.');
            t.digits(nanos / 1_000_000, 3);
        }
        for &b in offset.as_bytes().iter().take(6) {
            t.push(b);
        }
        t
    }

    fn push(&mut self, b: u8) {
        self.bytes[usize::from(self.len)] = b;
        self.len += 1;
    }

    /// `n` in `width` digits, zero-padded (`n` has at most `width` digits).
    fn digits(&mut self, mut n: u32, width: u8) {
        for i in (0..width).rev() {
            self.bytes[usize::from(self.len + i)] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        self.len += width;
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII is ever pushed (digits, separators and an offset's ASCII bytes).
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl std::fmt::Debug for IsoText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("IsoText").field(&self.as_str()).finish()
    }
}
