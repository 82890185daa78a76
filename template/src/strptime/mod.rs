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

mod read;

use chrono::{NaiveDate, NaiveTime};

use super::layout::{Layout, Piece, Unit};
use read::{combine, match_first_reading, match_items};

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
