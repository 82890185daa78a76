//! Casting one cell to a field's type, as frictionless's field readers do (the typed workbook
//! cells are tabled on [`Cell`]). Valid cells cost no allocation: text values borrow the cell,
//! typed cells in a string field are formatted into an inline buffer.
//!
//! Deliberate differences from frictionless, beyond those of `number`, `temporal`, `strptime`
//! and `text_format`:
//! - `integer` is a 64-bit integer (Python's is unbounded; larger texts are type errors) and
//!   takes ASCII digits without underscores;
//! - `year` text is exactly four ASCII digits (Python's `int()` of any four characters also
//!   takes `+123` and ` 123`).

use super::cell::Cell;
use super::number::{strip_non_bare, Number, NumberSyntax};
use super::temporal::Temporal;
use super::text_format::StringFormat;
use super::value::{DateTime, Text, Time, Value};
use super::{Field, FieldType};

use chrono::{Datelike, NaiveDate, Timelike};

/// How a field reads cells: its type with the options that change what a text means.
#[derive(Debug, Clone)]
pub(crate) enum Syntax {
    String(StringFormat),
    Integer {
        bare: bool,
    },
    Number(NumberSyntax),
    Boolean {
        true_values: Vec<String>,
        false_values: Vec<String>,
    },
    Date(Temporal),
    DateTime(Temporal),
    Time(Temporal),
    Year,
    Any,
}

/// A cell that is not a value of its field's type and format; [`Field::expected`] says what
/// would have been.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CastFailure;

impl Field {
    /// Casts a cell: `Empty` and the missing values are `Null`; anything else must read as the
    /// field's type and format. Constraints are [`Field::check`]'s. Inlined into the row loop
    /// for the reason [`Syntax::read`] is: called, it returned the value through memory, and
    /// the row loop's first load of it, stalled on the stores, was a fifth of the loop's time.
    #[inline(always)]
    pub fn cast<'a>(&self, cell: Cell<'a>) -> Result<Value<'a>, CastFailure> {
        match cell {
            Cell::Empty => Ok(Value::Null),
            Cell::Text(t) if self.missing_values.contains(t) => Ok(Value::Null),
            cell => self.syntax.read(cell).ok_or(CastFailure),
        }
    }

    /// What the field takes, for a type error's message: `a number`, `a date in the form
    /// %d/%m/%Y`, ...
    pub fn expected(&self) -> String {
        let form = |what: &str, default: &str| match self.format.as_str() {
            "any" => format!("a {what}"),
            "default" => format!("a {what} in the form {default}"),
            pattern => format!("a {what} in the form {pattern}"),
        };
        match &self.syntax {
            Syntax::String(StringFormat::Default) => "a string".into(),
            Syntax::String(StringFormat::Email) => "an email address".into(),
            Syntax::String(StringFormat::Uri) => "a URI (scheme:...)".into(),
            Syntax::String(StringFormat::Uuid) => "a UUID".into(),
            Syntax::Integer { .. } => "an integer".into(),
            Syntax::Number(n) => {
                let mut text = String::from("a number");
                if n.decimal != '.' {
                    text.push_str(&format!(" with \"{}\" as its decimal mark", n.decimal));
                }
                if let Some(g) = n.group {
                    text.push_str(&format!(" and \"{g}\" between groups of digits"));
                }
                text
            }
            Syntax::Boolean {
                true_values,
                false_values,
            } => format!(
                "a boolean ({} / {})",
                true_values.join(", "),
                false_values.join(", ")
            ),
            Syntax::Date(_) => form("date", "YYYY-MM-DD"),
            Syntax::DateTime(_) => form("date and time", "YYYY-MM-DDTHH:MM:SS"),
            Syntax::Time(_) => form("time", "HH:MM:SS"),
            Syntax::Year => "a year (four digits)".into(),
            Syntax::Any => "a value".into(),
        }
    }
}

impl Syntax {
    pub fn field_type(&self) -> FieldType {
        match self {
            Syntax::String(_) => FieldType::String,
            Syntax::Integer { .. } => FieldType::Integer,
            Syntax::Number(_) => FieldType::Number,
            Syntax::Boolean { .. } => FieldType::Boolean,
            Syntax::Date(_) => FieldType::Date,
            Syntax::DateTime(_) => FieldType::DateTime,
            Syntax::Time(_) => FieldType::Time,
            Syntax::Year => FieldType::Year,
            Syntax::Any => FieldType::Any,
        }
    }

    /// Reads a cell that is not a missing value; `None` when it is not of the type. Inlined
    /// into the row loop (as is each type's reader): returned through memory, the value's
    /// bytes stall the loads that copy it.
    #[inline(always)]
    pub fn read<'a>(&self, cell: Cell<'a>) -> Option<Value<'a>> {
        if matches!(cell, Cell::Empty) {
            return Some(Value::Null);
        }
        match self {
            Syntax::String(format) => read_string(*format, cell),
            Syntax::Integer { bare } => read_integer(*bare, cell),
            Syntax::Number(syntax) => read_number(syntax, cell),
            Syntax::Boolean {
                true_values,
                false_values,
            } => read_boolean(true_values, false_values, cell),
            Syntax::Date(format) => read_date(format, cell),
            Syntax::DateTime(format) => read_datetime(format, cell),
            Syntax::Time(format) => read_time(format, cell),
            Syntax::Year => read_year(cell),
            Syntax::Any => Some(read_any(cell)),
        }
    }
}

/// A `string` cell: its text (a typed cell's formatted inline), if the format takes it.
#[inline(always)]
fn read_string(format: StringFormat, cell: Cell<'_>) -> Option<Value<'_>> {
    let text = match cell {
        Cell::Text(t) => Text::Borrowed(t),
        Cell::Error(_) | Cell::Empty => return None,
        typed => Text::inline(|out| typed.write_text(out))?,
    };
    format.accepts(text.as_str()).then_some(Value::Text(text))
}

/// An `integer` cell: a text with (unless `bare`) its non-digits stripped, or an integral number.
#[inline(always)]
fn read_integer(bare: bool, cell: Cell<'_>) -> Option<Value<'_>> {
    match cell {
        Cell::Text(t) => {
            let t = t.trim();
            let t = if bare { t } else { strip_non_bare(t) };
            t.parse().ok().map(Value::Integer)
        }
        Cell::Int(i) => Some(Value::Integer(i)),
        Cell::Float(f) => integral(f).map(Value::Integer),
        _ => None,
    }
}

#[inline(always)]
fn read_number<'a>(syntax: &NumberSyntax, cell: Cell<'a>) -> Option<Value<'a>> {
    match cell {
        Cell::Text(t) => Number::parse(t, syntax).map(Value::Number),
        Cell::Int(i) => Some(Value::Number(Number::from_i64(i))),
        Cell::Float(f) => Some(Value::Number(Number::from_f64(f))),
        _ => None,
    }
}

/// A `boolean` cell: a workbook boolean, or a text (a number's too) among the field's values.
#[inline(always)]
fn read_boolean<'a>(
    true_values: &[String],
    false_values: &[String],
    cell: Cell<'a>,
) -> Option<Value<'a>> {
    let lookup = |t: &str| {
        if true_values.iter().any(|v| v == t) {
            Some(Value::Boolean(true))
        } else if false_values.iter().any(|v| v == t) {
            Some(Value::Boolean(false))
        } else {
            None
        }
    };
    match cell {
        Cell::Text(t) => lookup(t),
        Cell::Bool(b) => Some(Value::Boolean(b)),
        Cell::Int(_) | Cell::Float(_) => {
            let text = Text::inline(|out| cell.write_text(out))?;
            lookup(text.as_str())
        }
        _ => None,
    }
}

/// A `date` cell: a text in the format, a workbook date, or a workbook date-time at midnight.
#[inline(always)]
fn read_date<'a>(format: &Temporal, cell: Cell<'a>) -> Option<Value<'a>> {
    match cell {
        Cell::Text(t) => format.date(t),
        Cell::Date(d) => Some(d),
        Cell::DateTime(dt) => {
            let t = dt.time();
            (t.hour() == 0 && t.minute() == 0 && t.second() == 0).then(|| dt.date())
        }
        _ => None,
    }
    .filter(in_python_range)
    .map(Value::Date)
}

/// A `datetime` cell: a text in the format, or a workbook date-time or date (at midnight).
#[inline(always)]
fn read_datetime<'a>(format: &Temporal, cell: Cell<'a>) -> Option<Value<'a>> {
    match cell {
        Cell::Text(t) => format.datetime(t),
        Cell::DateTime(local) => Some(DateTime {
            local,
            offset: None,
        }),
        Cell::Date(d) => Some(DateTime {
            local: d.and_time(chrono::NaiveTime::MIN),
            offset: None,
        }),
        _ => None,
    }
    .filter(|dt| in_python_range(&dt.local.date()))
    .map(Value::DateTime)
}

#[inline(always)]
fn read_time<'a>(format: &Temporal, cell: Cell<'a>) -> Option<Value<'a>> {
    match cell {
        Cell::Text(t) => format.time(t),
        Cell::Time(local) => Some(Time {
            local,
            offset: None,
        }),
        _ => None,
    }
    .map(Value::Time)
}

/// A `year` cell: four ASCII digits, or an integral number, from 0 to 9999.
#[inline(always)]
fn read_year(cell: Cell<'_>) -> Option<Value<'_>> {
    match cell {
        Cell::Text(t) if t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit()) => t.parse().ok(),
        Cell::Int(i) => i32::try_from(i).ok(),
        Cell::Float(f) => integral(f).and_then(|i| i32::try_from(i).ok()),
        _ => None,
    }
    .filter(|y| (0..=9999).contains(y))
    .map(Value::Year)
}

/// An `any` cell: whatever it holds (an error cell as its text).
#[inline(always)]
fn read_any(cell: Cell<'_>) -> Value<'_> {
    match cell {
        Cell::Text(t) | Cell::Error(t) => Value::Text(Text::Borrowed(t)),
        Cell::Empty => Value::Null,
        Cell::Int(i) => Value::Integer(i),
        Cell::Float(f) => Value::Number(Number::from_f64(f)),
        Cell::Bool(b) => Value::Boolean(b),
        Cell::Date(d) => Value::Date(d),
        Cell::DateTime(local) => Value::DateTime(DateTime {
            local,
            offset: None,
        }),
        Cell::Time(local) => Value::Time(Time {
            local,
            offset: None,
        }),
    }
}

/// An integral float as an integer (a workbook's numbers are floats).
fn integral(f: f64) -> Option<i64> {
    // Below 2^63 in magnitude, so the conversion is exact.
    (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
}

fn in_python_range(d: &NaiveDate) -> bool {
    (1..=9999).contains(&d.year())
}
