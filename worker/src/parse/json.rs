//! Hand-rolled JSON writing for row values. Rows are the hot path (millions per second), so a
//! row's JSON array text is appended to one reused buffer without building `serde_json::Value`s.

use std::fmt::Write;

/// Bytes that need escaping inside a JSON string.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Whether any byte of `bytes` needs escaping in a JSON string: a control character, `\`,
/// and `"` unless `QUOTES` is false (a CSV line whose quotes only enclose fields). The CSV
/// parser asks this of every record, so that a clean record's cells can be copied without
/// looking at them again. Written as an OR over fixed 32-byte blocks, which the compiler turns
/// into vector compares; the tail is one more block that overlaps the last.
#[inline]
pub(crate) fn needs_escape<const QUOTES: bool>(bytes: &[u8]) -> bool {
    #[inline(always)]
    fn special<const QUOTES: bool>(b: u8) -> bool {
        (b < 0x20) | (QUOTES & (b == b'"')) | (b == b'\\')
    }
    #[inline(always)]
    fn block<const QUOTES: bool>(block: &[u8; 32]) -> bool {
        block
            .iter()
            .fold(false, |acc, &b| acc | special::<QUOTES>(b))
    }
    let mut blocks = bytes.chunks_exact(32);
    for b in &mut blocks {
        if b.try_into().is_ok_and(block::<QUOTES>) {
            return true;
        }
    }
    let tail = blocks.remainder();
    if tail.is_empty() {
        return false;
    }
    match bytes.len().checked_sub(32) {
        Some(start) => bytes[start..].try_into().is_ok_and(block::<QUOTES>),
        None => tail.iter().any(|&b| special::<QUOTES>(b)),
    }
}

/// Appends `s` as a JSON string literal whose content is known to need no escaping.
#[inline]
pub(crate) fn push_clean_str(out: &mut String, s: &str) {
    out.push('"');
    out.push_str(s);
    out.push('"');
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_str(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    // Most cells need no escaping: find the first byte that does and copy the clean prefix in
    // one go.
    let Some(first) = bytes.iter().position(|&b| NEEDS_ESCAPE[b as usize]) else {
        push_clean_str(out, s);
        return;
    };
    out.push('"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate().skip(first) {
        if !NEEDS_ESCAPE[b as usize] {
            continue;
        }
        out.push_str(&s[start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            // Other control characters: \u00XX. `write!` to a String cannot fail.
            _ => {
                let _ = write!(out, "\\u{:04x}", b);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Appends a float as a JSON number; integral values within f64's exact range are written
/// without a fraction (`42`, not `42.0`), non-finite ones (which JSON cannot hold) as null.
pub(crate) fn push_f64(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str("null");
    } else if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        out.push_str(itoa::Buffer::new().format(f as i64));
    } else {
        // Shortest text that reads back as the same f64 (`ryu`, as serde_json writes floats).
        out.push_str(ryu::Buffer::new().format_finite(f));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_detection_finds_every_byte_that_needs_it_at_every_position() {
        assert!(!needs_escape::<true>(b""));
        assert!(!needs_escape::<true>(
            "plain text, 東京都 and more than eight bytes ~~~".as_bytes()
        ));
        // Lengths around the 32-byte blocks and the overlapping tail.
        for len in 1..80 {
            for pos in 0..len {
                for bad in [0u8, b'\n', 0x1f, b'"', b'\\'] {
                    let mut bytes = vec![b'a'; len];
                    bytes[pos] = bad;
                    assert!(needs_escape::<true>(&bytes), "{bad:#x} at {pos} of {len}");
                    assert_eq!(needs_escape::<false>(&bytes), bad != b'"');
                }
                let mut ok = vec![b'a'; len];
                ok[pos] = 0x20;
                assert!(!needs_escape::<true>(&ok));
                ok[pos] = 0xff;
                assert!(!needs_escape::<true>(&ok));
            }
        }
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let mut out = String::new();
        push_str(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(out, r#""a\"b\\c\nd\u0001é""#);
        let parsed: Result<String, _> = serde_json::from_str(&out);
        assert_eq!(parsed.ok().as_deref(), Some("a\"b\\c\nd\u{1}é"));
    }

    #[test]
    fn floats_are_written_as_json_numbers() {
        let mut out = String::new();
        push_f64(&mut out, 42.0);
        out.push(',');
        push_f64(&mut out, 2.5);
        out.push(',');
        push_f64(&mut out, f64::NAN);
        assert_eq!(out, "42,2.5,null");
    }
}
