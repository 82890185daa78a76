//! A field's `transforms` (contract v1.3, an extension of the Table Schema): a closed,
//! deterministic list of clean-ups applied in order to a cell's text before it is cast and
//! checked, each compiled once with its template (`compile::transforms`).
//!
//! Which cells they see: text cells, and an empty cell as the empty text (so `default` can fill
//! it). A workbook's typed cell (a number, a date, a boolean) is already a value: it is
//! transformed only in a `string` field, as the text it shows, because anywhere else turning it
//! into text and reading it back could only lose what the workbook knew (a date cell under a
//! `%d/%m/%Y` field would no longer read). A missing value stays missing for every transform
//! but `default`, whose job it is to replace it.
//!
//! Phone numbers use the `phonenumber` crate: the Rust port of Google's libphonenumber that
//! ships its metadata (the version after the `+` of the crate's version), the one well-kept
//! crate that reads national forms (`030 1234567` in region DE) rather than only `+…` text.

use std::collections::HashMap;

use regex::Regex;

use super::cell::Cell;
use super::value::MissingValues;

/// One compiled transform.
#[derive(Debug)]
pub(crate) enum Transform {
    Trim,
    CollapseSpaces,
    Lower,
    Upper,
    Title,
    Replace {
        pattern: Regex,
        with: String,
    },
    Map {
        /// Keys lowercased when `ignore_case`.
        table: HashMap<String, String>,
        ignore_case: bool,
    },
    Default(String),
    Phone(phonenumber::country::Id),
    Split {
        separator: String,
        index: usize,
    },
}

/// A field's transforms, in order (never empty: a field without any has `None`).
#[derive(Debug)]
pub(crate) struct Transforms(pub Vec<Transform>);

/// What the transforms made of a cell.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The text is what it was: cast the cell itself.
    Unchanged,
    /// The new text is in the buffer.
    Changed,
    /// A transform could not read the text (a phone number of no known form): a type error,
    /// with what was expected.
    Unreadable(String),
}

/// The two buffers transforms write into, kept between cells so a cell costs no allocation.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    /// The text after the transforms, when they changed it.
    pub out: String,
    spare: String,
}

impl Transforms {
    /// Applies the transforms to `cell` of a field typed `string` or not (`text_field`) whose
    /// missing values are `missing`; when they change its text, the result is in `buffers.out`.
    /// A transform that leaves its text as it is copies nothing: a clean cell costs a scan per
    /// transform (measured: with every transform copying, `trim` and `collapse_spaces` on
    /// every field took a templated 1M-row parse + store to 71 % of the same without them).
    pub fn apply(
        &self,
        cell: Cell<'_>,
        text_field: bool,
        missing: &MissingValues,
        buffers: &mut Buffers,
    ) -> Applied {
        let shown;
        let original: &str = match cell {
            Cell::Text(t) => t,
            Cell::Empty => "",
            Cell::Error(_) => return Applied::Unchanged,
            typed if text_field => {
                shown = typed.text();
                &shown
            }
            _ => return Applied::Unchanged,
        };
        let Buffers { out, spare } = buffers;
        let mut changed = false;
        let original_missing = missing.contains(original);
        for t in &self.0 {
            let current: &str = if changed { out } else { original };
            let is_missing = if changed {
                missing.contains(current)
            } else {
                original_missing
            };
            spare.clear();
            match t.apply(current, is_missing, spare) {
                Ok(true) => {
                    std::mem::swap(out, spare);
                    changed = true;
                }
                Ok(false) => {}
                Err(expected) => return Applied::Unreadable(expected),
            }
        }
        if changed && *out != original {
            Applied::Changed
        } else {
            Applied::Unchanged
        }
    }
}

impl Transform {
    /// Writes the transformed `text` into `out` and says `true`, or says `false` when `text`
    /// stays as it is; `Err` with what was expected when the text cannot be read. The checks
    /// that find a clean cell clean are here, inlined into the loop over a field's transforms;
    /// the rewriting is out of line ([`Transform::rewrite`]), so a clean cell does not pay for
    /// its stack frame (phone numbers, regexes). With the scans of ASCII text as bytes, this took
    /// the validator from 845 to 800 ns a row of the `templates` bench's CSV with `trim` and
    /// `collapse_spaces` on every field and a `map` (530 without them), in a micro-benchmark.
    #[inline]
    fn apply(&self, text: &str, is_missing: bool, out: &mut String) -> Result<bool, String> {
        if is_missing && !matches!(self, Transform::Default(_)) {
            return Ok(false);
        }
        match self {
            Transform::Trim if solid_ends(text) => Ok(false),
            Transform::CollapseSpaces if !has_space_run(text) => Ok(false),
            Transform::Default(_) if !is_missing => Ok(false),
            _ => self.rewrite(text, is_missing, out),
        }
    }

    /// [`Transform::apply`] past its quick checks.
    #[inline(never)]
    fn rewrite(&self, text: &str, is_missing: bool, out: &mut String) -> Result<bool, String> {
        match self {
            Transform::Trim => {
                let trimmed = text.trim();
                if trimmed.len() == text.len() {
                    return Ok(false);
                }
                out.push_str(trimmed);
            }
            Transform::CollapseSpaces => collapse_spaces(text, out),
            Transform::Lower if !text.chars().any(char::is_uppercase) => return Ok(false),
            Transform::Lower => out.push_str(&text.to_lowercase()),
            Transform::Upper if !text.chars().any(char::is_lowercase) => return Ok(false),
            Transform::Upper => out.push_str(&text.to_uppercase()),
            Transform::Title => title(text, out),
            Transform::Replace { pattern, with } => {
                match pattern.replace_all(text, with.as_str()) {
                    std::borrow::Cow::Borrowed(_) => return Ok(false),
                    std::borrow::Cow::Owned(replaced) => out.push_str(&replaced),
                }
            }
            Transform::Map { table, ignore_case } => {
                // The keys of an `ignore_case` map are lower case: a text equal to one is its
                // own lower case, found without lowering it.
                let found = match table.get(text) {
                    None if *ignore_case => {
                        // Lowered into `out`, which is the result's buffer only when found.
                        out.extend(text.chars().flat_map(char::to_lowercase));
                        table.get(out.as_str())
                    }
                    found => found,
                };
                let Some(to) = found else {
                    return Ok(false);
                };
                out.clear();
                out.push_str(to);
            }
            Transform::Default(value) if is_missing => out.push_str(value),
            Transform::Default(_) => return Ok(false),
            Transform::Phone(region) => phone(text, *region, out)?,
            Transform::Split { separator, index } => {
                out.push_str(text.split(separator.as_str()).nth(*index).unwrap_or(""))
            }
        }
        Ok(out != text)
    }
}

/// Whether `text` has white space other than single spaces: what `collapse_spaces` changes.
/// Every clean cell of a field with `collapse_spaces` is scanned, so it is scanned as bytes: a
/// character is decoded only at the lead bytes of the non-ASCII white space characters (U+0085,
/// U+00A0, U+1680, U+2000–U+205F, U+3000), not at every character of a name in kanji.
fn has_space_run(text: &str) -> bool {
    let b = text.as_bytes();
    let mut previous = false;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let (space, single, len) = match c {
            0..=0x7f => (ascii_space(c), c == b' ', 1),
            0xc2 | 0xe1 | 0xe2 | 0xe3 => {
                let ch = text.get(i..).and_then(|t| t.chars().next()).unwrap_or('\0');
                (ch.is_whitespace(), false, ch.len_utf8())
            }
            // Another character's lead or continuation byte: not white space.
            _ => (false, false, 1),
        };
        if space && (previous || !single) {
            return true;
        }
        previous = space;
        i += len;
    }
    false
}

/// Neither end of `text` is white space (`trim` leaves it), decoding at most one character at
/// each end.
fn solid_ends(text: &str) -> bool {
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(&first), Some(&last)) if first < 0x80 && last < 0x80 => {
            !ascii_space(first) && !ascii_space(last)
        }
        (Some(_), Some(_)) => {
            !text.starts_with(char::is_whitespace) && !text.ends_with(char::is_whitespace)
        }
        _ => false,
    }
}

/// `char::is_whitespace` of an ASCII byte: space, and tab to carriage return.
fn ascii_space(c: u8) -> bool {
    c == b' ' || (b'\t'..=b'\r').contains(&c)
}

/// Every run of white space as one space (the ends kept: `trim` takes them).
fn collapse_spaces(text: &str, out: &mut String) {
    let mut in_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
}

/// Each word's first letter upper case and the rest lower case; a word starts after anything
/// that is not a letter or a digit (`o'neil-smith` → `O'Neil-Smith`).
fn title(text: &str, out: &mut String) {
    let mut start = true;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if start {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            start = false;
        } else {
            out.push(c);
            start = true;
        }
    }
}

/// `text` as an E.164 number (`+4930123456`), read in `region` unless it says its own country
/// (`+…`, `00…`); a number libphonenumber does not hold valid is not read.
fn phone(text: &str, region: phonenumber::country::Id, out: &mut String) -> Result<(), String> {
    let expected = || format!("a phone number (of region {})", region.as_ref());
    let number = phonenumber::parse(Some(region), text).map_err(|_| expected())?;
    if !phonenumber::is_valid(&number) {
        return Err(expected());
    }
    out.push_str(&number.format().mode(phonenumber::Mode::E164).to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The characters' rule, which the byte scan of ASCII text must agree with.
    fn by_chars(text: &str) -> bool {
        let mut previous = false;
        text.chars().any(|c| {
            let space = c.is_whitespace();
            let run = space && (previous || c != ' ');
            previous = space;
            run
        })
    }

    #[test]
    fn text_is_scanned_as_the_characters_rule_says() {
        let mut texts = vec![
            String::new(),
            "a".into(),
            "a b c".into(),
            " a ".into(),
            "a  b".into(),
            "ab ".into(),
            "  ".into(),
        ];
        for b in 0u8..0x80 {
            let c = char::from(b);
            texts.push(format!("a{c}b"));
            texts.push(format!("{c}"));
            texts.push(format!("a {c}"));
        }
        for text in &texts {
            assert_eq!(has_space_run(text), by_chars(text), "{text:?}");
            let trimmed = text.trim().len() == text.len() && !text.is_empty();
            assert_eq!(solid_ends(text), trimmed, "{text:?}");
        }
        for text in [
            "東京\u{3000}都",
            "東京 都",
            "東京  都",
            "a\u{a0}b",
            "a \u{a0}b",
            "\u{85}",
            "x\u{2009}y",
            "x\u{205f}",
            "ひらがな カタカナ",
            "ひらがな\u{3000}\u{3000}",
            "é è",
            "\u{1680}",
        ] {
            assert_eq!(has_space_run(text), by_chars(text), "{text:?}");
            let trimmed = text.trim().len() == text.len() && !text.is_empty();
            assert_eq!(solid_ends(text), trimmed, "{text:?}");
        }
    }
}
