//! The typed value a cell casts to, borrowed from the cell: how it is written as JSON for
//! storage, shown in a message, compared with a bound and fingerprinted for `unique`, `enum`
//! and the primary key.

use std::cmp::Ordering;
use std::fmt;

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use xxhash_rust::xxh3::{xxh3_128, xxh3_128_with_seed};

use super::number::Number;

/// A cast cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// No value: an empty cell or one of the `missingValues`.
    Null,
    Text(Text<'a>),
    Integer(i64),
    Number(Number),
    Boolean(bool),
    Date(NaiveDate),
    DateTime(DateTime),
    Time(Time),
    Year(i32),
}

/// A date and time, with the UTC offset it was written with, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTime {
    pub local: NaiveDateTime,
    /// Seconds east of UTC.
    pub offset: Option<i32>,
}

/// A time of day, with the UTC offset it was written with, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time {
    pub local: NaiveTime,
    /// Seconds east of UTC.
    pub offset: Option<i32>,
}

/// A string value: the cell's own text, or the text of a typed workbook cell in a string field
/// (a number, a date), formatted in place so that casting never allocates.
#[derive(Clone, Copy)]
pub enum Text<'a> {
    Borrowed(&'a str),
    Inline { len: u8, bytes: [u8; INLINE] },
}

/// Room for the longest text of a typed cell: a datetime with nanoseconds (29 bytes), a float
/// (24), an integer (20).
const INLINE: usize = 30;

/// Where text is written: a row's buffer, or the inline buffer of a [`Text`].
pub(crate) trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A fixed buffer that notes when more was written than fits.
struct InlineBuffer {
    bytes: [u8; INLINE],
    len: usize,
    overflow: bool,
}

impl Sink for InlineBuffer {
    fn put(&mut self, bytes: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + bytes.len()) {
            Some(slot) => {
                slot.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.overflow = true,
        }
    }
}

impl Text<'_> {
    /// Formats ASCII text in place; `None` if it is longer than fits (no typed cell's is).
    pub(crate) fn inline(f: impl FnOnce(&mut dyn Sink)) -> Option<Text<'static>> {
        let mut buffer = InlineBuffer {
            bytes: [0; INLINE],
            len: 0,
            overflow: false,
        };
        f(&mut buffer);
        if buffer.overflow || !buffer.bytes[..buffer.len].is_ascii() {
            return None;
        }
        Some(Text::Inline {
            len: buffer.len as u8,
            bytes: buffer.bytes,
        })
    }

    pub fn as_str(&self) -> &str {
        match self {
            Text::Borrowed(s) => s,
            Text::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
        }
    }
}

impl PartialEq for Text<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The texts that mean "no value": `""` is kept apart because it is almost always one of them
/// and is tested by length alone.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct MissingValues {
    pub empty: bool,
    pub others: Vec<Box<str>>,
}

impl MissingValues {
    pub fn new(values: &[String]) -> MissingValues {
        MissingValues {
            empty: values.iter().any(String::is_empty),
            others: values
                .iter()
                .filter(|v| !v.is_empty())
                .map(|v| v.as_str().into())
                .collect(),
        }
    }

    #[inline]
    pub fn contains(&self, text: &str) -> bool {
        if text.is_empty() {
            self.empty
        } else {
            !self.others.is_empty() && self.others.iter().any(|m| **m == *text)
        }
    }
}

// Seeds that keep the fingerprints of different kinds of value apart.
const SEED_TEXT: u64 = 1;
const SEED_INTEGER: u64 = 2;
const SEED_NUMBER: u64 = 3;
const SEED_BOOLEAN: u64 = 4;
const SEED_DATE: u64 = 5;
const SEED_DATETIME: u64 = 6;
const SEED_TIME: u64 = 7;
const SEED_YEAR: u64 = 8;

impl Value<'_> {
    /// The value without its borrow, for a bound kept in a template; `None` for text.
    pub(crate) fn into_static(self) -> Option<Value<'static>> {
        Some(match self {
            Value::Text(_) => return None,
            Value::Null => Value::Null,
            Value::Integer(i) => Value::Integer(i),
            Value::Number(n) => Value::Number(n),
            Value::Boolean(b) => Value::Boolean(b),
            Value::Date(d) => Value::Date(d),
            Value::DateTime(dt) => Value::DateTime(dt),
            Value::Time(t) => Value::Time(t),
            Value::Year(y) => Value::Year(y),
        })
    }

    /// Appends the value as JSON: integer and year as JSON integers, number as its decimal (see
    /// [`Number::write_json`]), date `"YYYY-MM-DD"`, datetime
    /// `"YYYY-MM-DDTHH:MM:SS[.ffffff][Z|±hh:mm]"`, time `"HH:MM:SS[.ffffff][Z|±hh:mm]"`,
    /// strings escaped.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Text(t) => write_json_str(out, t.as_str()),
            Value::Integer(i) => out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
            Value::Year(y) => out.extend_from_slice(itoa::Buffer::new().format(*y).as_bytes()),
            Value::Number(n) => n.write_json(out),
            Value::Boolean(true) => out.extend_from_slice(b"true"),
            Value::Boolean(false) => out.extend_from_slice(b"false"),
            Value::Date(_) | Value::DateTime(_) | Value::Time(_) => {
                out.push(b'"');
                self.write_text(out);
                out.push(b'"');
            }
        }
    }

    /// Appends the value as text (for a message or a string field): as its JSON, without the
    /// quotes of strings and temporal values.
    fn write_text(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => {}
            Value::Text(t) => out.extend_from_slice(t.as_str().as_bytes()),
            Value::Date(d) => write_date(out, *d),
            Value::DateTime(dt) => {
                write_date(out, dt.local.date());
                out.put(b"T");
                write_time(out, dt.local.time());
                write_offset(out, dt.offset);
            }
            Value::Time(t) => {
                write_time(out, t.local);
                write_offset(out, t.offset);
            }
            Value::Integer(_) | Value::Year(_) | Value::Number(_) | Value::Boolean(_) => {
                self.write_json(out)
            }
        }
    }

    /// A 128-bit fingerprint of the value, equal for equal values (`1.0` and `1.00`; the same
    /// instant written with different offsets), for the unique and enum sets. `None` for null
    /// and NaN, which equal nothing (as in frictionless).
    pub(crate) fn fingerprint(&self) -> Option<u128> {
        Some(match self {
            Value::Null => return None,
            Value::Text(t) => xxh3_128_with_seed(t.as_str().as_bytes(), SEED_TEXT),
            Value::Integer(i) => xxh3_128_with_seed(&i.to_le_bytes(), SEED_INTEGER),
            Value::Year(y) => xxh3_128_with_seed(&y.to_le_bytes(), SEED_YEAR),
            Value::Number(n) => xxh3_128_with_seed(&n.canonical()?, SEED_NUMBER),
            Value::Boolean(b) => xxh3_128_with_seed(&[u8::from(*b)], SEED_BOOLEAN),
            Value::Date(d) => xxh3_128_with_seed(&d.num_days_from_ce().to_le_bytes(), SEED_DATE),
            Value::DateTime(dt) => {
                let (seconds, nanos) = instant(dt);
                let mut bytes = [0u8; 13];
                bytes[..8].copy_from_slice(&seconds.to_le_bytes());
                bytes[8..12].copy_from_slice(&nanos.to_le_bytes());
                bytes[12] = u8::from(dt.offset.is_some());
                xxh3_128_with_seed(&bytes, SEED_DATETIME)
            }
            Value::Time(t) => {
                let mut bytes = [0u8; 13];
                bytes[..8].copy_from_slice(&time_seconds(t).to_le_bytes());
                bytes[8..12].copy_from_slice(&t.local.nanosecond().to_le_bytes());
                bytes[12] = u8::from(t.offset.is_some());
                xxh3_128_with_seed(&bytes, SEED_TIME)
            }
        })
    }

    /// Orders two values of one field type (for `minimum` and `maximum`). A value with an
    /// offset and one without compare as if the latter were UTC (Python refuses to compare
    /// them). `None` when they do not compare: NaN, or values of different kinds.
    pub(crate) fn compare(&self, other: &Value<'_>) -> Option<Ordering> {
        match (self, other) {
            (Value::Integer(a), Value::Integer(b)) => Some(a.cmp(b)),
            (Value::Year(a), Value::Year(b)) => Some(a.cmp(b)),
            (Value::Number(a), Value::Number(b)) => a.partial_cmp(b),
            (Value::Date(a), Value::Date(b)) => Some(a.cmp(b)),
            (Value::DateTime(a), Value::DateTime(b)) => Some(instant(a).cmp(&instant(b))),
            (Value::Time(a), Value::Time(b)) => Some(
                (time_seconds(a), a.local.nanosecond())
                    .cmp(&(time_seconds(b), b.local.nanosecond())),
            ),
            _ => None,
        }
    }
}

/// Seconds and nanoseconds since the epoch, taking the offset away.
fn instant(dt: &DateTime) -> (i64, u32) {
    let utc = dt.local.and_utc();
    (
        utc.timestamp() - i64::from(dt.offset.unwrap_or(0)),
        utc.timestamp_subsec_nanos(),
    )
}

/// Seconds since midnight, taking the offset away (negative or past a day, as Python compares).
fn time_seconds(t: &Time) -> i64 {
    i64::from(t.local.num_seconds_from_midnight()) - i64::from(t.offset.unwrap_or(0))
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text(t) => f.write_str(t.as_str()),
            Value::Number(n) => fmt::Display::fmt(n, f),
            _ => {
                let mut out = Vec::new();
                self.write_text(&mut out);
                f.write_str(&String::from_utf8_lossy(&out))
            }
        }
    }
}

/// Appends `s` as a JSON string literal.
pub(crate) fn write_json_str(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        // serde_json's own escaping; writing a string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Whether any byte needs escaping in a JSON string (a control character, `"` or `\\`), eight
/// bytes at a time (the last eight overlapping the others): most cells need none, and this is
/// asked of every text value.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Whether a byte of `v` is below `n` (exact for n <= 128; "hasless" of Bit Twiddling Hacks).
    let below = |v: u64, n: u8| v.wrapping_sub(ONES * u64::from(n)) & !v & HIGHS != 0;
    let word = |w: &[u8; 8]| {
        let v = u64::from_le_bytes(*w);
        below(v, 0x20)
            | below(v ^ (ONES * u64::from(b'"')), 1)
            | below(v ^ (ONES * u64::from(b'\\')), 1)
    };
    match bytes.last_chunk::<8>() {
        Some(last) => bytes.as_chunks::<8>().0.iter().any(word) || word(last),
        None => bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\'),
    }
}

/// The two digits of `n` (0-99), from a table: dates and times are written digit pair by pair.
fn two(n: u32) -> [u8; 2] {
    const PAIRS: [[u8; 2]; 100] = {
        let mut pairs = [[0u8; 2]; 100];
        let mut i = 0;
        while i < 100 {
            pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
            i += 1;
        }
        pairs
    };
    PAIRS[(n % 100) as usize]
}

fn push_2(out: &mut (impl Sink + ?Sized), n: u32) {
    out.put(&two(n));
}

/// `YYYY-MM-DD`, written in one piece (dates are many of a sheet's cells).
pub(crate) fn write_date(out: &mut (impl Sink + ?Sized), d: NaiveDate) {
    // Values are kept within the years 1-9999 (Python's range), so four digits suffice.
    let year = d.year().clamp(0, 9999) as u32;
    let [y1, y2] = two(year / 100);
    let [y3, y4] = two(year % 100);
    let [m1, m2] = two(d.month());
    let [d1, d2] = two(d.day());
    out.put(&[y1, y2, y3, y4, b'-', m1, m2, b'-', d1, d2]);
}

/// `HH:MM:SS`, then the fraction in as few of 3, 6 or 9 digits as hold it.
pub(crate) fn write_time(out: &mut (impl Sink + ?Sized), t: NaiveTime) {
    let [h1, h2] = two(t.hour());
    let [m1, m2] = two(t.minute());
    let [s1, s2] = two(t.second());
    out.put(&[h1, h2, b':', m1, m2, b':', s1, s2]);
    let nanos = t.nanosecond() % 1_000_000_000;
    if nanos == 0 {
        return;
    }
    let (value, width) = if nanos.is_multiple_of(1_000_000) {
        (nanos / 1_000_000, 3)
    } else if nanos.is_multiple_of(1_000) {
        (nanos / 1_000, 6)
    } else {
        (nanos, 9)
    };
    out.put(b".");
    let mut buffer = itoa::Buffer::new();
    let digits = buffer.format(value).as_bytes();
    for _ in digits.len()..width {
        out.put(b"0");
    }
    out.put(digits);
}

/// `Z` for UTC, else `±hh:mm` (`±hh:mm:ss` for an offset with seconds).
fn write_offset(out: &mut (impl Sink + ?Sized), offset: Option<i32>) {
    let Some(offset) = offset else { return };
    if offset == 0 {
        out.put(b"Z");
        return;
    }
    out.put(if offset < 0 { b"-" } else { b"+" });
    let abs = offset.unsigned_abs();
    push_2(out, abs / 3600);
    out.put(b":");
    push_2(out, abs / 60 % 60);
    if abs % 60 != 0 {
        out.put(b":");
        push_2(out, abs % 60);
    }
}

/// The 128-bit fingerprint of a composite key, from the fingerprints of its values in key
/// order (each a fixed 16 bytes, so no two different keys share an input).
pub(crate) fn composite_fingerprint(parts: &[u128], scratch: &mut Vec<u8>) -> u128 {
    scratch.clear();
    for part in parts {
        scratch.extend_from_slice(&part.to_le_bytes());
    }
    xxh3_128(scratch)
}
