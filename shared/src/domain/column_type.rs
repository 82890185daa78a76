//! The type of a parsed column, and the rules that decide it. The worker infers a CSV column's
//! type with [`TypeSet::narrow`] while it streams the file and stores every CSV cell as the original
//! string; the API turns those strings into typed JSON at read time with [`render`]. Keeping the
//! recognisers and the renderer in one module guarantees that a column typed `integer` always
//! renders as numbers. Excel cells arrive already typed, so `render` leaves non-strings alone.

use chrono::{Datelike as _, NaiveDate, NaiveTime};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The inferred type of one column of a sheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

    /// `self` narrowed to the types the non-empty CSV value `value` also fits, testing `value`
    /// only against the types still in `self`: once a column is known to hold dates, its values
    /// are only ever checked as dates. This runs on every non-empty CSV cell, so it is the cost
    /// of type inference; it works on bytes (every type is ASCII, so invalid UTF-8 fits none)
    /// and decides each family in one pass without building the value.
    #[inline]
    pub fn narrow(self, value: &[u8]) -> TypeSet {
        const NUMBER: u8 = TypeSet::INTEGER | TypeSet::DECIMAL;
        const DATES: u8 = TypeSet::DATE | TypeSet::DATETIME;
        let b = self.0;
        // The families are disjoint (no string is both a number and a date, …), so each is
        // tested on its own.
        let mut fits = 0;
        if b & NUMBER != 0 {
            fits |= number_kind(value);
        }
        if b & Self::BOOLEAN != 0 && bool_value(value).is_some() {
            fits |= Self::BOOLEAN;
        }
        if b & DATES != 0 {
            if date_fields(value).is_some() {
                fits |= DATES;
            } else if b & Self::DATETIME != 0 && datetime_fields(value).is_some() {
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
    fn datetime(
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

/// What number `value` is, as [`TypeSet`] bits: `INTEGER | DECIMAL` for an integer as people
/// write it (optional sign, digits, no leading zero: `00123` is an identifier, not a number;
/// within `i64`), `DECIMAL` for a decimal (optional sign, an integer part as above, a fraction
/// and/or an exponent, at most 17 significant digits so that the value survives the trip
/// through `f64`, finite), else 0. One pass over the bytes; only an exponent or a 19-digit
/// integer needs the standard parser.
fn number_kind(value: &[u8]) -> u8 {
    const NUMBER: u8 = TypeSet::INTEGER | TypeSet::DECIMAL;
    let body = match value {
        [b'+' | b'-', rest @ ..] => rest,
        _ => value,
    };
    let int_len = leading_digits(body);
    if int_len == 0 || (int_len > 1 && body[0] == b'0') {
        return 0;
    }
    let rest = &body[int_len..];
    if rest.is_empty() {
        let fits_i64 = int_len < 19
            || (int_len == 19
                && std::str::from_utf8(value).is_ok_and(|s| s.parse::<i64>().is_ok()));
        return if fits_i64 { NUMBER } else { 0 };
    }
    let (frac_len, rest) = match rest {
        [b'.', tail @ ..] => {
            let n = leading_digits(tail);
            if n == 0 {
                return 0;
            }
            (n, &tail[n..])
        }
        _ => (0, rest),
    };
    if int_len + frac_len > 17 {
        return 0;
    }
    match rest {
        [] => TypeSet::DECIMAL,
        [b'e' | b'E', exponent @ ..] => {
            let digits = match exponent {
                [b'+' | b'-', digits @ ..] => digits,
                digits => digits,
            };
            // Only the exponent can overflow to infinity, which JSON cannot hold.
            let ok = !digits.is_empty()
                && leading_digits(digits) == digits.len()
                && std::str::from_utf8(value)
                    .is_ok_and(|s| s.parse::<f64>().is_ok_and(f64::is_finite));
            if ok {
                TypeSet::DECIMAL
            } else {
                0
            }
        }
        _ => 0,
    }
}

fn leading_digits(b: &[u8]) -> usize {
    b.iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(b.len())
}

/// The value of an integer as [`number_kind`] accepts one.
pub fn parse_integer(s: &str) -> Option<i64> {
    if number_kind(s.as_bytes()) & TypeSet::INTEGER == 0 {
        return None;
    }
    s.parse().ok()
}

/// The value of a decimal (or integer) as [`number_kind`] accepts one.
pub fn parse_decimal(s: &str) -> Option<f64> {
    if number_kind(s.as_bytes()) & TypeSet::DECIMAL == 0 {
        return None;
    }
    s.parse().ok()
}

/// `true`/`false` in any case. `yes`, `1` and friends are not booleans: they are too often
/// answers or codes.
pub fn parse_bool(s: &str) -> Option<bool> {
    bool_value(s.as_bytes())
}

fn bool_value(value: &[u8]) -> Option<bool> {
    // Setting bit 5 of a byte lowercases an ASCII letter and makes no other byte a letter
    // that was not one, so one OR and one compare per word ignore case.
    match *value {
        [a, b, c, d] => (u32::from_le_bytes([a, b, c, d]) | 0x2020_2020
            == u32::from_le_bytes(*b"true"))
        .then_some(true),
        [a, b, c, d, e] => (u32::from_le_bytes([a, b, c, d]) | 0x2020_2020
            == u32::from_le_bytes(*b"fals")
            && e | 0x20 == b'e')
            .then_some(false),
        _ => None,
    }
}

/// A calendar date written year first: `2024-01-31` or `2024/01/31` (day-first forms are
/// ambiguous between locales, so they stay text).
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    let (year, month, day) = date_fields(s.as_bytes())?;
    NaiveDate::from_ymd_opt(year, month, day)
}

/// Year, month and day of a date as [`parse_date`] accepts one, checked to be a real day of the
/// proleptic Gregorian calendar (as chrono's, for any four-digit year) without building it.
fn date_fields(b: &[u8]) -> Option<(i32, u32, u32)> {
    let (head, &[d0, d1]) = b.split_first_chunk::<8>()? else {
        return None;
    };
    let sep = head[4];
    if head[7] != sep || (sep != b'-' && sep != b'/') {
        return None;
    }
    // `YYYY-MM-`: digits in bytes 0–3, 5 and 6.
    let [y0, y1, y2, y3, _, m0, m1, _] = digits8(head, 0x0080_8000_8080_8080)?;
    let year = u32::from(y0) * 1000 + u32::from(y1) * 100 + u32::from(y2) * 10 + u32::from(y3);
    let month = u32::from(m0) * 10 + u32::from(m1);
    let day = two_digits(d0, d1)?;
    let days = match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return None,
    };
    (1..=days)
        .contains(&day)
        .then_some((year as i32, month, day))
}

/// The digit values of eight bytes (byte `i` minus `b'0'`), when the bytes picked by `digits`
/// (0x80 in each byte to check) are ASCII digits; the other bytes of the result are garbage.
/// All eight are checked at once in one 64-bit word: after `^ 0x30` a digit is a byte below
/// 10, and adding 0x76 sets the top bit of exactly the bytes that are not (a byte at or above
/// 0x8a also carries into the next byte up, which only flags that byte wrongly when it is
/// unchecked or already flagged, so the callers check their separators themselves).
#[inline(always)]
fn digits8(b: &[u8; 8], digits: u64) -> Option<[u8; 8]> {
    let t = u64::from_le_bytes(*b) ^ 0x3030_3030_3030_3030;
    let bad = (t.wrapping_add(0x7676_7676_7676_7676) | t) & digits;
    (bad == 0).then(|| t.to_le_bytes())
}

/// The value of two ASCII digits.
#[inline(always)]
fn two_digits(a: u8, b: u8) -> Option<u32> {
    let (a, b) = (a.wrapping_sub(b'0'), b.wrapping_sub(b'0'));
    (a < 10 && b < 10).then(|| u32::from(a) * 10 + u32::from(b))
}

/// The value of an all-ASCII-digit slice.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

/// Hour, minute, second and nanosecond of `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff…` (up to
/// nanoseconds), checked to be a time of day.
fn time_fields(b: &[u8]) -> Option<(u32, u32, u32, u32)> {
    let (hour, minute, second, nanos) = if let &[_, _, b':', _, _, b':', _, _] = b {
        // The common `HH:MM:SS` in one word: digits in bytes 0, 1, 3, 4, 6 and 7.
        let [h0, h1, _, m0, m1, _, s0, s1] = digits8(b.first_chunk()?, 0x8080_0080_8000_8080)?;
        let two = |a: u8, b: u8| u32::from(a * 10 + b);
        (two(h0, h1), two(m0, m1), two(s0, s1), 0)
    } else {
        let [h0, h1, b':', m0, m1, rest @ ..] = b else {
            return None;
        };
        let (second, nanos) = match rest {
            [] => (0, 0),
            [b':', s0, s1, fraction @ ..] => {
                let nanos = match fraction {
                    [] => 0,
                    [b'.', f @ ..] if (1..=9).contains(&f.len()) => {
                        digits(f)? * 10u32.pow(9 - f.len() as u32)
                    }
                    _ => return None,
                };
                (two_digits(*s0, *s1)?, nanos)
            }
            _ => return None,
        };
        (two_digits(*h0, *h1)?, two_digits(*m0, *m1)?, second, nanos)
    };
    (hour < 24 && minute < 60 && second < 60).then_some((hour, minute, second, nanos))
}

/// A date and time, `T` or space separated, minutes or seconds (with an optional fraction),
/// with an optional `Z` or `±hh:mm` offset: its date, its time and the offset's length.
#[allow(clippy::type_complexity)]
fn datetime_fields(b: &[u8]) -> Option<((i32, u32, u32), (u32, u32, u32, u32), usize)> {
    if b.len() < 16 || b.len() > 40 || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    let date = date_fields(&b[..10])?;
    let rest = &b[11..];
    let offset_len = match rest {
        [.., b'Z'] => 1,
        [_, .., b'+' | b'-', h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()) =>
        {
            6
        }
        _ => 0,
    };
    let time = time_fields(&rest[..rest.len() - offset_len])?;
    Some((date, time, offset_len))
}

/// A datetime as [`datetime_fields`] reads one, in its ISO 8601 form (`2024-01-31T09:05:00`,
/// the offset kept, normalised).
pub fn parse_datetime(s: &str) -> Option<String> {
    datetime_text(s).map(|t| t.as_str().to_owned())
}

fn datetime_text(s: &str) -> Option<IsoText> {
    let ((year, month, day), (hour, minute, second, nanos), offset_len) =
        datetime_fields(s.as_bytes())?;
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?;
    let offset = s.get(s.len() - offset_len..)?;
    Some(IsoText::datetime(
        date,
        (hour, minute, second, nanos),
        offset,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The types `s` fits by the parsers `render` uses: what inference must agree with.
    fn of(s: &str) -> TypeSet {
        let mut bits = 0;
        if parse_integer(s).is_some() {
            bits |= TypeSet::INTEGER | TypeSet::DECIMAL;
        }
        if parse_decimal(s).is_some_and(f64::is_finite) {
            bits |= TypeSet::DECIMAL;
        }
        if parse_bool(s).is_some() {
            bits |= TypeSet::BOOLEAN;
        }
        if parse_date(s).is_some() {
            bits |= TypeSet::DATE | TypeSet::DATETIME;
        }
        if parse_datetime(s).is_some() {
            bits |= TypeSet::DATETIME;
        }
        TypeSet(bits)
    }

    fn column(values: &[&str]) -> ColumnType {
        let set = values
            .iter()
            .fold(TypeSet::ANY, |acc, v| acc.intersect(of(v)));
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
                    set.narrow(s.as_bytes()),
                    set.intersect(of(s)),
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

    /// The number rules restated the long way (split at the exponent, then at the point), as
    /// an oracle for the one-pass [`number_kind`].
    fn number_oracle(s: &str) -> u8 {
        let all_digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        let body = s.strip_prefix(['+', '-']).unwrap_or(s);
        if all_digits(body) && !(body.len() > 1 && body.starts_with('0')) {
            return if s.parse::<i64>().is_ok() {
                TypeSet::INTEGER | TypeSet::DECIMAL
            } else {
                0
            };
        }
        let (mantissa, exponent) = match body.split_once(['e', 'E']) {
            Some((m, e)) => (m, Some(e)),
            None => (body, None),
        };
        let (int, frac) = match mantissa.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (mantissa, None),
        };
        let ok = all_digits(int)
            && !(int.len() > 1 && int.starts_with('0'))
            && frac.is_none_or(all_digits)
            && exponent.is_none_or(|e| all_digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
            && (frac.is_some() || exponent.is_some())
            && int.len() + frac.map_or(0, str::len) <= 17
            && s.parse::<f64>().is_ok_and(f64::is_finite);
        if ok {
            TypeSet::DECIMAL
        } else {
            0
        }
    }

    #[test]
    fn numbers_are_recognised_as_the_oracle_says_on_generated_strings() {
        use rand::{Rng, SeedableRng};
        const ALPHABET: &[u8] = b"0123456789+-.eE";
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        for _ in 0..200_000 {
            let len = rng.random_range(0..24);
            let s: String = (0..len)
                .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
                .collect();
            assert_eq!(number_kind(s.as_bytes()), number_oracle(&s), "{s:?}");
        }
        for s in [
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "1e308",
            "1e309",
            "12345678901234567.5",
            "1234567890123456.5",
        ] {
            assert_eq!(number_kind(s.as_bytes()), number_oracle(s), "{s:?}");
        }
    }

    /// The value of `b[r]` when it is all ASCII digits, byte by byte.
    fn digits_at(b: &[u8], r: std::ops::Range<usize>) -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    }

    /// What the word-at-a-time recognisers must agree with, written byte by byte.
    fn date_oracle(b: &[u8]) -> Option<(i32, u32, u32)> {
        if b.len() != 10 || b[4] != b[7] || !matches!(b[4], b'-' | b'/') {
            return None;
        }
        let (y, m, d) = (
            digits_at(b, 0..4)?,
            digits_at(b, 5..7)?,
            digits_at(b, 8..10)?,
        );
        NaiveDate::from_ymd_opt(y as i32, m, d).map(|_| (y as i32, m, d))
    }

    fn time_oracle(b: &[u8]) -> Option<(u32, u32, u32, u32)> {
        if b.len() != 8 || b[2] != b':' || b[5] != b':' {
            return None;
        }
        let (h, m, s) = (
            digits_at(b, 0..2)?,
            digits_at(b, 3..5)?,
            digits_at(b, 6..8)?,
        );
        NaiveTime::from_hms_opt(h, m, s).map(|_| (h, m, s, 0))
    }

    /// `base` with every byte value at every position, and with a high byte (whose carry a
    /// word check must not let through) next to each of those on either side.
    fn mutations(base: &str) -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        let len = base.len();
        for i in 0..len {
            for v in 0..=255u8 {
                let mut b = base.as_bytes().to_vec();
                b[i] = v;
                all.push(b.clone());
                if i + 1 < len {
                    for w in [0x8a, 0xc0, 0xff] {
                        b[i + 1] = w;
                        all.push(b.clone());
                        b.swap(i, i + 1);
                        all.push(b.clone());
                        b.swap(i, i + 1);
                    }
                }
            }
        }
        all
    }

    #[test]
    fn every_byte_at_every_position_of_a_date_or_time_is_judged_as_byte_by_byte() {
        for base in ["2024-02-29", "1999/12/31", "0000-01-01"] {
            for b in mutations(base) {
                assert_eq!(date_fields(&b), date_oracle(&b), "{b:?}");
            }
        }
        for base in ["23:59:59", "00:00:00", "09:05:30"] {
            for b in mutations(base) {
                assert_eq!(time_fields(&b), time_oracle(&b), "{b:?}");
            }
        }
        for text in ["true", "TRUE", "True", "false", "FALSE", "fAlSe"] {
            assert_eq!(bool_value(text.as_bytes()), Some(text.len() == 4));
        }
        for v in 0..=255u8 {
            for i in 0..5 {
                let mut b = *b"false";
                b[i] = v;
                let expected = b.eq_ignore_ascii_case(b"false").then_some(false);
                assert_eq!(bool_value(&b), expected, "{b:?}");
                if i < 4 {
                    let mut t = *b"true";
                    t[i] = v;
                    let expected = t.eq_ignore_ascii_case(b"true").then_some(true);
                    assert_eq!(bool_value(&t), expected, "{t:?}");
                }
            }
        }
    }

    #[test]
    fn dates_and_times_are_those_chrono_accepts() {
        for year in [0, 1, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9999] {
            for month in 0..=13 {
                for day in 0..=32 {
                    let text = format!("{year:04}-{month:02}-{day:02}");
                    assert_eq!(
                        date_fields(text.as_bytes()).is_some(),
                        NaiveDate::from_ymd_opt(year, month, day).is_some(),
                        "{text}"
                    );
                }
            }
        }
        for hour in 0..=25 {
            for minute in [0, 59, 60, 61] {
                for second in [0, 59, 60] {
                    let text = format!("{hour:02}:{minute:02}:{second:02}");
                    assert_eq!(
                        time_fields(text.as_bytes()).is_some(),
                        NaiveTime::from_hms_opt(hour, minute, second).is_some(),
                        "{text}"
                    );
                }
            }
        }
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

    /// How dates and datetimes were written with chrono's `format` before [`IsoText`]: the
    /// oracle it must agree with.
    fn chrono_text(s: &str, ty: ColumnType) -> Option<String> {
        if let Some(d) = parse_date(s) {
            return Some(match ty {
                ColumnType::Date => d.format("%Y-%m-%d").to_string(),
                _ => d
                    .and_time(NaiveTime::MIN)
                    .format("%Y-%m-%dT%H:%M:%S")
                    .to_string(),
            });
        }
        let ((year, month, day), (hour, minute, second, nanos), offset_len) =
            datetime_fields(s.as_bytes())?;
        let dt = NaiveDate::from_ymd_opt(year, month, day)?
            .and_time(NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?);
        let base = if nanos == 0 {
            dt.format("%Y-%m-%dT%H:%M:%S").to_string()
        } else {
            dt.format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
        };
        Some(format!("{base}{}", &s[s.len() - offset_len..]))
    }

    #[test]
    fn dates_and_datetimes_are_written_as_chrono_wrote_them() {
        let mut checked = 0;
        for year in [
            "0000", "0001", "0999", "1000", "1900", "1970", "2000", "2024", "9999",
        ] {
            for month in 1..=12 {
                for day in [1, 9, 10, 28, 29, 30, 31] {
                    for sep in ['-', '/'] {
                        let date = format!("{year}{sep}{month:02}{sep}{day:02}");
                        let want = chrono_text(&date, ColumnType::Date);
                        let got = render_str(&date, ColumnType::Date)
                            .map(|r| Value::from(r).as_str().map(str::to_owned));
                        assert_eq!(got, want.clone().map(Some), "{date}");
                        if want.is_none() {
                            continue;
                        }
                        for time in [
                            "00:00",
                            "09:05",
                            "23:59:59",
                            "12:34:56.7",
                            "12:34:56.000001",
                            "12:34:56.999999999",
                            "01:02:03.123456789",
                            "10:30:00.5",
                        ] {
                            for offset in ["", "Z", "+09:00", "-05:30"] {
                                for t in ['T', ' '] {
                                    let s = format!("{date}{t}{time}{offset}");
                                    let want = chrono_text(&s, ColumnType::DateTime);
                                    assert!(want.is_some(), "{s}");
                                    assert_eq!(parse_datetime(&s), want, "{s}");
                                    let rendered = render(json!(s), ColumnType::DateTime);
                                    assert_eq!(rendered.as_str(), want.as_deref(), "{s}");
                                    checked += 1;
                                }
                            }
                        }
                        let midnight = render(json!(date), ColumnType::DateTime);
                        assert_eq!(
                            midnight.as_str(),
                            chrono_text(&date, ColumnType::DateTime).as_deref()
                        );
                    }
                }
            }
        }
        assert!(checked > 50_000, "{checked}");
    }

    #[test]
    fn render_str_is_what_render_makes_of_a_string() {
        let cases = [
            ("42", ColumnType::Integer, Some(Rendered::Integer(42))),
            ("3", ColumnType::Decimal, Some(Rendered::Integer(3))),
            ("2.5", ColumnType::Decimal, Some(Rendered::Decimal(2.5))),
            ("1e999", ColumnType::Decimal, None),
            ("TRUE", ColumnType::Boolean, Some(Rendered::Boolean(true))),
            ("x", ColumnType::Integer, None),
            ("2024-01-05", ColumnType::Text, None),
            ("2024-01-05", ColumnType::Mixed, None),
        ];
        for (s, ty, want) in cases {
            assert_eq!(render_str(s, ty), want, "{s} {ty:?}");
            assert_eq!(
                render(json!(s), ty),
                want.map_or(json!(s), Value::from),
                "{s} {ty:?}"
            );
        }
    }
}
