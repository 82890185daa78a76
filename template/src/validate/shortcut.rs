//! The row loop's shortcut for the usual cell: a text that is already written the way its typed
//! value is stored (`42`, `2024-03-05`, `12.50`, any string). In a field without constraints
//! beyond `required` such a cell only needs to be recognised and copied; in other fields it is
//! still copied once its value passed. Building a typed [`Value`](super::super::Value),
//! checking it and writing it again costs several times as much, and the validating parse must
//! keep pace with the plain one. Every text the shortcut takes is one the field's reader takes
//! and writes back unchanged (a test compares the two on each shape); anything else goes the
//! general way. A date, datetime or time with a fixed-layout `format` has its own reading,
//! which writes the ISO form out of the cell's digits (`layout.rs`).

use super::super::cast::Syntax;
use super::super::layout::{Layout, Stored};
use super::super::temporal::{iso_date_fast, Temporal};
use super::super::text_format::StringFormat;
use super::super::value::write_json_str;
use super::super::Field;

/// How a field's values are written as stored, for the shortcut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shortcut {
    /// Not taken (formats whose stored form differs from any text: email... are still text).
    None,
    Text,
    Integer,
    Number,
    Boolean,
    Date,
    DateTime,
    Time,
    Year,
    /// A date, datetime or time with a fixed-layout `format` (see [`Layout`]).
    Layout(Stored),
}

/// How a canonical text is copied.
enum Form {
    Bare,
    Quoted,
}

impl Shortcut {
    /// The shortcut of a field's type and format.
    pub fn of(field: &Field) -> Shortcut {
        match &field.syntax {
            Syntax::String(StringFormat::Default) | Syntax::Any => Shortcut::Text,
            Syntax::Integer { bare: true } => Shortcut::Integer,
            Syntax::Number(syntax) if syntax.is_plain() => Shortcut::Number,
            Syntax::Boolean { .. } => Shortcut::Boolean,
            Syntax::Date(Temporal::Default) => Shortcut::Date,
            Syntax::DateTime(Temporal::Default) => Shortcut::DateTime,
            Syntax::Time(Temporal::Default) => Shortcut::Time,
            Syntax::Year => Shortcut::Year,
            Syntax::Date(Temporal::Pattern(p)) => Self::layout(p.layout(), Stored::Date),
            Syntax::DateTime(Temporal::Pattern(p)) => Self::layout(p.layout(), Stored::DateTime),
            Syntax::Time(Temporal::Pattern(p)) => Self::layout(p.layout(), Stored::Time),
            _ => Shortcut::None,
        }
    }

    fn layout(layout: Option<&Layout>, stored: Stored) -> Shortcut {
        match layout {
            Some(layout) if layout.serves(stored) => Shortcut::Layout(stored),
            _ => Shortcut::None,
        }
    }

    /// Writes the JSON of a text cell that is not a missing value, for a field with nothing to
    /// check beyond `required`, if the shortcut can tell that the text is valid; `false` leaves
    /// the cell to the general way (an error, or a valid text stored otherwise, like `+5`).
    #[inline]
    pub fn write(self, field: &Field, text: &str, out: &mut Vec<u8>) -> bool {
        if let Shortcut::Layout(stored) = self {
            let (Syntax::Date(Temporal::Pattern(p))
            | Syntax::DateTime(Temporal::Pattern(p))
            | Syntax::Time(Temporal::Pattern(p))) = &field.syntax
            else {
                return false;
            };
            return p.layout().is_some_and(|l| l.write(stored, text, out));
        }
        if let (
            Shortcut::Boolean,
            Syntax::Boolean {
                true_values,
                false_values,
            },
        ) = (self, &field.syntax)
        {
            let literal: &[u8] = if true_values.iter().any(|v| v == text) {
                b"true"
            } else if false_values.iter().any(|v| v == text) {
                b"false"
            } else {
                return false;
            };
            out.extend_from_slice(literal);
            return true;
        }
        let valid = match self {
            Shortcut::Integer => text.parse::<i64>().is_ok(),
            Shortcut::Date => iso_date_fast(text).is_some(),
            Shortcut::DateTime => Temporal::Default.datetime(text).is_some(),
            Shortcut::Time => Temporal::Default.time(text).is_some(),
            // Canonical texts of these are valid by their shape alone.
            Shortcut::Text | Shortcut::Number | Shortcut::Year => true,
            Shortcut::None | Shortcut::Boolean | Shortcut::Layout(_) => false,
        };
        // The shape first: it is cheaper than reading the value.
        match self.form(text.as_bytes()) {
            Some(form) if valid => {
                self.emit(form, text, out);
                true
            }
            _ => false,
        }
    }

    /// Copies a text cell whose value is valid, if the text is written as the value is stored
    /// (the general way after a field's constraints passed); `false` if it is not.
    #[inline]
    pub fn copy(self, text: &str, out: &mut Vec<u8>) -> bool {
        match self.form(text.as_bytes()) {
            Some(form) => {
                self.emit(form, text, out);
                true
            }
            None => false,
        }
    }

    #[inline]
    fn emit(self, form: Form, text: &str, out: &mut Vec<u8>) {
        let b = text.as_bytes();
        match form {
            Form::Bare => out.extend_from_slice(b),
            Form::Quoted if self == Shortcut::Text => write_json_str(out, text),
            Form::Quoted => {
                out.reserve(b.len() + 2);
                out.push(b'"');
                out.extend_from_slice(b);
                out.push(b'"');
            }
        }
    }

    /// How `b`, a text of the field's type, is copied if it is written as its value is stored.
    #[inline]
    fn form(self, b: &[u8]) -> Option<Form> {
        let stored = match self {
            Shortcut::None | Shortcut::Boolean | Shortcut::Layout(_) => false,
            Shortcut::Text => return Some(Form::Quoted),
            Shortcut::Integer => return plain_integer(b).then_some(Form::Bare),
            Shortcut::Number => return plain_decimal(b).then_some(Form::Bare),
            Shortcut::Year => {
                return (b.len() == 4 && b[0] != b'0' && digits(b)).then_some(Form::Bare)
            }
            Shortcut::Date => b.len() == 10 && iso_date_shape(b),
            // `YYYY-MM-DDTHH:MM:SS`, UTC as `Z` or no offset, not the hour 24.
            Shortcut::DateTime => {
                matches!((b.len(), b.get(19)), (19, None) | (20, Some(b'Z')))
                    && iso_date_shape(&b[..10])
                    && b[10] == b'T'
                    && time_shape(&b[11..19])
            }
            Shortcut::Time => {
                matches!((b.len(), b.get(8)), (8, None) | (9, Some(b'Z'))) && time_shape(&b[..8])
            }
        };
        stored.then_some(Form::Quoted)
    }
}

fn digits(b: &[u8]) -> bool {
    b.iter().all(u8::is_ascii_digit)
}

/// `dddd-dd-dd`.
fn iso_date_shape(b: &[u8]) -> bool {
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && digits(&b[..4])
        && digits(&b[5..7])
        && digits(&b[8..])
}

/// `dd:dd:dd`, not the hour 24 (stored as the next day's midnight).
fn time_shape(b: &[u8]) -> bool {
    b.len() == 8
        && b[2] == b':'
        && b[5] == b':'
        && !(b[0] == b'2' && b[1] == b'4')
        && digits(&b[..2])
        && digits(&b[3..5])
        && digits(&b[6..])
}

/// `-?(0|[1-9][0-9]*)`, not `-0`: an integer as `itoa` writes it.
fn plain_integer(b: &[u8]) -> bool {
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    match digits.split_first() {
        Some((b'0', rest)) => rest.is_empty() && digits.len() == b.len(),
        Some((first, rest)) => first.is_ascii_digit() && rest.iter().all(u8::is_ascii_digit),
        None => false,
    }
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?` with at most 19 digits, not below 1E-6 unless zero: a
/// decimal as Python's `str(Decimal)` writes it (plain notation, the scale as written).
fn plain_decimal(b: &[u8]) -> bool {
    let unsigned = b.strip_prefix(b"-").unwrap_or(b);
    let (int, frac) = match unsigned.iter().position(|&c| c == b'.') {
        Some(dot) => (&unsigned[..dot], Some(&unsigned[dot + 1..])),
        None => (unsigned, None),
    };
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if !digits(int) || (int[0] == b'0' && int.len() > 1) {
        return false;
    }
    let Some(frac) = frac else {
        return int.len() <= 19;
    };
    if !digits(frac) || int.len() + frac.len() > 19 {
        return false;
    }
    // Python switches to an exponent below 1E-6: `0.0000001` is `1E-7`, `0.0000000` `0E-7`.
    if int == b"0" {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        let small = if zeros == frac.len() {
            frac.len() >= 7
        } else {
            zeros >= 6
        };
        if small {
            return false;
        }
    }
    true
}
