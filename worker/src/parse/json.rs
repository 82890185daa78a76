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

/// Appends `s` as a JSON string literal.
pub(crate) fn push_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    // Most cells need no escaping: find the first byte that does with a table lookup and
    // copy the clean prefix in one go.
    let Some(first) = bytes.iter().position(|&b| NEEDS_ESCAPE[b as usize]) else {
        out.push_str(s);
        out.push('"');
        return;
    };
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
        let _ = write!(out, "{}", f as i64);
    } else {
        let _ = write!(out, "{f}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
