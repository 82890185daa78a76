//! Reading the text of a date, datetime or time field under its `format`: `default` (ISO 8601
//! as frictionless reads it), `any` (common written forms) or a `strptime` pattern.
//!
//! - `date/default` is Python's `strptime(cell, "%Y-%m-%d")` (so `2024-1-5` is a date); the
//!   usual `YYYY-MM-DD` is read directly, other shapes by the pattern.
//! - `datetime/default` is dateutil's `isoparse` behind frictionless's guard (seconds
//!   required): `YYYY-MM-DD`, a separator, `HH:MM:SS`, an optional fraction (`.` or `,`, cut to
//!   microseconds), an optional offset (`Z`, `±hh`, `±hhmm`, `±hh:mm`); `24:00:00` is midnight
//!   of the next day. Deliberate differences: the separator must be `T`, `t` or a space
//!   (isoparse takes any one character), and ISO week dates (`2024-W01-1T…`) are refused.
//! - `time/default` is the same time of day on its own (`HH:MM:SS[.f][offset]`).
//! - `any` is frictionless's dateutil guesser, which this engine replaces by a fixed list of
//!   forms, tried in order (month-first before day-first, as dateutil): the ISO forms above,
//!   `%Y/%m/%d`, `%Y.%m.%d`, `%Y%m%d`, `%m/%d/%Y`, `%d/%m/%Y`, `%m-%d-%Y`, `%d-%m-%Y`,
//!   `%m.%d.%Y`, `%d.%m.%Y`, `%m/%d/%y`, `%d/%m/%y`, `%d %B %Y`, `%d %b %Y`, `%B %d, %Y`,
//!   `%b %d, %Y`, `%B %d %Y`, `%b %d %Y`, `%d-%b-%Y`, `%d-%b-%y`; a datetime is one of those
//!   dates alone or followed by ` %H:%M`, ` %H:%M:%S`, ` %H:%M:%S.%f`, ` %I:%M %p`,
//!   ` %I:%M:%S %p`, `T%H:%M` or `T%H:%M:%S`; a time is `%H:%M`, `%H:%M:%S`, `%H:%M:%S.%f`,
//!   `%I:%M %p`, `%I:%M:%S %p`, `%I %p` or `%I%p`.

use std::sync::OnceLock;

use chrono::{Days, NaiveDate, NaiveTime};

use super::strptime::{Parsed, Pattern};
use super::value::{DateTime, Time};

/// A temporal field's `format`.
#[derive(Debug, Clone)]
pub(crate) enum Temporal {
    Default,
    Any,
    Pattern(Pattern),
    /// The `formats` extension (contract v1.3): each tried in order, the first that reads wins.
    Several(Vec<Temporal>),
}

const ANY_DATES: [&str; 20] = [
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%Y%m%d",
    "%m/%d/%Y",
    "%d/%m/%Y",
    "%m-%d-%Y",
    "%d-%m-%Y",
    "%m.%d.%Y",
    "%d.%m.%Y",
    "%m/%d/%y",
    "%d/%m/%y",
    "%d %B %Y",
    "%d %b %Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%b %d %Y",
    "%d-%b-%Y",
    "%d-%b-%y",
    "%Y-%m-%d",
];
const ANY_TIMES_AFTER_DATE: [&str; 7] = [
    " %H:%M",
    " %H:%M:%S",
    " %H:%M:%S.%f",
    " %I:%M %p",
    " %I:%M:%S %p",
    "T%H:%M",
    "T%H:%M:%S",
];
const ANY_TIMES: [&str; 7] = [
    "%H:%M",
    "%H:%M:%S",
    "%H:%M:%S.%f",
    "%I:%M %p",
    "%I:%M:%S %p",
    "%I %p",
    "%I%p",
];

struct AnyForms {
    dates: Vec<Pattern>,
    datetimes: Vec<Pattern>,
    times: Vec<Pattern>,
}

fn any_forms() -> &'static AnyForms {
    static FORMS: OnceLock<AnyForms> = OnceLock::new();
    FORMS.get_or_init(|| {
        let compile = |f: &str| Pattern::compile(f).ok();
        let dates: Vec<Pattern> = ANY_DATES.iter().filter_map(|f| compile(f)).collect();
        let datetimes = ANY_DATES
            .iter()
            .flat_map(|d| {
                std::iter::once(d.to_string())
                    .chain(ANY_TIMES_AFTER_DATE.iter().map(move |t| format!("{d}{t}")))
            })
            .filter_map(|f| compile(&f))
            .collect();
        let times = ANY_TIMES.iter().filter_map(|f| compile(f)).collect();
        AnyForms {
            dates,
            datetimes,
            times,
        }
    })
}

fn first_parse(patterns: &[Pattern], text: &str) -> Option<Parsed> {
    patterns.iter().find_map(|p| p.parse(text))
}

fn default_date_pattern() -> &'static Pattern {
    static PATTERN: OnceLock<Pattern> = OnceLock::new();
    PATTERN.get_or_init(Pattern::iso_date)
}

impl Temporal {
    pub fn date(&self, text: &str) -> Option<NaiveDate> {
        match self {
            Temporal::Default => {
                iso_date_fast(text).or_else(|| default_date_pattern().parse(text).map(|p| p.date))
            }
            Temporal::Any => iso_date_fast(text)
                .or_else(|| iso_datetime(text).map(|dt| dt.local.date()))
                .or_else(|| first_parse(&any_forms().dates, text).map(|p| p.date))
                .or_else(|| first_parse(&any_forms().datetimes, text).map(|p| p.date)),
            Temporal::Pattern(p) => p.parse(text).map(|p| p.date),
            Temporal::Several(list) => list.iter().find_map(|t| t.date(text)),
        }
    }

    pub fn datetime(&self, text: &str) -> Option<DateTime> {
        let from = |p: Parsed| DateTime {
            local: p.date.and_time(p.time),
            offset: p.offset,
        };
        match self {
            Temporal::Default => iso_datetime(text),
            Temporal::Any => {
                iso_datetime(text).or_else(|| first_parse(&any_forms().datetimes, text).map(from))
            }
            Temporal::Pattern(p) => p.parse(text).map(from),
            Temporal::Several(list) => list.iter().find_map(|t| t.datetime(text)),
        }
    }

    pub fn time(&self, text: &str) -> Option<Time> {
        let from = |p: Parsed| Time {
            local: p.time,
            offset: p.offset,
        };
        match self {
            Temporal::Default => iso_time(text),
            Temporal::Any => {
                iso_time(text).or_else(|| first_parse(&any_forms().times, text).map(from))
            }
            Temporal::Pattern(p) => p.parse(text).map(from),
            Temporal::Several(list) => list.iter().find_map(|t| t.time(text)),
        }
    }
}

fn digits<const N: usize>(b: &[u8]) -> Option<u32> {
    let b = b.get(..N)?;
    b.iter().try_fold(0u32, |n, d| {
        d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
    })
}

/// `YYYY-MM-DD` exactly (most date cells), read without the pattern machinery.
pub(crate) fn iso_date_fast(text: &str) -> Option<NaiveDate> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = digits::<4>(b)?;
    let month = digits::<2>(&b[5..])?;
    let day = digits::<2>(&b[8..])?;
    if year == 0 {
        return None;
    }
    NaiveDate::from_ymd_opt(year as i32, month, day)
}

/// dateutil's `isoparse` of a datetime, behind frictionless's guard that the seconds are
/// written (the 17th character is `:`).
fn iso_datetime(text: &str) -> Option<DateTime> {
    let b = text.as_bytes();
    if b.len() < 19 || b[16] != b':' {
        return None;
    }
    let date = iso_date_fast(text.get(..10)?)?;
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (time, offset, next_day) = iso_time_of_day(&b[11..])?;
    let date = if next_day {
        date.checked_add_days(Days::new(1))?
    } else {
        date
    };
    Some(DateTime {
        local: date.and_time(time),
        offset,
    })
}

/// A time of day on its own, behind frictionless's guard (`HH:MM:SS` at least).
fn iso_time(text: &str) -> Option<Time> {
    let b = text.as_bytes();
    if b.len() < 8 || b[5] != b':' {
        return None;
    }
    let (local, offset, _) = iso_time_of_day(b)?;
    Some(Time { local, offset })
}

/// `HH:MM:SS[(.|,)digits][Z|z|±hh|±hhmm|±hh:mm]`; the flag says `24:00:00` was written.
fn iso_time_of_day(b: &[u8]) -> Option<(NaiveTime, Option<i32>, bool)> {
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let hour = digits::<2>(b)?;
    let minute = digits::<2>(&b[3..])?;
    let second = digits::<2>(&b[6..])?;
    let mut rest = &b[8..];
    let mut micro = 0;
    if let Some((b'.' | b',', tail)) = rest.split_first() {
        let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        // Cut to microseconds, as isoparse does.
        let kept = n.min(6);
        micro = tail[..kept]
            .iter()
            .fold(0u32, |v, d| v * 10 + u32::from(d - b'0'))
            * 10u32.pow((6 - kept) as u32);
        rest = &tail[n..];
    }
    let offset = match rest {
        [] => None,
        [b'Z' | b'z'] => Some(0),
        [sign @ (b'+' | b'-'), tail @ ..] => {
            let (hours, minutes) = match tail.len() {
                2 => (digits::<2>(tail)?, 0),
                4 => (digits::<2>(tail)?, digits::<2>(&tail[2..])?),
                5 if tail[2] == b':' => (digits::<2>(tail)?, digits::<2>(&tail[3..])?),
                _ => return None,
            };
            if hours > 23 || minutes > 59 {
                return None;
            }
            let seconds = (hours * 3600 + minutes * 60) as i32;
            Some(if *sign == b'-' { -seconds } else { seconds })
        }
        _ => return None,
    };
    if hour == 24 {
        // ISO 8601's end-of-day midnight.
        if minute != 0 || second != 0 || micro != 0 {
            return None;
        }
        return Some((NaiveTime::MIN, offset, true));
    }
    let time = NaiveTime::from_hms_micro_opt(hour, minute, second, micro)?;
    Some((time, offset, false))
}
