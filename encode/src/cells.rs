//! A stored chunk (`[[cell,…],…]`, the JSON text of an array of rows) split into its cells,
//! each the JSON text it is stored as, without building a value. Chunks as the worker writes
//! them (no whitespace, scalar cells) are split by [`scan`]: a string ends at the first `"`
//! that is not escaped, which `memchr2` on `"` and `\` finds, and which also tells whether the
//! string has escapes; any other cell ends at the next `,` or `]`. A chunk it does not expect
//! (whitespace, as `json_agg` wrote the chunks the migration made, or a nested value) is read by
//! serde_json into the same shape ([`parse`]). The text is valid JSON: Postgres checks a `json`
//! value when it is stored.

use std::borrow::Cow;
use std::io;

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Every cell of a chunk, in order, and where each row's cells end.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Cells<'a> {
    /// A cell's stored JSON text, and whether it is a string with escapes in it.
    pub cells: Vec<(&'a str, bool)>,
    /// The end of each row in `cells`.
    pub ends: Vec<usize>,
}

impl<'a> Cells<'a> {
    /// The chunk's cells, or `None` when it is not an array of arrays.
    pub fn of(json: &'a str) -> Option<Cells<'a>> {
        scan(json).or_else(|| parse(json))
    }

    pub fn rows(&self) -> impl Iterator<Item = &[(&'a str, bool)]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.cells[start..end])
    }
}

fn with_capacity<'a>() -> Cells<'a> {
    Cells {
        cells: Vec::with_capacity(4096),
        ends: Vec::with_capacity(256),
    }
}

/// Splits a chunk as the worker writes it; `None` for anything else.
pub(crate) fn scan(json: &str) -> Option<Cells<'_>> {
    let b = json.as_bytes();
    let mut out = with_capacity();
    let mut i = 1;
    if b.first() != Some(&b'[') {
        return None;
    }
    if b.get(i) == Some(&b']') {
        return (i + 1 == b.len()).then_some(out);
    }
    loop {
        if b.get(i) != Some(&b'[') {
            return None;
        }
        i += 1;
        if b.get(i) == Some(&b']') {
            i += 1;
        } else {
            loop {
                let start = i;
                let escapes = match *b.get(i)? {
                    b'"' => {
                        let mut escapes = false;
                        i += 1;
                        loop {
                            let at = i + memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
                            if b[at] == b'"' {
                                i = at + 1;
                                break;
                            }
                            // An escape is `\` and one ASCII character (`u` for `\uXXXX`).
                            escapes = true;
                            i = at + 2;
                        }
                        escapes
                    }
                    b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                        i += b[i..].iter().position(|&c| c == b',' || c == b']')?;
                        if b[start..i].iter().any(u8::is_ascii_whitespace) {
                            return None;
                        }
                        false
                    }
                    _ => return None,
                };
                out.cells.push((json.get(start..i)?, escapes));
                match *b.get(i)? {
                    b',' => i += 1,
                    b']' => {
                        i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        out.ends.push(out.cells.len());
        match *b.get(i)? {
            b',' => i += 1,
            b']' => {
                i += 1;
                break;
            }
            _ => return None,
        }
    }
    (i == b.len()).then_some(out)
}

/// Reads any array of arrays with serde_json; `None` when a row is not an array.
pub(crate) fn parse(json: &str) -> Option<Cells<'_>> {
    let mut out = with_capacity();
    let mut de = serde_json::Deserializer::from_str(json);
    Rows(&mut out).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(out)
}

/// One stored cell, as far as the writers need to know it.
pub(crate) enum Cell<'a> {
    /// `null`, `true` or `false`, whose text is their JSON whatever the column's type.
    Literal(&'a str),
    /// A string's value, and whether the stored text is already its JSON as serde_json writes
    /// it (it is when it has no escapes: a valid JSON string without `\` holds nothing that
    /// needs one).
    Str(Cow<'a, str>, bool),
    /// A number or a nested value: typed through a `serde_json::Value`.
    Other(&'a str),
}

impl<'a> Cell<'a> {
    pub fn of((text, escapes): (&'a str, bool)) -> io::Result<Cell<'a>> {
        Ok(match text {
            "null" | "true" | "false" => Cell::Literal(text),
            _ if text.starts_with('"') => match text.get(1..text.len() - 1) {
                Some(inner) if !escapes => Cell::Str(Cow::Borrowed(inner), true),
                _ => Cell::Str(
                    Cow::Owned(serde_json::from_str(text).map_err(io::Error::other)?),
                    false,
                ),
            },
            _ => Cell::Other(text),
        })
    }
}

/// The chunk's array of rows, into [`Cells`].
struct Rows<'c, 'a>(&'c mut Cells<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Rows<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Rows<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut rows: A) -> Result<(), A::Error> {
        while rows.next_element_seed(Row(&mut *self.0))?.is_some() {
            self.0.ends.push(self.0.cells.len());
        }
        Ok(())
    }
}

/// One row's array of cells; anything but an array is an error.
struct Row<'c, 'a>(&'c mut Cells<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Row<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Row<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a row's array of cells")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut cells: A) -> Result<(), A::Error> {
        while let Some(cell) = cells.next_element::<&'de RawValue>()? {
            let text = cell.get();
            let escapes = text.starts_with('"') && memchr::memchr(b'\\', text.as_bytes()).is_some();
            self.0.cells.push((text, escapes));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scanner_splits_chunks_as_serde_json_does() {
        let chunks = [
            "[]",
            "[[]]",
            "[[],[]]",
            r#"[["a"]]"#,
            r#"[["a,b","c]d",null],[1,-2.5e3,true,false],[]]"#,
            r#"[["say \"hi\"","\\","\u00e9\"",""],["x"]]"#,
            r#"[["東京","🦀"]]"#,
        ];
        for chunk in chunks {
            let scanned = scan(chunk).unwrap_or_else(|| panic!("scans {chunk}"));
            assert_eq!(Some(&scanned), parse(chunk).as_ref(), "{chunk}");
        }
        let escaped = scan(r#"[["a\nb","ab"]]"#).expect("scans");
        assert_eq!(escaped.cells, [(r#""a\nb""#, true), (r#""ab""#, false)]);
    }

    #[test]
    fn chunks_the_scanner_does_not_expect_are_parsed() {
        // json_agg's separators, whitespace anywhere, nested values.
        for chunk in [
            r#"[["a", 1], ["b", 2]]"#,
            " [[1]]",
            "[[1 ]]",
            "[[ 1]]",
            "[[1],\n[2]]",
            r#"[[[1,2],{"k":"v"}]]"#,
        ] {
            assert_eq!(scan(chunk), None, "{chunk}");
            let parsed = parse(chunk).unwrap_or_else(|| panic!("parses {chunk}"));
            assert!(!parsed.cells.is_empty());
            assert_eq!(Cells::of(chunk), Some(parsed));
        }
        // Not an array of arrays.
        for chunk in [r#"[["a"],"b"]"#, "[null]", "{}", "[[1]]x"] {
            assert_eq!(Cells::of(chunk), None, "{chunk}");
        }
    }

    #[test]
    fn rows_are_the_cells_between_row_ends() {
        let cells = Cells::of(r#"[["a","b"],[],["c"]]"#).expect("cells");
        let rows: Vec<Vec<&str>> = cells
            .rows()
            .map(|r| r.iter().map(|c| c.0).collect())
            .collect();
        assert_eq!(rows, [vec![r#""a""#, r#""b""#], vec![], vec![r#""c""#]]);
    }
}
