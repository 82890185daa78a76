//! Reading a cell with a compiled [`Pattern`](super::Pattern): every reading of the items, longest
//! first, within the step budget ([`match_items`]), the one-pass first reading the row loop tries
//! before it ([`match_first_reading`]), and the fields combined into a date and time as Python
//! combines them ([`combine`]).

use chrono::{Datelike, Duration, NaiveDate, NaiveTime};

use super::{Captures, Directive, Item, NameSet, Offset, Parsed};

/// Matches `items` against all of `text`, longest readings first, backtracking.
pub(super) fn match_items(
    items: &[Item],
    text: &str,
    captures: &mut Captures,
    budget: &mut u32,
) -> bool {
    let Some((item, rest)) = items.split_first() else {
        return text.is_empty();
    };
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let next = |len: usize, captures: &mut Captures, budget: &mut u32| {
        text.get(len..)
            .is_some_and(|tail| match_items(rest, tail, captures, budget))
    };
    let bytes = text.as_bytes();
    match *item {
        Item::Literal(c) => {
            let Some(t) = text.chars().next() else {
                return false;
            };
            let same = t == c
                || (c.is_ascii() && t.eq_ignore_ascii_case(&c))
                || (!c.is_ascii() && t.to_lowercase().eq(c.to_lowercase()));
            same && next(t.len_utf8(), captures, budget)
        }
        Item::Space => {
            let run: usize = text
                .chars()
                .take_while(|c| c.is_whitespace())
                .map(char::len_utf8)
                .sum();
            // Python's `\s+` is greedy: the whole run first, then shorter ones.
            let mut len = run;
            while len > 0 {
                if text.is_char_boundary(len) && next(len, captures, budget) {
                    return true;
                }
                len -= 1;
            }
            false
        }
        Item::Number(directive) => {
            let (min, max, lo, hi) = directive.shape();
            for len in (min..=digit_run(bytes, max)).rev() {
                let value = number(&bytes[..len]);
                if (lo..=hi).contains(&value) {
                    set(captures, directive, value);
                    if next(len, captures, budget) {
                        return true;
                    }
                }
            }
            // `%d` also reads a space and one digit (Python keeps it for `%c`).
            if directive == Directive::Day
                && bytes.first() == Some(&b' ')
                && bytes.get(1).is_some_and(|b| (b'1'..=b'9').contains(b))
            {
                set(captures, directive, u32::from(bytes[1] - b'0'));
                return next(2, captures, budget);
            }
            false
        }
        Item::Fraction => {
            for len in (1..=digit_run(bytes, 6)).rev() {
                captures.micro = Some(micros(&bytes[..len]));
                if next(len, captures, budget) {
                    return true;
                }
            }
            false
        }
        Item::Offset => {
            if bytes.first() == Some(&b'Z') {
                captures.offset = Some(Offset::Seconds(0));
                return next(1, captures, budget);
            }
            for (len, offset) in offset_readings(bytes).into_iter().flatten() {
                captures.offset = Some(offset);
                if next(len, captures, budget) {
                    return true;
                }
            }
            false
        }
        Item::Names(set) => {
            for (name, value) in set.names() {
                let matches = bytes
                    .get(..name.len())
                    .is_some_and(|b| b.eq_ignore_ascii_case(name.as_bytes()));
                if matches {
                    match set {
                        NameSet::MonthLong | NameSet::MonthShort => {
                            captures.month = Some(value + 1)
                        }
                        NameSet::AmPm => captures.pm = Some(value == 1),
                        // Python reads a weekday but only uses it with week numbers.
                        NameSet::WeekdayLong | NameSet::WeekdayShort => {}
                    }
                    if next(name.len(), captures, budget) {
                        return true;
                    }
                }
            }
            false
        }
    }
}

/// The reading [`match_items`] tries first, found without going back: each directive's longest
/// run of digits, a fraction's too, a space's whole run. When it reads all of `text`, it is
/// the reading `match_items` would return (its first choice at every item), so the captures are
/// the same; `false` means "not found this way", and the full matcher decides. Only patterns of
/// ASCII literals, spaces, numbers and fractions take it (`Pattern::first_reading`).
///
/// Measured with `perf record` on the parse child validating the bench's 1M-row CSV (a
/// `%Y-%m-%d %H:%M:%S` datetime field): reading the datetimes went from 10 % of its 2.2 user-s
/// with `match_items` alone to 7.6 % of 1.9 s with this in front.
pub(super) fn match_first_reading(items: &[Item], text: &[u8], captures: &mut Captures) -> bool {
    let mut at = 0;
    for item in items {
        let rest = &text[at..];
        at += match *item {
            Item::Literal(c) => match rest.first() {
                Some(&b) if c.is_ascii() && b.eq_ignore_ascii_case(&(c as u8)) => 1,
                _ => return false,
            },
            Item::Space => {
                let run = rest
                    .iter()
                    .take_while(|&&b| b.is_ascii() && char::from(b).is_whitespace())
                    .count();
                // A non-ASCII character after the run may be whitespace too.
                if run == 0 || rest.get(run).is_some_and(|b| !b.is_ascii()) {
                    return false;
                }
                run
            }
            Item::Number(directive) => {
                let (min, max, lo, hi) = directive.shape();
                let len = digit_run(rest, max);
                let value = number(&rest[..len]);
                if len < min || !(lo..=hi).contains(&value) {
                    return false;
                }
                set(captures, directive, value);
                len
            }
            Item::Fraction => {
                let len = digit_run(rest, 6);
                if len == 0 {
                    return false;
                }
                captures.micro = Some(micros(&rest[..len]));
                len
            }
            Item::Offset | Item::Names(_) => return false,
        };
    }
    at == text.len()
}

/// A fraction's one to six digits as microseconds: Python pads them on the right.
fn micros(digits: &[u8]) -> u32 {
    number(digits) * 10u32.pow((6 - digits.len()) as u32)
}

/// How many ASCII digits `b` starts with, at most `max`.
fn digit_run(b: &[u8], max: usize) -> usize {
    b.iter()
        .take(max)
        .take_while(|b| b.is_ascii_digit())
        .count()
}

fn number(digits: &[u8]) -> u32 {
    digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0'))
}

fn set(captures: &mut Captures, directive: Directive, value: u32) {
    let slot = match directive {
        Directive::Day => &mut captures.day,
        Directive::Month => &mut captures.month,
        Directive::Year => &mut captures.year,
        Directive::Year2 => &mut captures.year2,
        Directive::Hour => &mut captures.hour,
        Directive::Hour12 => &mut captures.hour12,
        Directive::Minute => &mut captures.minute,
        Directive::Second => &mut captures.second,
        Directive::DayOfYear => &mut captures.day_of_year,
        // Read (Python checks their range) but unused without week numbers.
        Directive::WeekdaySunday0 | Directive::WeekdayMonday1 => return,
    };
    *slot = Some(value);
}

/// The readings of Python's `[+-]\d\d:?[0-5]\d(:?[0-5]\d(\.\d{1,6})?)?`, longest first: with
/// seconds and a fraction, with seconds, hours and minutes only. A colon must be used for all
/// separators or none (Python's "inconsistent use of :").
fn offset_readings(b: &[u8]) -> [Option<(usize, Offset)>; 3] {
    let mut out = [None, None, None];
    let sign = match b.first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return out,
    };
    let digit = |i: usize| {
        b.get(i)
            .filter(|c| c.is_ascii_digit())
            .map(|c| i32::from(c - b'0'))
    };
    let sixty = |i: usize| {
        b.get(i)
            .filter(|c| (b'0'..=b'5').contains(c))
            .and_then(|_| Some(i32::from(b[i] - b'0') * 10 + digit(i + 1)?))
    };
    let (Some(h1), Some(h2)) = (digit(1), digit(2)) else {
        return out;
    };
    let colon = b.get(3) == Some(&b':');
    let at = if colon { 4 } else { 3 };
    let Some(minutes) = sixty(at) else {
        return out;
    };
    let base = (h1 * 10 + h2) * 3600 + minutes * 60;
    out[2] = Some((at + 2, Offset::Seconds(sign * base)));
    let second_colon = b.get(at + 2) == Some(&b':');
    if second_colon != colon {
        return out;
    }
    let at = at + 2 + usize::from(second_colon);
    let Some(seconds) = sixty(at) else {
        return out;
    };
    out[1] = Some((at + 2, Offset::Seconds(sign * (base + seconds))));
    if b.get(at + 2) == Some(&b'.') {
        let digits = b[at + 3..]
            .iter()
            .take(6)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            let fraction = number(&b[at + 3..at + 3 + digits]);
            let offset = if fraction == 0 {
                Offset::Seconds(sign * (base + seconds))
            } else {
                Offset::Fractional
            };
            out[0] = Some((at + 3 + digits, offset));
        }
    }
    out
}

/// Combines the captured fields as Python's `_strptime` does.
pub(super) fn combine(c: &Captures) -> Option<Parsed> {
    let year = match (c.year, c.year2) {
        (Some(y), _) => y,
        (None, Some(y)) if y <= 68 => 2000 + y,
        (None, Some(y)) => 1900 + y,
        (None, None) => 1900,
    };
    if !(1..=9999).contains(&year) {
        return None;
    }
    let year = year as i32;
    let date = match c.day_of_year {
        // Python trusts the day of the year over a month and day, and lets day 366 of a
        // common year run into the next.
        Some(day) => NaiveDate::from_ymd_opt(year, 1, 1)?
            .checked_add_signed(Duration::days(i64::from(day) - 1))
            .filter(|d| d.year() <= 9999)?,
        None => NaiveDate::from_ymd_opt(year, c.month.unwrap_or(1), c.day.unwrap_or(1))?,
    };
    let hour = match (c.hour12, c.pm) {
        (Some(12), Some(false) | None) => 0,
        (Some(h), Some(true)) if h != 12 => h + 12,
        (Some(h), _) => h,
        (None, _) => c.hour.unwrap_or(0),
    };
    let time = NaiveTime::from_hms_micro_opt(
        hour,
        c.minute.unwrap_or(0),
        c.second.unwrap_or(0),
        c.micro.unwrap_or(0),
    )?;
    let offset = match c.offset {
        None => None,
        Some(Offset::Fractional) => return None,
        // Python's time zones lie strictly within a day of UTC.
        Some(Offset::Seconds(s)) if s.abs() >= 86_400 => return None,
        Some(Offset::Seconds(s)) => Some(s),
    };
    Some(Parsed { date, time, offset })
}
