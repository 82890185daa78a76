//! The type of a parsed column, and the rules that decide it. The worker infers a CSV column's
//! type with [`TypeSet::of`] while it streams the file and stores every CSV cell as the original
//! string; the API turns those strings into typed JSON at read time with [`render`]. Keeping the
//! recognisers and the renderer in one module guarantees that a column typed `integer` always
//! renders as numbers. Excel cells arrive already typed, so `render` leaves non-strings alone.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The inferred type of one column of a sheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    Integer,
    Decimal,
    Boolean,
    Date,
    DateTime,
    Text,
    /// Excel only: the cells of the column carry different types (numbers and text, …).
    Mixed,
}

impl ColumnType {
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnType::Integer => "integer",
            ColumnType::Decimal => "decimal",
            ColumnType::Boolean => "boolean",
            ColumnType::Date => "date",
            ColumnType::DateTime => "date_time",
            ColumnType::Text => "text",
            ColumnType::Mixed => "mixed",
        }
    }
}

/// The set of column types one value (or every value of a column so far) is compatible with.
/// Integers are also decimals and dates are also datetimes, so a column of `1` and `1.5` is a
/// decimal column and a column of dates and datetimes is a datetime column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeSet(u8);

impl TypeSet {
    pub const INTEGER: u8 = 1;
    pub const DECIMAL: u8 = 2;
    pub const BOOLEAN: u8 = 4;
    pub const DATE: u8 = 8;
    pub const DATETIME: u8 = 16;
    /// Every type still possible: the state of a column before its first non-empty value.
    pub const ANY: TypeSet = TypeSet(31);
    /// Nothing but text.
    pub const TEXT: TypeSet = TypeSet(0);

    /// The types a non-empty CSV value belongs to.
    pub fn of(s: &str) -> TypeSet {
        let Some(&first) = s.as_bytes().first() else {
            return TypeSet::TEXT;
        };
        match first {
            b'0'..=b'9' | b'-' | b'+' | b'.' => {
                if parse_integer(s).is_some() {
                    TypeSet(Self::INTEGER | Self::DECIMAL)
                } else if is_decimal(s) {
                    TypeSet(Self::DECIMAL)
                } else if first.is_ascii_digit() && parse_date(s).is_some() {
                    TypeSet(Self::DATE | Self::DATETIME)
                } else if first.is_ascii_digit() && is_datetime(s) {
                    TypeSet(Self::DATETIME)
                } else {
                    TypeSet::TEXT
                }
            }
            b't' | b'T' | b'f' | b'F' if parse_bool(s).is_some() => TypeSet(Self::BOOLEAN),
            _ => TypeSet::TEXT,
        }
    }

    /// `self.intersect(TypeSet::of(s))`, but testing `s` only against the types still in
    /// `self`: once a column is known to hold dates, its values are only ever checked as dates.
    /// This runs on every non-empty CSV cell, so it is the cost of type inference.
    #[inline]
    pub fn narrow(self, s: &str) -> TypeSet {
        const NUMBER: u8 = TypeSet::INTEGER | TypeSet::DECIMAL;
        const DATES: u8 = TypeSet::DATE | TypeSet::DATETIME;
        let b = self.0;
        // The kinds are disjoint (no string is both a number and a date, a date and a
        // datetime, …), so each family is tested on its own.
        let mut fits = 0;
        if b & NUMBER != 0 {
            if parse_integer(s).is_some() {
                fits |= NUMBER;
            } else if b & Self::DECIMAL != 0 && is_decimal(s) {
                fits |= Self::DECIMAL;
            }
        }
        if b & Self::BOOLEAN != 0 && parse_bool(s).is_some() {
            fits |= Self::BOOLEAN;
        }
        if b & DATES != 0 {
            if parse_date(s).is_some() {
                fits |= DATES;
            } else if b & Self::DATETIME != 0 && is_datetime(s) {
                fits |= Self::DATETIME;
            }
        }
        TypeSet(b & fits)
    }

    pub fn intersect(self, other: TypeSet) -> TypeSet {
        TypeSet(self.0 & other.0)
    }

    pub fn is_text(self) -> bool {
        self.0 == 0
    }

    /// The narrowest column type left. `seen_values` is false for a column with no non-empty
    /// value at all, which is reported as text.
    pub fn column_type(self, seen_values: bool) -> ColumnType {
        let b = self.0;
        if !seen_values || b == 0 {
            ColumnType::Text
        } else if b & Self::INTEGER != 0 {
            ColumnType::Integer
        } else if b & Self::DECIMAL != 0 {
            ColumnType::Decimal
        } else if b & Self::BOOLEAN != 0 {
            ColumnType::Boolean
        } else if b & Self::DATE != 0 {
            ColumnType::Date
        } else {
            ColumnType::DateTime
        }
    }
}

/// Converts a stored cell to the JSON the rows endpoint returns for a column of type `ty`.
/// Strings that do not match the type (which inference never produces) are returned unchanged,
/// as are nulls and values that are already typed.
pub fn render(value: Value, ty: ColumnType) -> Value {
    let Value::String(s) = &value else {
        return value;
    };
    let converted = match ty {
        ColumnType::Integer => parse_integer(s).map(Value::from),
        ColumnType::Decimal => parse_integer(s).map(Value::from).or_else(|| {
            parse_decimal(s).and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        }),
        ColumnType::Boolean => parse_bool(s).map(Value::Bool),
        ColumnType::Date => parse_date(s).map(|d| Value::String(d.format("%Y-%m-%d").to_string())),
        ColumnType::DateTime => parse_date(s)
            .map(|d| d.and_time(NaiveTime::MIN))
            .map(|dt| Value::String(format_datetime(dt, "")))
            .or_else(|| parse_datetime(s).map(Value::String)),
        ColumnType::Text | ColumnType::Mixed => None,
    };
    converted.unwrap_or(value)
}

/// An integer as people write it: optional sign, digits, no leading zero (`00123` is an
/// identifier, not a number), within `i64`.
pub fn parse_integer(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        rest => (false, rest),
    };
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    // Up to 18 digits always fit in an i64: fold them without the general parser, which this
    // hot path (every cell of an integer column) would otherwise pay for.
    if digits.len() < 19 {
        let value = digits
            .iter()
            .fold(0i64, |acc, &d| acc * 10 + i64::from(d - b'0'));
        return Some(if negative { -value } else { value });
    }
    s.parse().ok()
}

/// A decimal: optional sign, an integer part without leading zeros, a fraction and/or an
/// exponent. At most 17 significant digits, so that the value survives the trip through `f64`.
pub fn parse_decimal(s: &str) -> Option<f64> {
    if !decimal_syntax(s) {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn decimal_syntax(s: &str) -> bool {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s).as_bytes();
    let (mantissa, exponent) = match body.iter().position(|&b| b == b'e' || b == b'E') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int_part, frac_part) = match mantissa.iter().position(|&b| b == b'.') {
        Some(i) => (&mantissa[..i], Some(&mantissa[i + 1..])),
        None => (mantissa, None),
    };
    let all_digits = |p: &[u8]| !p.is_empty() && p.iter().all(u8::is_ascii_digit);
    if !all_digits(int_part) || (int_part.len() > 1 && int_part[0] == b'0') {
        return false;
    }
    if let Some(f) = frac_part {
        if !all_digits(f) {
            return false;
        }
    }
    if let Some(e) = exponent {
        if !all_digits(
            e.strip_prefix(b"-")
                .or_else(|| e.strip_prefix(b"+"))
                .unwrap_or(e),
        ) {
            return false;
        }
    }
    if frac_part.is_none() && exponent.is_none() {
        return false;
    }
    if int_part.len() + frac_part.map_or(0, <[u8]>::len) > 17 {
        return false;
    }
    true
}

/// Whether `s` is a decimal [`parse_decimal`] accepts. Only exponents need the float parse (to
/// refuse overflow to infinity); the syntax decides the rest, which keeps inference cheap.
pub fn is_decimal(s: &str) -> bool {
    if s.bytes().any(|b| b == b'e' || b == b'E') {
        return parse_decimal(s).is_some();
    }
    decimal_syntax(s)
}

/// `true`/`false` in any case. `yes`, `1` and friends are not booleans: they are too often
/// answers or codes.
pub fn parse_bool(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// A calendar date written year first: `2024-01-31` or `2024/01/31` (day-first forms are
/// ambiguous between locales, so they stay text). Hand-rolled: this runs on every cell of a
/// date-looking column, and chrono's format-string parser is several times slower.
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 {
        return None;
    }
    let sep = b[4];
    if (sep != b'-' && sep != b'/') || b[7] != sep {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    NaiveDate::from_ymd_opt(year as i32, month, day)
}

/// The value of an all-ASCII-digit slice.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

/// `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff…` (up to nanoseconds).
fn parse_time(s: &str) -> Option<NaiveTime> {
    let b = s.as_bytes();
    if b.len() < 5 || b[2] != b':' {
        return None;
    }
    let hour = digits(&b[0..2])?;
    let minute = digits(&b[3..5])?;
    let (second, nanos) = match b.len() {
        5 => (0, 0),
        8.. if b[5] == b':' => {
            let second = digits(&b[6..8])?;
            let nanos = match &b[8..] {
                [] => 0,
                [b'.', frac @ ..] if !frac.is_empty() && frac.len() <= 9 => {
                    digits(frac)? * 10u32.pow(9 - frac.len() as u32)
                }
                _ => return None,
            };
            (second, nanos)
        }
        _ => return None,
    };
    NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)
}

/// A date and time, `T` or space separated, minutes or seconds (with an optional fraction),
/// with an optional `Z` or `±hh:mm` offset, split into its parts.
fn datetime_parts(s: &str) -> Option<(NaiveDateTime, &str)> {
    if s.len() < 16 || s.len() > 40 || !s.is_char_boundary(10) || !s.is_char_boundary(11) {
        return None;
    }
    let date = parse_date(&s[..10])?;
    if !matches!(s.as_bytes()[10], b'T' | b' ') {
        return None;
    }
    let (time_part, offset) = split_offset(&s[11..])?;
    Some((date.and_time(parse_time(time_part)?), offset))
}

/// Whether `s` is a datetime [`parse_datetime`] accepts (without building its ISO form).
pub fn is_datetime(s: &str) -> bool {
    datetime_parts(s).is_some()
}

/// A datetime as [`is_datetime`] accepts it, in its ISO 8601 form
/// (`2024-01-31T09:05:00`, the offset kept, normalised).
pub fn parse_datetime(s: &str) -> Option<String> {
    datetime_parts(s).map(|(dt, offset)| format_datetime(dt, offset))
}

fn split_offset(rest: &str) -> Option<(&str, &str)> {
    if let Some(t) = rest.strip_suffix('Z') {
        return Some((t, "Z"));
    }
    if rest.len() > 6 && rest.is_char_boundary(rest.len() - 6) {
        let (t, off) = rest.split_at(rest.len() - 6);
        let ob = off.as_bytes();
        if (ob[0] == b'+' || ob[0] == b'-')
            && ob[1].is_ascii_digit()
            && ob[2].is_ascii_digit()
            && ob[3] == b':'
            && ob[4].is_ascii_digit()
            && ob[5].is_ascii_digit()
        {
            return Some((t, off));
        }
    }
    Some((rest, ""))
}

fn format_datetime(dt: NaiveDateTime, offset: &str) -> String {
    let base = if dt.and_utc().timestamp_subsec_nanos() == 0 {
        dt.format("%Y-%m-%dT%H:%M:%S").to_string()
    } else {
        dt.format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
    };
    format!("{base}{offset}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn column(values: &[&str]) -> ColumnType {
        let set = values
            .iter()
            .fold(TypeSet::ANY, |acc, v| acc.intersect(TypeSet::of(v)));
        set.column_type(!values.is_empty())
    }

    #[test]
    fn columns_are_typed_only_when_every_value_fits() {
        assert_eq!(column(&["1", "-42", "+7"]), ColumnType::Integer);
        assert_eq!(column(&["1", "2.5", "1e3"]), ColumnType::Decimal);
        assert_eq!(column(&["TRUE", "false"]), ColumnType::Boolean);
        assert_eq!(column(&["2024-01-31", "2024/02/29"]), ColumnType::Date);
        assert_eq!(
            column(&["2024-01-31", "2024-01-31 09:05"]),
            ColumnType::DateTime
        );
        assert_eq!(column(&["1", "x"]), ColumnType::Text);
        assert_eq!(column(&[]), ColumnType::Text);
    }

    #[test]
    fn narrowing_agrees_with_intersecting_for_every_column_state() {
        let samples = [
            "1",
            "-42",
            "+7",
            "0",
            "00123",
            "9223372036854775807",
            "9223372036854775808",
            "12345678901234567890",
            "2.5",
            "1e3",
            "1e999",
            "01.5",
            ".5",
            "TRUE",
            "false",
            "yes",
            "2024-01-31",
            "2024/02/29",
            "2024-02-30",
            "2024-01-31 09:05",
            "2024-01-31T09:05:00Z",
            "2024-01-31 25:00",
            "090-1234-5678",
            "x",
            "東京",
            "-",
            "+",
        ];
        for bits in 0..=31u8 {
            let set = TypeSet(bits);
            for s in samples {
                assert_eq!(
                    set.narrow(s),
                    set.intersect(TypeSet::of(s)),
                    "{bits:05b} {s:?}"
                );
            }
        }
        assert_eq!(
            parse_integer("-123456789012345678"),
            Some(-123_456_789_012_345_678)
        );
        assert_eq!(parse_integer("9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_integer("9223372036854775808"), None);
    }

    #[test]
    fn identifiers_with_leading_zeros_and_phone_numbers_stay_text() {
        assert_eq!(column(&["00123"]), ColumnType::Text);
        assert_eq!(column(&["123", "00123"]), ColumnType::Text);
        assert_eq!(column(&["090-1234-5678"]), ColumnType::Text);
        assert_eq!(column(&["+81 3 1234 5678"]), ColumnType::Text);
        assert_eq!(column(&["01.5"]), ColumnType::Text);
        assert_eq!(column(&["12345678901234567890"]), ColumnType::Text);
        assert_eq!(column(&["2024-02-30"]), ColumnType::Text);
        assert_eq!(column(&["2024-01-31 あいうえおか"]), ColumnType::Text);
        assert_eq!(column(&["2024-01-31 25:00"]), ColumnType::Text);
        assert_eq!(column(&["2024-1-31"]), ColumnType::Text);
    }

    #[test]
    fn render_turns_strings_into_typed_json() {
        assert_eq!(render(json!("-42"), ColumnType::Integer), json!(-42));
        assert_eq!(render(json!("2.5"), ColumnType::Decimal), json!(2.5));
        assert_eq!(render(json!("3"), ColumnType::Decimal), json!(3));
        assert_eq!(render(json!("TRUE"), ColumnType::Boolean), json!(true));
        assert_eq!(
            render(json!("2024/01/05"), ColumnType::Date),
            json!("2024-01-05")
        );
        assert_eq!(
            render(json!("2024-01-05 10:30"), ColumnType::DateTime),
            json!("2024-01-05T10:30:00")
        );
        assert_eq!(
            render(json!("2024-01-05T10:30:00.5+09:00"), ColumnType::DateTime),
            json!("2024-01-05T10:30:00.500+09:00")
        );
        assert_eq!(
            render(json!("2024-01-05"), ColumnType::DateTime),
            json!("2024-01-05T00:00:00")
        );
    }

    #[test]
    fn render_leaves_text_nulls_and_typed_values_alone() {
        assert_eq!(render(json!("00123"), ColumnType::Text), json!("00123"));
        assert_eq!(render(Value::Null, ColumnType::Integer), Value::Null);
        assert_eq!(render(json!(1.5), ColumnType::Mixed), json!(1.5));
        assert_eq!(render(json!("oops"), ColumnType::Integer), json!("oops"));
    }

    #[test]
    fn column_types_serialize_in_snake_case() {
        assert_eq!(
            serde_json::to_string(&ColumnType::DateTime).ok().as_deref(),
            Some("\"date_time\"")
        );
    }
}
