//! The recognisers behind every column type, on bytes and in one pass each: numbers as people
//! write them (no leading zeros, within what `i64`/`f64` hold exactly), `true`/`false`, dates
//! written year first and datetimes with an optional offset. Dates and times are checked eight
//! bytes at a time ([`digits8`]).

use chrono::{NaiveDate, NaiveTime};

use super::render::IsoText;
use super::TypeSet;

/// What number `value` is, as [`TypeSet`] bits: `INTEGER | DECIMAL` for an integer as people
/// write it (optional sign, digits, no leading zero: `00123` is an identifier, not a number;
/// within `i64`), `DECIMAL` for a decimal (optional sign, an integer part as above, a fraction
/// and/or an exponent, at most 17 significant digits so that the value survives the trip
/// through `f64`, finite), else the empty set. One pass over the bytes; only an exponent or a 19-digit
/// integer needs the standard parser.
pub(super) fn number_kind(value: &[u8]) -> TypeSet {
    const NUMBER: TypeSet = TypeSet::INTEGER.union(TypeSet::DECIMAL);
    let body = match value {
        [b'+' | b'-', rest @ ..] => rest,
        _ => value,
    };
    let int_len = leading_digits(body);
    if int_len == 0 || (int_len > 1 && body[0] == b'0') {
        return TypeSet::empty();
    }
    let rest = &body[int_len..];
    if rest.is_empty() {
        let fits_i64 = int_len < 19
            || (int_len == 19
                && std::str::from_utf8(value).is_ok_and(|s| s.parse::<i64>().is_ok()));
        return if fits_i64 { NUMBER } else { TypeSet::empty() };
    }
    let (frac_len, rest) = match rest {
        [b'.', tail @ ..] => {
            let n = leading_digits(tail);
            if n == 0 {
                return TypeSet::empty();
            }
            (n, &tail[n..])
        }
        _ => (0, rest),
    };
    if int_len + frac_len > 17 {
        return TypeSet::empty();
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
                TypeSet::empty()
            }
        }
        _ => TypeSet::empty(),
    }
}

fn leading_digits(b: &[u8]) -> usize {
    b.iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(b.len())
}

/// The value of an integer as [`number_kind`] accepts one.
pub fn parse_integer(s: &str) -> Option<i64> {
    if !number_kind(s.as_bytes()).contains(TypeSet::INTEGER) {
        return None;
    }
    s.parse().ok()
}

/// The value of a decimal (or integer) as [`number_kind`] accepts one.
pub fn parse_decimal(s: &str) -> Option<f64> {
    if !number_kind(s.as_bytes()).contains(TypeSet::DECIMAL) {
        return None;
    }
    s.parse().ok()
}

/// `true`/`false` in any case. `yes`, `1` and friends are not booleans: they are too often
/// answers or codes.
pub fn parse_bool(s: &str) -> Option<bool> {
    bool_value(s.as_bytes())
}

pub(super) fn bool_value(value: &[u8]) -> Option<bool> {
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
pub(super) fn date_fields(b: &[u8]) -> Option<(i32, u32, u32)> {
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
///
/// Measured (docs/benchmarks-history.md, runs 4–5, "dates, times and booleans as words",
/// d88bbc8): callgrind, instructions for the whole in-process parse of the 191,636-row cut of
/// the bench's CSV, 570.6M before, 526.0M with `YYYY-MM-DD` and `HH:MM:SS` checked as one word
/// each (and booleans as words, in the same step: −7.8 % for the three; the same counts every
/// run, unlike the wall clock). Checked byte by byte against a scalar oracle with every byte
/// value at every position (tests.rs).
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

/// Hour, minute, second and nanosecond.
pub(super) type TimeFields = (u32, u32, u32, u32);

/// The [`TimeFields`] of `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff…` (up to nanoseconds), checked to
/// be a time of day.
pub(super) fn time_fields(b: &[u8]) -> Option<TimeFields> {
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
pub(super) fn datetime_fields(b: &[u8]) -> Option<((i32, u32, u32), TimeFields, usize)> {
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

/// A datetime column's cell as microseconds since 1970-01-01: a date alone is its midnight,
/// a date-time with an offset its UTC instant, one without an offset its wall-clock time as it
/// is, to the millisecond (what [`super::render_str`] renders as ISO text, without the text: the
/// Parquet export writes this straight into a TIMESTAMP column).
pub fn datetime_micros(s: &str) -> Option<i64> {
    if let Some(date) = parse_date(s) {
        return Some(date.and_time(NaiveTime::MIN).and_utc().timestamp_micros());
    }
    let (date, (hour, minute, second, nanos), offset) = datetime_parts(s)?;
    let time = NaiveTime::from_hms_milli_opt(hour, minute, second, nanos / 1_000_000)?;
    let local = date.and_time(time);
    let offset_secs = match offset.as_bytes() {
        [] | [b'Z'] => 0,
        [sign, h0, h1, b':', m0, m1] => {
            let (h, m) = (two_digits(*h0, *h1)?, two_digits(*m0, *m1)?);
            if h > 23 || m > 59 {
                return None;
            }
            let secs = i64::from(h) * 3600 + i64::from(m) * 60;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    Some(local.and_utc().timestamp_micros() - offset_secs * 1_000_000)
}

pub(super) fn datetime_text(s: &str) -> Option<IsoText> {
    let (date, time, offset) = datetime_parts(s)?;
    Some(IsoText::datetime(date, time, offset))
}

/// A date-time's date, its [`TimeFields`] once they make a valid time, and its offset's text
/// (empty, `Z` or `±hh:mm`).
fn datetime_parts(s: &str) -> Option<(NaiveDate, TimeFields, &str)> {
    let ((year, month, day), (hour, minute, second, nanos), offset_len) =
        datetime_fields(s.as_bytes())?;
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?;
    let offset = s.get(s.len() - offset_len..)?;
    Some((date, (hour, minute, second, nanos), offset))
}
