//! Hand-rolled JSON writing for row values. Rows are the hot path (millions per second), so a
//! row's JSON array text is appended to one reused buffer without building `serde_json::Value`s.

use std::ops::Range;

use wide::u8x32;

/// Whether `b` needs escaping inside a JSON string: a control character, `"` or `\\`.
#[inline(always)]
fn escaped(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// Whether any byte of `bytes` needs escaping in a JSON string: a control character, `\`,
/// and `"` unless `QUOTES` is false (a CSV record whose quotes only enclose fields). The CSV
/// parser asks this of every record, so that a clean record's cells can be copied without
/// looking at them again, and [`push_str`] of every Excel string. It compares 32 bytes at a
/// time as vectors; the tail is one more block that overlaps the last, or a short input padded
/// with a byte that needs nothing.
///
/// Measured (docs/benchmarks-history.md, "What changed in the CSV parser"): callgrind,
/// instructions for the whole in-process parse of a 191,636-row cut of the bench's CSV, 857.6M
/// with the 8-byte SWAR check this replaced, 796.5M with these 32-byte blocks (−7 %); the same
/// counts every run, unlike the wall clock. The parse scenario that carries it:
/// `cargo run -p bench --release -- parse`.
#[inline]
pub(crate) fn needs_escape<const QUOTES: bool>(bytes: &[u8]) -> bool {
    #[inline(always)]
    fn block<const QUOTES: bool>(block: [u8; 32]) -> bool {
        let v = u8x32::new(block);
        // `b <= 0x1f`, as unsigned bytes.
        let mut hit = v.min(u8x32::splat(0x1f)).simd_eq(v) | v.simd_eq(u8x32::splat(b'\\'));
        if QUOTES {
            hit |= v.simd_eq(u8x32::splat(b'"'));
        }
        hit.any()
    }
    let (blocks, tail) = bytes.as_chunks::<32>();
    if blocks.iter().any(|&b| block::<QUOTES>(b)) {
        return true;
    }
    if tail.is_empty() {
        return false;
    }
    match bytes.last_chunk::<32>() {
        Some(&last) => block::<QUOTES>(last),
        None => {
            let mut padded = [b'a'; 32];
            padded[..tail.len()].copy_from_slice(tail);
            block::<QUOTES>(padded)
        }
    }
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_str(out: &mut String, s: &str) {
    out.push('"');
    // Most strings need no escaping, which one vector check tells.
    if needs_escape::<true>(s.as_bytes()) {
        escape_runs(s.as_bytes(), |piece| match piece {
            // Runs end and start at escaped bytes, which are ASCII: char boundaries.
            Piece::Run(run) => out.push_str(&s[run]),
            Piece::Escape(e) => out.push_str(e.as_str()),
        });
    } else {
        out.push_str(s);
    }
    out.push('"');
}

/// Appends `bytes` JSON-escaped (without quotes) to a row being built as bytes. Bytes that are
/// not UTF-8 are copied as they are, for the UTF-8 check of the row's batch to replace.
pub(crate) fn push_escaped_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    escape_runs(bytes, |piece| match piece {
        Piece::Run(run) => out.extend_from_slice(&bytes[run]),
        Piece::Escape(e) => out.extend_from_slice(e.as_bytes()),
    });
}

enum Piece {
    Run(Range<usize>),
    Escape(Escape),
}

/// The escape sequence of one byte: at most `\u00XX`.
struct Escape {
    text: [u8; 6],
    len: usize,
}

impl Escape {
    fn of(b: u8) -> Self {
        let short = match b {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'\n' => Some(b'n'),
            b'\r' => Some(b'r'),
            b'\t' => Some(b't'),
            _ => None,
        };
        match short {
            Some(c) => Escape {
                text: [b'\\', c, 0, 0, 0, 0],
                len: 2,
            },
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                Escape {
                    text: [
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ],
                    len: 6,
                }
            }
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.text[..self.len]
    }

    fn as_str(&self) -> &str {
        // Always ASCII.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

/// Splits `bytes` into runs that need no escaping and the escapes of the bytes between them.
fn escape_runs(bytes: &[u8], mut emit: impl FnMut(Piece)) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if escaped(b) {
            if start < i {
                emit(Piece::Run(start..i));
            }
            emit(Piece::Escape(Escape::of(b)));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        emit(Piece::Run(start..bytes.len()));
    }
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
        // Every byte value, in a full block, the overlapping tail and a short padded input.
        for b in 0..=255u8 {
            for (len, pos) in [(32, 7), (40, 35), (5, 2)] {
                let mut bytes = vec![b'a'; len];
                bytes[pos] = b;
                assert_eq!(needs_escape::<true>(&bytes), escaped(b), "{b:#x}");
                assert_eq!(needs_escape::<false>(&bytes), escaped(b) && b != b'"');
            }
        }
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
