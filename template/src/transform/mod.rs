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

mod scan;

use scan::{has_space_run, has_white_space, solid_ends};

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
        /// Keys lowercased when `ignore_case`, and the fixed points of [`Transform::map`].
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
pub(crate) struct Transforms {
    list: Vec<Transform>,
    /// Whether every transform is `trim` or `collapse_spaces`, the clean-ups put on most
    /// fields: then [`Transforms::leave`] decides a cell in one scan.
    spaces_only: bool,
}

/// Whether every transform of `list` is `trim` or `collapse_spaces`.
fn only_spaces(list: &[Transform]) -> bool {
    list.iter()
        .all(|t| matches!(t, Transform::Trim | Transform::CollapseSpaces))
}

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
    pub fn new(list: Vec<Transform>) -> Transforms {
        let spaces_only = only_spaces(&list);
        Transforms { list, spaces_only }
    }

    /// The transforms, in order.
    pub fn list(&self) -> &[Transform] {
        &self.list
    }

    /// Adds `transform` after the others.
    pub fn push(&mut self, transform: Transform) {
        self.list.push(transform);
        self.spaces_only = only_spaces(&self.list);
    }

    /// Whether the transforms surely leave `cell` as it is, found in one scan of its text
    /// without a call: a clean cell of a field with only `trim` and `collapse_spaces` (the
    /// common clean-up) is cast as it is, and only the others go to [`Transforms::apply`].
    /// `false` says nothing: ask `apply`. Measured in a micro-benchmark of the validator over
    /// 300,000 rows of the `templates` bench's CSV (about 410 ns a row without transforms),
    /// with `trim` and `collapse_spaces` on every field and a `map` on one: with the word scans
    /// and the map's fixed points, the transforms' cost went from 160 to 60 ns a row.
    #[inline(always)]
    pub fn leave(&self, cell: Cell<'_>) -> bool {
        // Empty text stays empty, and white space is all that `trim` and `collapse_spaces`
        // change: text with none of it is left as it is, whether it is a missing value or not.
        self.spaces_only
            && match cell {
                Cell::Text(t) => !has_white_space(t.as_bytes()) || self.leave_spaced(t),
                Cell::Empty => true,
                _ => false,
            }
    }

    /// [`Transforms::leave`] of text that may have white space: each transform's own check.
    #[inline(never)]
    fn leave_spaced(&self, text: &str) -> bool {
        self.list.iter().all(|t| t.leaves_spacing(text))
    }

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
        for t in &self.list {
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
    /// A `map` of `table`, whose keys are lower case when `ignore_case`. Such a map also holds
    /// each text it maps to itself under its own key (`Kyoto` → `Kyoto` beside `kyoto` →
    /// `Kyoto`): a cell already written as the map writes it is found in one lookup, not
    /// lowered and looked up again. It maps every text as before: the new keys are not lower
    /// case, so no text found under them was found before, and each gives what lowering it did.
    pub fn map(mut table: HashMap<String, String>, ignore_case: bool) -> Transform {
        if ignore_case {
            let fixed: Vec<String> = table
                .iter()
                .filter(|(from, to)| *from != *to && to.to_lowercase() == **from)
                .map(|(_, to)| to.clone())
                .collect();
            table.extend(fixed.into_iter().map(|to| (to.clone(), to)));
        }
        Transform::Map { table, ignore_case }
    }

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
            Transform::Default(_) if !is_missing => Ok(false),
            _ if self.leaves_spacing(text) => Ok(false),
            _ => self.rewrite(text, is_missing, out),
        }
    }

    /// Whether this is `trim` or `collapse_spaces` and leaves `text` as it is, found by
    /// scanning its bytes: the quick check of [`Transform::apply`] and of
    /// [`Transforms::leave`]. `false` for every other transform.
    #[inline]
    fn leaves_spacing(&self, text: &str) -> bool {
        match self {
            Transform::Trim => solid_ends(text),
            Transform::CollapseSpaces => !has_space_run(text),
            _ => false,
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
                // A text found as it is, under a lower-case key or a fixed point, is found
                // without lowering it.
                let found = match table.get(text) {
                    None if *ignore_case => {
                        // Lowered into `out`, which is the result's buffer only when found.
                        out.extend(text.chars().flat_map(char::to_lowercase));
                        table.get(out.as_str())
                    }
                    found => found,
                };
                let Some(to) = found.filter(|to| *to != text) else {
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

    /// An `ignore_case` map's fixed points give what lowering the text gave before.
    #[test]
    fn a_case_blind_map_maps_as_its_lower_case_keys_say() {
        let entries = [
            ("kyoto", "Kyoto"),
            ("tokyo", "TOKYO"),
            ("osaka", "osaka"),
            ("y", "true"),
        ];
        let table: HashMap<String, String> = entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let map = Transform::map(table.clone(), true);
        for text in [
            "Kyoto", "KYOTO", "kyoto", "TOKYO", "Tokyo", "osaka", "OSAKA", "Y", "y", "true", "nara",
        ] {
            let mut out = String::new();
            let changed = map.apply(text, false, &mut out).unwrap();
            let expected = table.get(&text.to_lowercase()).filter(|to| *to != text);
            assert_eq!(changed.then_some(&out), expected, "{text:?}");
        }
    }
}
