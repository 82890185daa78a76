//! Python's `strptime`, which frictionless applies to a date, datetime or time field's `format`
//! pattern (`%d/%m/%Y`): each directive reads what Python's regular expression for it reads
//! (`%d` one or two digits, or a space and one digit; `%Y` exactly four; `%b` an English month
//! abbreviation in any case...), trying the longest reading first and going back to shorter
//! ones as Python's backtracking does, and the fields combine as Python combines them (no year
//! is 1900, `%y` 69-99 is the 1900s, `%I` with `%p`, `%j` counts from January 1st). The
//! pattern is compiled once into items, so a cell is read without allocating.
//!
//! Deliberate differences from Python: the week directives `%U`, `%W`, `%G`, `%V` and the
//! time-zone name `%Z` are refused as template problems (as is any directive Python does not
//! know, and a directive used twice, which makes every cell fail in Python); a cell is read in
//! full or not at all (Python gives up when its first reading leaves text over, even if another
//! reading would not); digits are ASCII; a `%z` offset with fractional seconds is an error;
//! readings that need more than 10,000 steps of backtracking (only a pattern of many adjacent
//! numeric directives can) are errors.

use chrono::{Datelike, Duration, NaiveDate, NaiveTime};

use super::layout::{Layout, Piece, Unit};

/// A compiled `format` pattern.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    items: Vec<Item>,
    /// Whether [`match_first_reading`] may be tried before the full matcher: the items are
    /// ASCII literals, spaces, numbers and fractions, few enough for the step budget.
    first_reading: bool,
    /// The fixed layout the row loop's shortcut reads, if the pattern has one.
    layout: Option<Box<Layout>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    /// A character of the pattern, matched regardless of case.
    Literal(char),
    /// Whitespace in the pattern: one or more whitespace characters.
    Space,
    Number(Directive),
    Fraction,
    Offset,
    Names(NameSet),
}

/// A numeric directive: which field it sets, how many digits it reads and the values Python's
/// expression for it admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Day,
    Month,
    Year,
    Year2,
    Hour,
    Hour12,
    Minute,
    Second,
    DayOfYear,
    WeekdaySunday0,
    WeekdayMonday1,
}

impl Directive {
    /// (fewest digits, most digits, smallest value, largest value)
    fn shape(self) -> (usize, usize, u32, u32) {
        match self {
            Directive::Day => (1, 2, 1, 31),
            Directive::Month => (1, 2, 1, 12),
            Directive::Year => (4, 4, 0, 9999),
            Directive::Year2 => (2, 2, 0, 99),
            Directive::Hour => (1, 2, 0, 23),
            Directive::Hour12 => (1, 2, 1, 12),
            Directive::Minute => (1, 2, 0, 59),
            Directive::Second => (1, 2, 0, 61),
            Directive::DayOfYear => (1, 3, 1, 366),
            Directive::WeekdaySunday0 => (1, 1, 0, 6),
            Directive::WeekdayMonday1 => (1, 1, 1, 7),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameSet {
    MonthLong,
    MonthShort,
    WeekdayLong,
    WeekdayShort,
    AmPm,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

impl NameSet {
    /// The names, each with the value it sets. No name is the start of another of its set, so
    /// at most one reads and their order does not matter.
    fn names(self) -> impl Iterator<Item = (&'static str, u32)> {
        let (list, short): (&'static [&'static str], bool) = match self {
            NameSet::MonthLong => (&MONTHS, false),
            NameSet::MonthShort => (&MONTHS, true),
            NameSet::WeekdayLong => (&WEEKDAYS, false),
            NameSet::WeekdayShort => (&WEEKDAYS, true),
            NameSet::AmPm => (&["am", "pm"], false),
        };
        list.iter()
            .zip(0..)
            .map(move |(n, i)| (if short { &n[..3] } else { *n }, i))
    }
}

/// What a match read, before the fields are combined.
#[derive(Debug, Default, Clone, Copy)]
struct Captures {
    year: Option<u32>,
    year2: Option<u32>,
    month: Option<u32>,
    day: Option<u32>,
    hour: Option<u32>,
    hour12: Option<u32>,
    pm: Option<bool>,
    minute: Option<u32>,
    second: Option<u32>,
    micro: Option<u32>,
    day_of_year: Option<u32>,
    offset: Option<Offset>,
}

#[derive(Debug, Clone, Copy)]
enum Offset {
    Seconds(i32),
    /// An offset with fractional seconds, which this engine refuses.
    Fractional,
}

/// What a pattern read from a cell: a date, a time and maybe an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub date: NaiveDate,
    pub time: NaiveTime,
    pub offset: Option<i32>,
}

const STEP_BUDGET: u32 = 10_000;

impl Pattern {
    /// Compiles a Python `strptime` pattern; the error says what is wrong with it.
    pub fn compile(format: &str) -> Result<Pattern, String> {
        let mut items = Vec::new();
        let mut seen: Vec<char> = Vec::new();
        expand(format, &mut items, &mut seen)?;
        Ok(Pattern::of(items))
    }

    fn of(items: Vec<Item>) -> Pattern {
        let first_reading = items.len() <= STEP_BUDGET as usize
            && items.iter().all(|item| match item {
                Item::Literal(c) => c.is_ascii(),
                Item::Space | Item::Number(_) | Item::Fraction => true,
                Item::Offset | Item::Names(_) => false,
            });
        let layout = Layout::of(items.iter().map(|item| match *item {
            Item::Literal(c) if c.is_ascii() => Some(Piece::Literal(c as u8)),
            Item::Space => Some(Piece::Space),
            Item::Number(Directive::Year) => Some(Piece::Number(Unit::Year)),
            Item::Number(Directive::Month) => Some(Piece::Number(Unit::Month)),
            Item::Number(Directive::Day) => Some(Piece::Number(Unit::Day)),
            Item::Number(Directive::Hour) => Some(Piece::Number(Unit::Hour)),
            Item::Number(Directive::Minute) => Some(Piece::Number(Unit::Minute)),
            Item::Number(Directive::Second) => Some(Piece::Number(Unit::Second)),
            _ => None,
        }))
        .filter(|_| first_reading)
        .map(Box::new);
        Pattern {
            items,
            first_reading,
            layout,
        }
    }

    /// The pattern's fixed layout, if it has one (see [`Layout`]).
    pub fn layout(&self) -> Option<&Layout> {
        self.layout.as_deref()
    }

    /// `%Y-%m-%d`, the default date format.
    pub fn iso_date() -> Pattern {
        Pattern::of(vec![
            Item::Number(Directive::Year),
            Item::Literal('-'),
            Item::Number(Directive::Month),
            Item::Literal('-'),
            Item::Number(Directive::Day),
        ])
    }

    /// Reads `text` in full; `None` if the pattern does not read it or the fields it gives
    /// are not a date and time (February 30th, hour 24, year 0).
    pub fn parse(&self, text: &str) -> Option<Parsed> {
        let mut captures = Captures::default();
        if self.first_reading && match_first_reading(&self.items, text.as_bytes(), &mut captures) {
            return combine(&captures);
        }
        self.parse_backtracking(text)
    }

    /// [`Pattern::parse`] without the first reading's shortcut: every reading, longest first.
    pub(crate) fn parse_backtracking(&self, text: &str) -> Option<Parsed> {
        let mut captures = Captures::default();
        let mut budget = STEP_BUDGET;
        if !match_items(&self.items, text, &mut captures, &mut budget) {
            return None;
        }
        combine(&captures)
    }
}

fn expand(format: &str, items: &mut Vec<Item>, seen: &mut Vec<char>) -> Result<(), String> {
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            items.push(Item::Space);
            continue;
        }
        if c != '%' {
            items.push(Item::Literal(c));
            continue;
        }
        let Some(d) = chars.next() else {
            return Err("ends with a lone %".into());
        };
        let item = match d {
            '%' => {
                items.push(Item::Literal('%'));
                continue;
            }
            // The C locale's composite forms, which Python builds from the directives below.
            'c' => {
                expand("%a %b %d %H:%M:%S %Y", items, seen)?;
                continue;
            }
            'x' => {
                expand("%m/%d/%y", items, seen)?;
                continue;
            }
            'X' => {
                expand("%H:%M:%S", items, seen)?;
                continue;
            }
            'd' => Item::Number(Directive::Day),
            'm' => Item::Number(Directive::Month),
            'Y' => Item::Number(Directive::Year),
            'y' => Item::Number(Directive::Year2),
            'H' => Item::Number(Directive::Hour),
            'I' => Item::Number(Directive::Hour12),
            'M' => Item::Number(Directive::Minute),
            'S' => Item::Number(Directive::Second),
            'j' => Item::Number(Directive::DayOfYear),
            'w' => Item::Number(Directive::WeekdaySunday0),
            'u' => Item::Number(Directive::WeekdayMonday1),
            'f' => Item::Fraction,
            'z' => Item::Offset,
            'B' => Item::Names(NameSet::MonthLong),
            'b' => Item::Names(NameSet::MonthShort),
            'A' => Item::Names(NameSet::WeekdayLong),
            'a' => Item::Names(NameSet::WeekdayShort),
            'p' => Item::Names(NameSet::AmPm),
            'U' | 'W' | 'G' | 'V' => {
                return Err(format!("%{d} (week numbers) is not supported"));
            }
            'Z' => return Err("%Z (time zone names) is not supported; use %z".into()),
            other => return Err(format!("%{other} is not a strptime directive")),
        };
        if seen.contains(&d) {
            return Err(format!("%{d} appears more than once"));
        }
        seen.push(d);
        items.push(item);
    }
    Ok(())
}

/// Matches `items` against all of `text`, longest readings first, backtracking.
fn match_items(items: &[Item], text: &str, captures: &mut Captures, budget: &mut u32) -> bool {
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
fn match_first_reading(items: &[Item], text: &[u8], captures: &mut Captures) -> bool {
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
fn combine(c: &Captures) -> Option<Parsed> {
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
