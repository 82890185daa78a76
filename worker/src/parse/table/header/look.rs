//! What one cell looks like to the header phase: a name (text), a value (a number, a date, a
//! boolean, a missing-value marker) or nothing. Detection only compares rows with each other, so
//! the reading is looser than column typing: `$1,234.50`, `12 %`, `(300)`, `31.01.2024`, `3,5`,
//! `−0,1` (a Unicode minus or a dash) and `1 234` are values here although a column of them is
//! typed text, and so are the markers statistics offices put where a value is missing (`(NA)`,
//! `(D)`, `n/a`, `x`), because no person would take them for a column's name.

use shared::domain::{ColumnType, TypeSet};

/// A cell's look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    Empty,
    Text,
    Number,
    Date,
    Bool,
    /// A marker standing for a missing value (`(NA)`, `(D)`, `(X)`, `n/a`, `x`).
    Missing,
}

/// Missing-value markers with letters in them (those without, `-`, `..`, `:`, are blank).
const MISSING: [&str; 14] = [
    "(na)", "(d)", "(x)", "(z)", "(s)", "(b)", "(n)", "(r)", "na", "n/a", "n.a.", "x", "nan",
    "null",
];

impl Look {
    pub fn of(text: &str) -> Look {
        let t = text.trim();
        // Rules and dashes (`-----`, `***`, `-`) say nothing: a decorative row is as blank as
        // an empty one.
        if !t.chars().any(char::is_alphanumeric) {
            return Look::Empty;
        }
        if t.len() <= 5 && MISSING.iter().any(|m| t.eq_ignore_ascii_case(m)) {
            return Look::Missing;
        }
        match TypeSet::ANY.narrow(t.as_bytes()).column_type(true) {
            ColumnType::Integer | ColumnType::Decimal => Look::Number,
            ColumnType::Boolean => Look::Bool,
            ColumnType::Date | ColumnType::DateTime => Look::Date,
            _ if loosely_numeric(without_flag(t)) => Look::Number,
            _ => Look::Text,
        }
    }

    pub fn is_value(self) -> bool {
        matches!(self, Look::Number | Look::Date | Look::Bool | Look::Missing)
    }
}

/// A value without the flag statistics offices print after it (`67221943 p` provisional,
/// `12.5 e` estimated, `3 bu`): one or two lowercase letters after a space.
fn without_flag(t: &str) -> &str {
    match t.rsplit_once(' ') {
        Some((value, flag))
            if (1..=2).contains(&flag.len()) && flag.bytes().all(|b| b.is_ascii_lowercase()) =>
        {
            value
        }
        _ => t,
    }
}

/// Digits with the separators, signs and currency marks amounts and dates are written with,
/// the Unicode minus and dashes used as minus signs and the spaces used as thousands
/// separators among them.
fn loosely_numeric(t: &str) -> bool {
    let mut digits = 0;
    for c in t.chars() {
        match c {
            '0'..='9' => digits += 1,
            ',' | '.' | ' ' | '-' | '+' | '(' | ')' | '%' | '/' | ':' | '\'' | '\u{a0}' => {}
            '\u{2212}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{202f}' | '\u{2009}' => {}
            '$' | '€' | '£' | '¥' | '₹' | '₩' => {}
            _ => return false,
        }
    }
    digits > 0
}

/// Whether a row's label cell says the row totals the rows above (`Total`, `Grand total:`,
/// `Summe`, `合計`). It runs on the first cell of every data row, so most cells are turned
/// away by their first byte.
pub(crate) fn is_total_label(cell: &[u8]) -> bool {
    const LABELS: [&str; 12] = [
        "total",
        "totals",
        "grand total",
        "subtotal",
        "sub-total",
        "sum",
        "summe",
        "gesamt",
        "totale",
        "合計",
        "総計",
        "小計",
    ];
    let Some(&first) = cell.first() else {
        return false;
    };
    if !matches!(first | 0x20, b't' | b's' | b'g' | b' ') && first < 0xE5 {
        return false;
    }
    let Ok(text) = std::str::from_utf8(cell) else {
        return false;
    };
    let label = text.trim().trim_end_matches(':').trim_end().to_lowercase();
    LABELS.contains(&label.as_str()) || label.starts_with("total ")
}

/// A text as template labels compare: the key the mapping uses
/// ([`template::validate::label::key`]), so that the header found is the row the
/// fields will be mapped on (`Invoice No.` meets `invoice_no`).
pub(crate) fn normalise(text: &str) -> String {
    template::validate::label::key(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_loosely_and_names_are_text() {
        for value in [
            "12",
            "1.5",
            "$1,234.50",
            "(300)",
            "12 %",
            "31.01.2024",
            "2024-01-31",
            "3,5",
            "\u{2013}0,1",
            "\u{2212}12.5",
            "1\u{202f}234\u{202f}567",
            "13.369.393",
            "(NA)",
            "(D)",
            "n/a",
            "67221943 p",
            "12.5 e",
        ] {
            assert!(Look::of(value).is_value(), "{value}");
        }
        for name in ["Invoice No.", "amount", "Q1 2026", "合計", "Q1 p"] {
            assert_eq!(Look::of(name), Look::Text, "{name}");
        }
        assert_eq!(Look::of("  "), Look::Empty);
        assert_eq!(Look::of("-----"), Look::Empty);
    }

    #[test]
    fn total_labels_are_recognised_and_other_labels_are_not() {
        for label in [
            "Total",
            "TOTAL:",
            "Grand Total",
            "Total EUR",
            "Summe",
            "合計",
        ] {
            assert!(is_total_label(label.as_bytes()), "{label}");
        }
        for label in ["Totally", "Sales", "1", "", "Smith"] {
            assert!(!is_total_label(label.as_bytes()), "{label}");
        }
    }

    #[test]
    fn normalised_labels_ignore_case_and_punctuation() {
        assert_eq!(normalise("Invoice No."), normalise("invoice_no"));
        assert_eq!(normalise(" E-Mail "), "email");
    }
}
