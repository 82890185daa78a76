// SPDX-License-Identifier: MIT
//
// Patch 4 (see PATCH.md): scanners for the worksheet and shared-string markup Excel writes.

//! Recognises, in bytes already buffered ahead of quick-xml, the few markup shapes that make up
//! nearly all of a worksheet's `sheetData` and of `sharedStrings.xml`:
//! `<c r="B2" s="1" t="s"><v>12</v></c>`, a value-less `<c r="C2" s="1"/>` or `<c …></c>`, the
//! `</row><row r="3" …>` between two rows, and `<si><t>text</t></si>`. quick-xml spends four or
//! five events on each (a hundred-odd instructions apiece); here each is one pass over its bytes.
//!
//! A scanner only *recognises*: it returns the same attribute and text slices quick-xml's
//! events would have carried, so the caller decodes them with the same functions as before.
//! Anything else (a namespace prefix, a formula, an inline string, an entity, CDATA, a comment,
//! whitespace between tags, a tag cut by the end of the buffer) is not recognised, and the
//! caller lets quick-xml read it. Where quick-xml checks something on the way (that the text is
//! UTF-8, where a tag ends, what its name is) the scanner applies quick-xml's own rule.

use quick_xml::utils::is_whitespace;

/// A cell recognised at the start of a buffer.
pub(super) struct ScannedCell<'b> {
    /// Bytes from `<c` to the end of `</c>` (or of `/>`).
    pub len: usize,
    /// The tag's attribute text, as `BytesStart::attributes_raw` gives it.
    pub attrs: &'b str,
    /// The text of `<v>…</v>` (possibly empty); `None` when the cell has no `<v>`.
    pub value: Option<&'b str>,
}

/// Recognises `<c …/>`, `<c …></c>` or `<c …><v>text</v></c>` with text free of markup and
/// references.
pub(super) fn cell(buf: &[u8]) -> Option<ScannedCell<'_>> {
    let tag = start_tag(buf, b"c")?;
    let (len, value) = if tag.empty {
        (tag.len, None)
    } else {
        let body = &buf[tag.len..];
        if body.starts_with(b"</c>") {
            (tag.len + 4, None)
        } else {
            let text_len = plain_text_len(body.strip_prefix(b"<v>")?)?;
            let text = tag.len + 3..tag.len + 3 + text_len;
            if !buf[text.end..].starts_with(b"</v></c>") {
                return None;
            }
            (text.end + 8, Some(text))
        }
    };
    // One check for the tag and the text, each of which quick-xml checks as it reads it.
    let cell = std::str::from_utf8(&buf[..len]).ok()?;
    Some(ScannedCell {
        len,
        attrs: cell.get(tag.attrs)?,
        value: match value {
            Some(text) => Some(cell.get(text)?),
            None => None,
        },
    })
}

/// Recognises `</row>` directly followed by a `<row …>` that is not self-closing: the length of
/// both and the new row's attribute text.
pub(super) fn row_switch(buf: &[u8]) -> Option<(usize, &str)> {
    let next = buf.strip_prefix(b"</row>")?;
    let tag = start_tag(next, b"row")?;
    if tag.empty {
        return None;
    }
    let attrs = std::str::from_utf8(&next[tag.attrs]).ok()?;
    Some((6 + tag.len, attrs))
}

/// Recognises `<si><t>text</t></si>` with text free of markup, references and carriage returns
/// (which quick-xml's `xml10_content` would rewrite): its length and the raw text.
pub(super) fn shared_string(buf: &[u8]) -> Option<(usize, &str)> {
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
    let end = text.iter().position(|&b| b == b'<' || b == b'&')?;
    (text[end] == b'<').then_some(end)
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
fn start_tag(buf: &[u8], name: &[u8]) -> Option<StartTag> {
    let rest = buf.strip_prefix(b"<")?.strip_prefix(name)?;
    let mut quote = 0; // the open quote, or 0 outside quoted values
    let mut end = None;
    for (i, &b) in rest.iter().enumerate() {
        if quote == 0 {
            if b == b'>' {
                end = Some(i);
                break;
            }
            if b == b'"' || b == b'\'' {
                quote = b;
            }
        } else if b == quote {
            quote = 0;
        }
    }
    let end = end?;
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
