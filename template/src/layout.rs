//! The row loop's shortcut for a date, datetime or time field with a `format` of fixed-width
//! numbers and ASCII literals only (`%Y-%m-%d %H:%M:%S`, `%d/%m/%Y`, `%H:%M`): a cell written
//! with each number at its directive's full width (`2024-03-05 07:08:09`, not `2024-3-5 7:8:9`)
//! is checked digit by digit and its stored ISO form is copied out of it byte by byte, without
//! the `strptime` machinery or a typed value. Anything else (a short number, an out-of-range
//! field, a leap second) goes the general way, which gives the verdict and the error.
//!
//! Measured with `perf record` on the parse child validating the bench's 1M-row CSV: reading
//! and writing its `%Y-%m-%d %H:%M:%S` datetimes through `strptime` and a typed value was 9.7 %
//! of the child's time (0.078 s of its 0.70 s by removing the field's type). Where it takes a
//! cell, this reading agrees with `strptime`'s first reading (each number's longest digit run),
//! the reading it returns: a test compares the two on each shape.

/// A date or time unit a layout reads: year (4 digits), month, day, hour, minute, second (2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

/// A piece of a pattern, as a layout sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// An ASCII literal other than a digit, matched regardless of case.
    Literal(u8),
    /// Whitespace in the pattern; a layout reads it as one space.
    Space,
    Number(Unit),
}

/// What a field stores from a layout's cell (its order is [`Layout`]'s `json` order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stored {
    Date,
    DateTime,
    Time,
}

/// A fixed layout: which byte of a cell is what, and how each kind of field writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Per byte of a cell: [`DIGIT`], or the literal there (lowercase).
    bytes: Vec<u8>,
    /// Where each unit's digits start, in [`Unit`] order.
    at: [Option<usize>; 6],
    /// The stored JSON of each [`Stored`] kind, in its order.
    json: [Json; 3],
}

/// A stored JSON text with the places of the cell's digits in it: its separators and the
/// defaults of the units the pattern does not read are written once, when the pattern is
/// compiled, and each cell only copies its digits in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Json {
    text: Vec<u8>,
    /// (place in `text`, place in the cell)
    digits: Vec<(usize, usize)>,
}

/// A digit's place in [`Layout::bytes`] (no literal is a NUL).
const DIGIT: u8 = 0;

const UNITS: [Unit; 6] = [
    Unit::Year,
    Unit::Month,
    Unit::Day,
    Unit::Hour,
    Unit::Minute,
    Unit::Second,
];

impl Unit {
    fn width(self) -> usize {
        if self == Unit::Year {
            4
        } else {
            2
        }
    }

    /// Python's default for a unit the pattern does not read: 1900-01-01 00:00:00.
    fn default_digits(self) -> &'static [u8] {
        match self {
            Unit::Year => b"1900",
            Unit::Month | Unit::Day => b"01",
            Unit::Hour | Unit::Minute | Unit::Second => b"00",
        }
    }
}

impl Layout {
    /// The layout of a pattern's pieces (`None` for a piece a layout has no place for); `None`
    /// if a piece is not fixed-width or a unit repeats (the compiler refuses repeats anyway).
    pub fn of(pieces: impl IntoIterator<Item = Option<Piece>>) -> Option<Layout> {
        let mut bytes = Vec::new();
        let mut at = [None; 6];
        for piece in pieces {
            match piece? {
                Piece::Literal(b)
                    if b.is_ascii()
                        && b != DIGIT
                        && !b.is_ascii_digit()
                        && !b.is_ascii_whitespace() =>
                {
                    bytes.push(b.to_ascii_lowercase());
                }
                Piece::Literal(_) => return None,
                Piece::Space => bytes.push(b' '),
                Piece::Number(unit) => {
                    let slot = &mut at[unit as usize];
                    if slot.is_some() {
                        return None;
                    }
                    *slot = Some(bytes.len());
                    bytes.extend(std::iter::repeat_n(DIGIT, unit.width()));
                }
            }
        }
        let json = [Stored::Date, Stored::DateTime, Stored::Time].map(|stored| {
            let mut json = Json {
                text: vec![b'"'],
                digits: Vec::new(),
            };
            let unit = |unit: Unit, json: &mut Json| match at[unit as usize] {
                Some(i) => {
                    for k in 0..unit.width() {
                        json.digits.push((json.text.len(), i + k));
                        json.text.push(b'0');
                    }
                }
                None => json.text.extend_from_slice(unit.default_digits()),
            };
            if stored != Stored::Time {
                unit(Unit::Year, &mut json);
                json.text.push(b'-');
                unit(Unit::Month, &mut json);
                json.text.push(b'-');
                unit(Unit::Day, &mut json);
            }
            if stored == Stored::DateTime {
                json.text.push(b'T');
            }
            if stored != Stored::Date {
                unit(Unit::Hour, &mut json);
                json.text.push(b':');
                unit(Unit::Minute, &mut json);
                json.text.push(b':');
                unit(Unit::Second, &mut json);
            }
            json.text.push(b'"');
            json
        });
        Some(Layout { bytes, at, json })
    }

    /// Whether a `stored` field can take its cells this way: a date needs its year, month and
    /// day from the cell.
    pub fn serves(&self, stored: Stored) -> bool {
        stored == Stored::Time || self.at[..3].iter().all(Option::is_some)
    }

    /// Writes the JSON of `text` as a `stored` field stores it, if `text` is in the layout and
    /// a valid date and time; `false` leaves it to the general way.
    #[inline]
    pub fn write(&self, stored: Stored, text: &str, out: &mut Vec<u8>) -> bool {
        let b = text.as_bytes();
        if b.len() != self.bytes.len() {
            return false;
        }
        let shaped = b.iter().zip(&self.bytes).fold(true, |ok, (&c, &want)| {
            ok & if want == DIGIT {
                c.is_ascii_digit()
            } else {
                c.to_ascii_lowercase() == want
            }
        });
        if !shaped {
            return false;
        }
        let [y, m, d, hour, minute, second] = UNITS.map(|unit| {
            let digits = match self.at[unit as usize] {
                Some(i) => &b[i..i + unit.width()],
                None => unit.default_digits(),
            };
            digits
                .iter()
                .fold(0u32, |n, &c| n * 10 + u32::from(c - b'0'))
        });
        let valid = (1..=9999).contains(&y)
            && (1..=12).contains(&m)
            && (1..=days_in_month(y, m)).contains(&d)
            && hour <= 23
            && minute <= 59
            && second <= 59;
        if !valid {
            return false;
        }
        let json = &self.json[stored as usize];
        let start = out.len();
        out.extend_from_slice(&json.text);
        for &(to, from) in &json.digits {
            out[start + to] = b[from];
        }
        true
    }
}

/// The Gregorian calendar's month lengths, as chrono has them. By hand because asking chrono
/// (`NaiveDate::from_ymd_opt(..).is_some()`) cost 150M more instructions on the bench's 1M
/// datetimes (callgrind of the parse child: 7.67G against 7.82G), 2 % of the whole child; the
/// layout test's 29 February and 31 April cases agree with chrono through `strptime`.
fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}
