//! Exact decimal numbers, as frictionless reads a `number` field into Python's `Decimal`: the
//! digits as written (`1.2300` keeps its scale), compared by value (`1.0` equals `1.00`), with
//! `NaN` and the infinities. The coefficient is a 128-bit integer and the text is read without
//! allocating, so a number cell costs no more than an integer one.
//!
//! Deliberate differences from frictionless:
//! - at most 38 significant digits (trailing zeros beyond them are dropped from the scale, not
//!   refused); `Decimal` has no limit;
//! - digits are ASCII, underscores between digits (`1_000`, a Python literal form) are refused,
//!   as are signalling NaNs and NaN payloads (`sNaN`, `NaN12`);
//! - exponents beyond ±1,000,000,000 are refused.

use std::cmp::Ordering;
use std::fmt;

/// A decimal number: `coef × 10^exp`, or a special value.
#[derive(Debug, Clone, Copy)]
pub struct Number(Repr);

#[derive(Debug, Clone, Copy)]
enum Repr {
    /// The coefficient as two halves: 8-byte alignment keeps a [`Value`](super::Value) small
    /// and cheap to move.
    Finite {
        coef: [u64; 2],
        exp: i32,
        neg: bool,
    },
    Infinite {
        neg: bool,
    },
    NaN,
}

fn split(coef: u128) -> [u64; 2] {
    [coef as u64, (coef >> 64) as u64]
}

fn join([lo, hi]: [u64; 2]) -> u128 {
    u128::from(lo) | (u128::from(hi) << 64)
}

const MAX_DIGITS: u32 = 38;
const MAX_EXPONENT: i64 = 1_000_000_000;

/// How a field writes its numbers: `decimalChar`, `groupChar` and `bareNumber`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NumberSyntax {
    pub decimal: char,
    pub group: Option<char>,
    /// `bareNumber`: when false, text before the number (`€ `) and after it (`%`) is ignored.
    pub bare: bool,
}

impl Default for NumberSyntax {
    fn default() -> Self {
        NumberSyntax {
            decimal: '.',
            group: None,
            bare: true,
        }
    }
}

impl NumberSyntax {
    /// Whether numbers are written the default way (`.` decimal mark, no groups, bare).
    pub fn is_plain(&self) -> bool {
        *self == NumberSyntax::default()
    }
}

/// Strips what `bareNumber: false` ignores around a number: everything before the first digit
/// or minus sign and everything after the last digit (frictionless's `((^[^-\d]*)|(\D*$))`).
pub(crate) fn strip_non_bare(text: &str) -> &str {
    text.trim_start_matches(|c: char| c != '-' && !c.is_ascii_digit())
        .trim_end_matches(|c: char| !c.is_ascii_digit())
}

impl Number {
    /// Reads a number cell's text: surrounding whitespace is ignored, then `syntax` applies
    /// (group characters dropped anywhere, the decimal character read as the point; with a
    /// decimal character other than `.`, a `.` is an error), then `Decimal`'s grammar:
    /// `[sign] (digits [. [digits]] | . digits) [e [sign] digits]`, `Infinity`, `Inf`, `NaN`.
    pub(crate) fn parse(text: &str, syntax: &NumberSyntax) -> Option<Number> {
        // Most cells have no whitespace around them, which their end bytes tell.
        let b = text.as_bytes();
        let spaced = |c: Option<&u8>| c.is_some_and(|&c| c <= b' ' || c >= 0x80);
        let text = if spaced(b.first()) || spaced(b.last()) {
            text.trim()
        } else {
            text
        };
        if syntax.is_plain() {
            return parse_ascii(text.as_bytes());
        }
        let text = if syntax.bare {
            text
        } else {
            strip_non_bare(text)
        };
        // The text with group characters dropped and the decimal character as `.`; a `.` that
        // is not the decimal character, or a character no number has, becomes a byte the
        // grammar refuses. On the stack: no number needs more room.
        let mut buffer = [0u8; 128];
        let mut len = 0;
        for c in text.chars() {
            let byte = if Some(c) == syntax.group {
                continue;
            } else if c == syntax.decimal {
                b'.'
            } else if c == '.' || !c.is_ascii() {
                b'!'
            } else {
                c as u8
            };
            *buffer.get_mut(len)? = byte;
            len += 1;
        }
        parse_ascii(&buffer[..len])
    }

    pub fn from_i64(value: i64) -> Number {
        Number(Repr::Finite {
            coef: [value.unsigned_abs(), 0],
            exp: 0,
            neg: value < 0,
        })
    }

    /// A float as its shortest round-trip decimal (what Python's `Decimal(str(f))` gives),
    /// except that integral values carry no `.0`: a workbook's `12` is the float 12.0.
    pub fn from_f64(value: f64) -> Number {
        if value.is_nan() {
            return Number(Repr::NaN);
        }
        if value.is_infinite() {
            return Number(Repr::Infinite { neg: value < 0.0 });
        }
        if value.fract() == 0.0 && value.abs() < 1e15 {
            // Exact: the magnitude is below 2^53.
            return Number::from_i64(value as i64);
        }
        let mut buffer = ryu::Buffer::new();
        // ryu writes a finite float in a form the decimal grammar reads.
        parse_ascii(buffer.format_finite(value).as_bytes()).unwrap_or(Number(Repr::NaN))
    }

    pub fn is_nan(&self) -> bool {
        matches!(self.0, Repr::NaN)
    }

    /// The value with trailing zeros dropped (`1.50` → `15 × 10^-1`, zero as `0 × 10^0`, never
    /// negative): equal numbers give equal forms. `None` for NaN.
    pub(crate) fn canonical(&self) -> Option<[u8; 21]> {
        let mut out = [0u8; 21];
        match self.0 {
            Repr::NaN => return None,
            Repr::Infinite { neg } => {
                out[20] = if neg { 3 } else { 2 };
            }
            Repr::Finite { coef, exp, neg } => {
                let (coef, exp) = normalize(join(coef), exp);
                out[..16].copy_from_slice(&coef.to_le_bytes());
                out[16..20].copy_from_slice(&exp.to_le_bytes());
                out[20] = u8::from(neg && coef != 0);
            }
        }
        Some(out)
    }

    /// Appends the number as JSON: the decimal as Python's `str(Decimal)` writes it
    /// (`1234.50`, `1E+5`, `1E-7`), NaN and the infinities as the strings `"NaN"`, `"INF"` and
    /// `"-INF"`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self.0 {
            Repr::NaN => out.extend_from_slice(b"\"NaN\""),
            Repr::Infinite { neg: false } => out.extend_from_slice(b"\"INF\""),
            Repr::Infinite { neg: true } => out.extend_from_slice(b"\"-INF\""),
            Repr::Finite { coef, exp, neg } => write_decimal(out, join(coef), exp, neg),
        }
    }
}

fn normalize(mut coef: u128, mut exp: i32) -> (u128, i32) {
    if coef == 0 {
        return (0, 0);
    }
    while coef.is_multiple_of(10) {
        coef /= 10;
        exp += 1;
    }
    (coef, exp)
}

fn digit_count(coef: u128) -> i64 {
    i64::from(coef.checked_ilog10().unwrap_or(0)) + 1
}

/// Python's to-scientific-string: plain notation when the exponent is at most 0 and the number
/// is not below 1E-6, else one digit before the point and an exponent.
fn write_decimal(out: &mut Vec<u8>, coef: u128, exp: i32, neg: bool) {
    if neg {
        out.push(b'-');
    }
    let mut buffer = itoa::Buffer::new();
    // Most coefficients fit 64 bits, which format faster.
    let digits = match u64::try_from(coef) {
        Ok(small) => buffer.format(small),
        Err(_) => buffer.format(coef),
    }
    .as_bytes();
    let n = digits.len() as i64;
    let exp = i64::from(exp);
    let left_digits = exp + n;
    let dot = if exp <= 0 && left_digits > -6 {
        left_digits
    } else {
        1
    };
    if dot <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-dot) as usize));
        out.extend_from_slice(digits);
    } else if dot >= n {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', (dot - n) as usize));
    } else {
        out.extend_from_slice(&digits[..dot as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[dot as usize..]);
    }
    if left_digits != dot {
        let e = left_digits - dot;
        out.push(b'E');
        out.push(if e < 0 { b'-' } else { b'+' });
        out.extend_from_slice(itoa::Buffer::new().format(e.unsigned_abs()).as_bytes());
    }
}

/// The coefficient being read: digits are appended one by one; zeros after the last non-zero
/// digit wait in `pending`, so that trailing zeros past 38 digits can shorten the scale instead
/// of failing.
#[derive(Default)]
struct Coefficient {
    coef: u128,
    digits: u32,
    pending: u32,
}

impl Coefficient {
    fn push(&mut self, digit: u8) -> Option<()> {
        if digit == 0 {
            if self.coef != 0 {
                self.pending += 1;
            }
            return Some(());
        }
        self.apply_pending()?;
        if self.digits + 1 > MAX_DIGITS {
            return None;
        }
        self.coef = self.coef * 10 + u128::from(digit);
        self.digits += 1;
        Some(())
    }

    fn apply_pending(&mut self) -> Option<()> {
        if self.pending == 0 {
            return Some(());
        }
        if self.digits + self.pending > MAX_DIGITS {
            return None;
        }
        self.coef *= 10u128.pow(self.pending);
        self.digits += self.pending;
        self.pending = 0;
        Some(())
    }
}

fn digits_of(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// Reads `Decimal`'s grammar from ASCII bytes (anything else is an error).
fn parse_ascii(b: &[u8]) -> Option<Number> {
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, b),
    };
    if b.first().is_some_and(u8::is_ascii_alphabetic) {
        return special(b, neg);
    }
    let (int, rest) = b.split_at(digits_of(b));
    let (frac, rest) = match rest.split_first() {
        Some((b'.', after)) => after.split_at(digits_of(after)),
        _ => (&[][..], rest),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut exp = -(frac.len() as i64);
    match rest.split_first() {
        None => {}
        Some((b'e' | b'E', after)) => {
            let (negative, digits) = match after.split_first() {
                Some((b'-', d)) => (true, d),
                Some((b'+', d)) => (false, d),
                _ => (false, after),
            };
            if digits.is_empty() || digits_of(digits) != digits.len() {
                return None;
            }
            let written = digits.iter().fold(0i64, |n, d| {
                (n * 10 + i64::from(d - b'0')).min(MAX_EXPONENT * 10)
            });
            exp += if negative { -written } else { written };
        }
        Some(_) => return None,
    }
    let coef = if int.len() + frac.len() <= 19 {
        // The usual case: the digits fit 64 bits.
        let fold = |n: u64, d: &u8| n * 10 + u64::from(d - b'0');
        u128::from(frac.iter().fold(int.iter().fold(0, fold), fold))
    } else {
        let mut c = Coefficient::default();
        for d in int.iter().chain(frac) {
            c.push(d - b'0')?;
        }
        if c.apply_pending().is_none() {
            // More than 38 digits, the last ones zeros: keep the value, shorten the scale.
            exp += i64::from(c.pending);
        }
        c.coef
    };
    if exp.abs() > MAX_EXPONENT {
        return None;
    }
    Some(Number(Repr::Finite {
        coef: split(coef),
        exp: exp as i32,
        neg,
    }))
}

fn special(b: &[u8], neg: bool) -> Option<Number> {
    if b.eq_ignore_ascii_case(b"inf") || b.eq_ignore_ascii_case(b"infinity") {
        Some(Number(Repr::Infinite { neg }))
    } else if b.eq_ignore_ascii_case(b"nan") {
        Some(Number(Repr::NaN))
    } else {
        None
    }
}

fn compare_finite(a: (u128, i32, bool), b: (u128, i32, bool)) -> Ordering {
    let sign = |(coef, _, neg): (u128, i32, bool)| match (coef == 0, neg) {
        (true, _) => 0,
        (false, false) => 1,
        (false, true) => -1,
    };
    let (sa, sb) = (sign(a), sign(b));
    if sa != sb || sa == 0 {
        return sa.cmp(&sb);
    }
    let magnitude = compare_magnitude(a.0, a.1, b.0, b.1);
    if sa < 0 {
        magnitude.reverse()
    } else {
        magnitude
    }
}

/// Compares two non-zero magnitudes `coef × 10^exp`.
fn compare_magnitude(ca: u128, ea: i32, cb: u128, eb: i32) -> Ordering {
    let adjusted_a = digit_count(ca) + i64::from(ea);
    let adjusted_b = digit_count(cb) + i64::from(eb);
    if adjusted_a != adjusted_b {
        return adjusted_a.cmp(&adjusted_b);
    }
    // The same number of integer digits: scaling the one with the larger exponent down to the
    // other's gives at most the other's digit count, so it fits.
    let shift = i64::from(ea) - i64::from(eb);
    if shift >= 0 {
        (ca * 10u128.pow(shift as u32)).cmp(&cb)
    } else {
        ca.cmp(&(cb * 10u128.pow((-shift) as u32)))
    }
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

impl PartialOrd for Number {
    /// By value; NaN is unordered (so it fails `minimum` and `maximum`, as in frictionless).
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        let rank = |r: &Repr| match r {
            Repr::Infinite { neg: true } => -1,
            Repr::Infinite { neg: false } => 1,
            _ => 0,
        };
        match (self.0, other.0) {
            (Repr::NaN, _) | (_, Repr::NaN) => None,
            (
                Repr::Finite {
                    coef: ca,
                    exp: ea,
                    neg: na,
                },
                Repr::Finite {
                    coef: cb,
                    exp: eb,
                    neg: nb,
                },
            ) => Some(compare_finite((join(ca), ea, na), (join(cb), eb, nb))),
            (a, b) => Some(rank(&a).cmp(&rank(&b))),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Repr::NaN => f.write_str("NaN"),
            Repr::Infinite { neg: false } => f.write_str("INF"),
            Repr::Infinite { neg: true } => f.write_str("-INF"),
            Repr::Finite { coef, exp, neg } => {
                let mut out = Vec::new();
                write_decimal(&mut out, join(coef), exp, neg);
                f.write_str(&String::from_utf8_lossy(&out))
            }
        }
    }
}
