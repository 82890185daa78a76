//! One buffered row as header detection reads it: each cell's look, how many are filled, its
//! words for template matching, its share of short distinct names, which cells are years (the
//! column labels statistical tables use) and whether it is a metadata line.

use super::look::{normalise, Look};

/// A name longer than this reads as a sentence (a note), not a column's name.
const MAX_NAME_CHARS: usize = 40;

/// One buffered row as detection reads it.
pub(super) struct Shape {
    /// The row's 1-based number: group rows lie right above the header, with no gap.
    pub(super) number: u64,
    pub(super) looks: Vec<Look>,
    /// Non-empty cells.
    pub(super) filled: usize,
    /// Normalised texts, for template matching.
    pub(super) words: Vec<String>,
    pub(super) texts_short_and_distinct: f64,
    /// Cells that are years (`1990`, `1990.0`): column labels in a row of names above values.
    pub(super) years: Vec<bool>,
    /// A metadata line (`Station:,EDW`, `Unit: mm`): a label ending in `:` and at most one
    /// value (which does not end in `:` itself). Never a header, never part of the table.
    pub(super) meta: bool,
}

impl Shape {
    pub fn of(texts: &[String], number: u64) -> Shape {
        let looks: Vec<Look> = texts.iter().map(|t| Look::of(t)).collect();
        let filled = looks.iter().filter(|l| **l != Look::Empty).count();
        let words: Vec<String> = texts.iter().map(|t| normalise(t)).collect();
        let mut names: Vec<&str> = texts
            .iter()
            .zip(&looks)
            .filter(|(t, l)| **l == Look::Text && t.trim().chars().count() <= MAX_NAME_CHARS)
            .map(|(t, _)| t.trim())
            .collect();
        let short = names.len();
        names.sort_unstable();
        names.dedup();
        // Repeated names are common under group rows (`sales`, `units` under each quarter),
        // so repeats only halve a row's share of names.
        let texts_short_and_distinct = if filled == 0 {
            0.0
        } else {
            let distinct = names.len() as f64 / short.max(1) as f64;
            (short as f64 / filled as f64) * (0.5 + 0.5 * distinct)
        };
        let years = texts.iter().map(|t| is_year(t)).collect();
        let mut cells = texts.iter().map(|t| t.trim()).filter(|t| !t.is_empty());
        let meta = match (cells.next(), cells.next(), cells.next()) {
            (Some(label), None, None) => label.ends_with(':') || label.contains(": "),
            // `Name:,Age:` is a header whose names end in colons, not a label and its value.
            (Some(label), Some(value), None) => label.ends_with(':') && !value.ends_with(':'),
            _ => false,
        };
        Shape {
            number,
            looks,
            filled,
            words,
            texts_short_and_distinct,
            years,
            meta,
        }
    }

    /// Whether cell `c` reads as a name: text, or a year among the row's names.
    pub(super) fn is_name(&self, c: usize) -> bool {
        self.looks.get(c) == Some(&Look::Text) || self.years.get(c) == Some(&true)
    }

    pub(super) fn has_values(&self) -> bool {
        (0..self.looks.len()).any(|c| self.looks[c].is_value() && !self.years[c])
    }

    pub(super) fn is_blank(&self) -> bool {
        self.filled == 0
    }

    /// The cells up to the last non-empty one.
    pub(super) fn span(&self) -> usize {
        self.looks
            .iter()
            .rposition(|l| *l != Look::Empty)
            .map_or(0, |i| i + 1)
    }
}

/// A year as a column label: 1800–2100, written as an integer or with a zero fraction
/// (`1990.0`, as spreadsheets export them).
fn is_year(text: &str) -> bool {
    let t = text.trim();
    let digits = t.split_once('.').map_or(t, |(whole, fraction)| {
        if fraction.bytes().all(|b| b == b'0') {
            whole
        } else {
            ""
        }
    });
    digits.len() == 4
        && digits
            .parse::<u16>()
            .is_ok_and(|y| (1800..=2100).contains(&y))
}
