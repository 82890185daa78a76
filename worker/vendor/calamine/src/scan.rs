// SPDX-License-Identifier: MIT
//
// Patches 4 and 5 (see PATCH.md): scanners for the markup Excel and LibreOffice write.

//! Recognises, in bytes already buffered ahead of quick-xml, the few markup shapes that make up
//! nearly all of a worksheet: for xlsx, `<c r="B2" s="1" t="s"><v>12</v></c>`, a value-less
//! `<c r="C2" s="1"/>` or `<c …></c>`, the `</row><row r="3" …>` between two rows, and
//! `sharedStrings.xml`'s `<si><t>text</t></si>`; for ods, the same shapes named
//! `table:table-cell` (its text in a `text:p`) and `table:table-row`. quick-xml spends four or
//! five events on each (a hundred-odd instructions apiece); here each is one pass over its bytes.
//!
//! A scanner only *recognises*: it returns the same attribute and text slices quick-xml's
//! events would have carried, so the caller decodes them with the same functions as before.
//! Anything else (a namespace prefix, a formula, an inline string, an entity, CDATA, a comment,
//! whitespace between tags, a tag cut by the end of the buffer) is not recognised, and the
//! caller lets quick-xml read it. Where quick-xml checks something on the way (that the text is
//! UTF-8, where a tag ends, what its name is) the scanner applies quick-xml's own rule.
//!
//! The caller may consume what a scanner recognised only while quick-xml is between markup (its
//! last event a start tag that was not self-closing, or an end tag): quick-xml's next read then
//! starts at the first unread buffered byte, and the only state it keeps is its stack of open
//! tags, which a whole element or an end-and-start pair of the same name leaves as it was.

use quick_xml::utils::is_whitespace;
use wide::u8x32;

/// An element recognised at the start of a buffer.
pub(crate) struct ScannedElement<'b> {
    /// Bytes from its `<` to the end of its end tag (or of `/>`).
    pub len: usize,
    /// The start tag's attribute text, as `BytesStart::attributes_raw` gives it.
    pub attrs: &'b str,
    /// The text of its one child (possibly empty); `None` when it has no child.
    pub text: Option<&'b str>,
}

/// Recognises an xlsx cell: `<c …/>`, `<c …></c>` or `<c …><v>text</v></c>` with text free of
/// markup and references.
pub(crate) fn cell(buf: &[u8]) -> Option<ScannedElement<'_>> {
    element(buf, "c", "v")
}

/// Recognises an ods cell: `<table:table-cell …/>`, `<table:table-cell …></table:table-cell>` or
/// one whose only content is `<text:p>text</text:p>`, with text free of markup, references and
/// carriage returns (which quick-xml's `xml10_content` would rewrite).
pub(crate) fn table_cell(buf: &[u8]) -> Option<ScannedElement<'_>> {
    let cell = element(buf, "table:table-cell", "text:p")?;
    match cell.text {
        Some(text) if text.contains('\r') => None,
        _ => Some(cell),
    }
}

/// Recognises `<name …/>`, `<name …></name>` or `<name …><child>text</child></name>`, with text
/// free of markup and references.
#[inline(always)] // with the names constant, their compares are a few instructions
fn element<'b>(buf: &'b [u8], name: &str, child: &str) -> Option<ScannedElement<'b>> {
    let tag = start_tag(buf, name.as_bytes())?;
    let (len, text) = if tag.empty {
        (tag.len, None)
    } else {
        let body = &buf[tag.len..];
        if let Some(after) = end_tag(body, name) {
            (tag.len + (body.len() - after.len()), None)
        } else {
            let child_tag = 2 + child.len(); // `<child>`
            let inner = body
                .strip_prefix(b"<")?
                .strip_prefix(child.as_bytes())?
                .strip_prefix(b">")?;
            let text_len = plain_text_len(inner)?;
            let text = tag.len + child_tag..tag.len + child_tag + text_len;
            let rest = end_tag(&buf[text.end..], child)?;
            let rest = end_tag(rest, name)?;
            (buf.len() - rest.len(), Some(text))
        }
    };
    // One check for the tag and the text, each of which quick-xml checks as it reads it.
    let element = std::str::from_utf8(&buf[..len]).ok()?;
    Some(ScannedElement {
        len,
        attrs: element.get(tag.attrs)?,
        text: match text {
            Some(text) => Some(element.get(text)?),
            None => None,
        },
    })
}

/// What follows `</name>` at the start of `buf`.
#[inline(always)] // with the names constant, their compares are a few instructions
fn end_tag<'b>(buf: &'b [u8], name: &str) -> Option<&'b [u8]> {
    buf.strip_prefix(b"</")?
        .strip_prefix(name.as_bytes())?
        .strip_prefix(b">")
}

/// Recognises `</name>` directly followed by a `<name …>` that is not self-closing (`row` in
/// xlsx, `table:table-row` in ods): the length of both and the new row's attribute text.
pub(crate) fn row_switch<'b>(buf: &'b [u8], name: &str) -> Option<(usize, &'b str)> {
    let next = end_tag(buf, name)?;
    let tag = start_tag(next, name.as_bytes())?;
    if tag.empty {
        return None;
    }
    let attrs = std::str::from_utf8(&next[tag.attrs]).ok()?;
    Some((buf.len() - next.len() + tag.len, attrs))
}

/// Recognises `<si><t>text</t></si>` with text free of markup, references and carriage returns
/// (which quick-xml's `xml10_content` would rewrite): its length and the raw text.
pub(crate) fn shared_string(buf: &[u8]) -> Option<(usize, &str)> {
    let text = buf.strip_prefix(b"<si><t>")?;
    let text_len = plain_text_len(text)?;
    if !text[text_len..].starts_with(b"</t></si>") || text[..text_len].contains(&b'\r') {
        return None;
    }
    let text = std::str::from_utf8(&text[..text_len]).ok()?;
    Some((7 + text_len + 9, text))
}

/// The length of the text before the next `<`, when no `&` comes first (quick-xml reports a
/// reference as an event of its own) and the `<` is in the buffer.
fn plain_text_len(text: &[u8]) -> Option<usize> {
    let end = memchr::memchr2(b'<', b'&', text)?;
    (text[end] == b'<').then_some(end)
}

/// Where a start tag ends, given its bytes after the name: at its first `>` outside quoted values.
fn tag_end(rest: &[u8]) -> Option<usize> {
    // Attribute values rarely hold a `>` or a single quote. Without single quotes, the first `>`
    // is outside quoted values when an even number of double quotes precede it: found 32 bytes
    // at a time, each block compared as one vector.
    let mut odd_quotes = false;
    for start in (0..rest.len()).step_by(32) {
        let block = &rest[start..];
        let v = match block.first_chunk::<32>() {
            Some(b) => u8x32::new(*b),
            None => {
                let mut b = [0; 32];
                b[..block.len()].copy_from_slice(block);
                u8x32::new(b)
            }
        };
        let mask = |b: u8| v.simd_eq(u8x32::splat(b)).to_bitmask();
        let ends = mask(b'>');
        let before = match ends {
            0 => u32::MAX,
            _ => (1u32 << ends.trailing_zeros()) - 1,
        };
        if mask(b'\'') & before != 0 {
            return tag_end_by_bytes(rest);
        }
        odd_quotes ^= (mask(b'"') & before).count_ones() % 2 == 1;
        if ends != 0 {
            return match odd_quotes {
                false => Some(start + ends.trailing_zeros() as usize),
                true => tag_end_by_bytes(rest),
            };
        }
    }
    None
}

/// `tag_end` byte by byte, as quick-xml's `ElementParser` reads a tag.
fn tag_end_by_bytes(rest: &[u8]) -> Option<usize> {
    let mut quote = 0; // the open quote, or 0 outside quoted values
    for (i, &b) in rest.iter().enumerate() {
        match (quote, b) {
            (0, b'>') => return Some(i),
            (0, b'"' | b'\'') => quote = b,
            (q, b) if q == b => quote = 0,
            _ => (),
        }
    }
    None
}

/// A start tag recognised at the start of a buffer.
struct StartTag {
    /// Bytes from `<` to `>`, both included.
    len: usize,
    /// Where its attribute text lies in the buffer.
    attrs: std::ops::Range<usize>,
    /// Whether it ends with `/>`.
    empty: bool,
}

/// Recognises a start tag named exactly `name` (no prefix), by quick-xml's rules: the tag ends
/// at the first `>` outside quoted values (its `ElementParser`), it is self-closing when `/>`
/// ends it, and its name runs to the first whitespace.
#[inline(always)] // with the names constant, their compares are a few instructions
fn start_tag(buf: &[u8], name: &[u8]) -> Option<StartTag> {
    let rest = buf.strip_prefix(b"<")?.strip_prefix(name)?;
    let end = tag_end(rest)?;
    let empty = end > 0 && rest[end - 1] == b'/';
    let attrs_len = if empty { end - 1 } else { end };
    if attrs_len > 0 && !is_whitespace(rest[0]) {
        return None;
    }
    let start = 1 + name.len();
    Some(StartTag {
        len: start + end + 1,
        attrs: start..start + attrs_len,
        empty,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where quick-xml's `ElementParser` ends a tag, written as a state machine.
    fn reference_tag_end(rest: &[u8]) -> Option<usize> {
        let mut inside: Option<u8> = None;
        for (i, &b) in rest.iter().enumerate() {
            inside = match inside {
                None if b == b'>' => return Some(i),
                None if b == b'"' || b == b'\'' => Some(b),
                Some(q) if q == b => None,
                other => other,
            };
        }
        None
    }

    #[test]
    fn tag_end_agrees_with_reading_byte_by_byte() {
        // Every string of up to 7 bytes over the bytes that matter, alone and after a prefix
        // that puts them past the first 32-byte block.
        let alphabet = [b'a', b'"', b'\'', b'>', b' '];
        let mut tested = 0;
        for len in 0..=7u32 {
            for mut n in 0..alphabet.len().pow(len) {
                let mut s = Vec::new();
                for _ in 0..len {
                    s.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                for prefix in [&b""[..], &[b'x'; 31], br#" a="1" b="2" c="3" d="4" e="5" f="6""#] {
                    let rest = [prefix, &s].concat();
                    let expected = reference_tag_end(&rest);
                    assert_eq!(tag_end(&rest), expected, "{:?}", rest);
                    tested += 1;
                }
            }
        }
        assert!(tested > 200_000);
    }

    #[test]
    fn table_cells_are_recognised_in_their_three_shapes_only() {
        let attrs = r#" office:value-type="string" a='x>y'"#;
        for (xml, text) in [
            (format!("<table:table-cell{attrs}/>"), None),
            (format!("<table:table-cell{attrs}></table:table-cell>"), None),
            (
                format!("<table:table-cell{attrs}><text:p>日本 x</text:p></table:table-cell>"),
                Some("日本 x"),
            ),
            (
                format!("<table:table-cell{attrs}><text:p></text:p></table:table-cell>"),
                Some(""),
            ),
        ] {
            let buf = format!("{xml}<table:table-cell/>");
            let cell = table_cell(buf.as_bytes()).expect(&xml);
            assert_eq!((cell.len, cell.attrs, cell.text), (xml.len(), attrs, text));
            // Cut anywhere, the cell is left to quick-xml.
            for cut in 0..xml.len() {
                assert!(table_cell(&xml.as_bytes()[..cut]).is_none(), "{xml} cut at {cut}");
            }
        }
        for xml in [
            "<table:table-cell><text:p>a&amp;b</text:p></table:table-cell>",
            "<table:table-cell><text:p>a\r\nb</text:p></table:table-cell>",
            "<table:table-cell><text:p x=\"1\">a</text:p></table:table-cell>",
            "<table:table-cell><text:p>a</text:p><text:p>b</text:p></table:table-cell>",
            "<table:table-cell><text:p>a<text:s/></text:p></table:table-cell>",
            "<table:table-cell ><text:p>a</text:p></table:table-cell >",
            "<table:table-cellx/>",
            "<table:covered-table-cell/>",
            "<x:table-cell/>",
            " <table:table-cell/>",
        ] {
            assert!(table_cell(xml.as_bytes()).is_none(), "{xml}");
        }
        assert!(table_cell(b"<table:table-cell><text:p>\xff</text:p></table:table-cell>").is_none());
    }

    #[test]
    fn row_switches_are_an_end_tag_and_an_open_start_tag() {
        let xml = r#"</table:table-row><table:table-row table:number-rows-repeated="2"><x/>"#;
        assert_eq!(
            row_switch(xml.as_bytes(), "table:table-row"),
            Some((xml.len() - 4, r#" table:number-rows-repeated="2""#))
        );
        for xml in [
            "</table:table-row><table:table-row/>",
            "</table:table-row> <table:table-row>",
            "</table:table-row><table:table-rows>",
            "</row><row>",
        ] {
            assert_eq!(row_switch(xml.as_bytes(), "table:table-row"), None, "{xml}");
        }
        assert_eq!(row_switch(b"</row><row r=\"3\">", "row"), Some((17, " r=\"3\"")));
    }
}
