//! Text written to CSV so that a spreadsheet opening the file shows it and never runs it (CSV
//! injection, as OWASP describes it). A text cell or header name that begins with `=`, `+`, `-`,
//! `@`, a tab or a carriage return would be read as a formula (`=HYPERLINK(…)`, `@SUM(A1)`), so
//! it is written with a `'` in front, and quoted. A plain number such as `-12.5`, `+3` or `-1e5`
//! cannot run and is written as it is. A text that already begins with `'` gets one more, so the
//! rule is undone without guessing: a reader removes one `'` from every cell that begins with
//! one. Typed values (JSON numbers, booleans, dates) are not text and never come here. Every CSV
//! the api writes puts its text through [`write_text`], which asks [`needs_prefix`], the rule.

/// What the caller knows of a text's bytes, which spares the fast path a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// Any bytes.
    Anything,
    /// No `"`, CR or LF (a JSON string stored without escapes), so only a `,` calls for quotes.
    NoQuotesOrLineBreaks,
}

/// Whether a spreadsheet could run `text` as a formula, or it begins with the `'` this rule
/// adds: then it is written with a `'` in front, quoted.
pub fn needs_prefix(text: &[u8]) -> bool {
    match text.first() {
        Some(b'=' | b'@' | b'\t' | b'\r' | b'\'') => true,
        Some(b'+' | b'-') => !is_plain_number(text),
        _ => false,
    }
}

/// Writes `text` as one CSV field: with a `'` in front and quoted when [`needs_prefix`] says
/// so, otherwise as RFC 4180 asks (quoted when it holds a `,`, `"`, CR or LF), quotes doubled.
pub fn write_text(out: &mut Vec<u8>, text: &[u8], holds: Holds) {
    if needs_prefix(text) {
        out.extend_from_slice(b"\"'");
        write_doubling_quotes(out, text);
        out.push(b'"');
        return;
    }
    let quote = match holds {
        Holds::NoQuotesOrLineBreaks => memchr::memchr(b',', text).is_some(),
        Holds::Anything => text
            .iter()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n')),
    };
    if quote {
        out.push(b'"');
        write_doubling_quotes(out, text);
        out.push(b'"');
    } else {
        out.extend_from_slice(text);
    }
}

fn write_doubling_quotes(out: &mut Vec<u8>, text: &[u8]) {
    for (i, piece) in text.split(|&b| b == b'"').enumerate() {
        if i > 0 {
            out.extend_from_slice(b"\"\"");
        }
        out.extend_from_slice(piece);
    }
}

/// A sign, digits with at most one `.` (at least one digit), and an optional exponent:
/// `+3`, `-12.5`, `-.5`, `-1e5`, `+2.5E-3`.
fn is_plain_number(text: &[u8]) -> bool {
    let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = match text {
        [b'+' | b'-', rest @ ..] => rest,
        _ => text,
    };
    let whole = digits(rest);
    let mut rest = &rest[whole..];
    let mut fraction = 0;
    if let [b'.', after @ ..] = rest {
        fraction = digits(after);
        rest = &after[fraction..];
    }
    if whole + fraction == 0 {
        return false;
    }
    match rest {
        [] => true,
        [b'e' | b'E', exponent @ ..] => {
            let exponent = match exponent {
                [b'+' | b'-', e @ ..] => e,
                e => e,
            };
            !exponent.is_empty() && digits(exponent) == exponent.len()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: &str) -> String {
        let mut out = Vec::new();
        write_text(&mut out, text.as_bytes(), Holds::Anything);
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn each_leading_character_of_a_formula_is_prefixed_and_quoted() {
        for (text, written) in [
            (
                "=HYPERLINK(\"http://x\",\"click\")",
                "\"'=HYPERLINK(\"\"http://x\"\",\"\"click\"\")\"",
            ),
            ("@SUM(A1)", "\"'@SUM(A1)\""),
            ("+cmd|' /C calc'!A0", "\"'+cmd|' /C calc'!A0\""),
            ("-2+3", "\"'-2+3\""),
            ("\t=1", "\"'\t=1\""),
            ("\r=1", "\"'\r=1\""),
            ("=1,2", "\"'=1,2\""),
            ("-", "\"'-\""),
            ("+", "\"'+\""),
        ] {
            assert_eq!(field(text), written, "{text:?}");
        }
    }

    #[test]
    fn plain_numbers_stay_numbers() {
        for text in [
            "-12.5", "+3", "-1e5", "-1E+5", "+2.5e-3", "-.5", "-5.", "-0", "12", "1e999",
        ] {
            assert_eq!(field(text), text, "{text:?}");
        }
        for not_a_number in [
            "-1e",
            "-e5",
            "-.",
            "-1.2.3",
            "-1e5x",
            "- 5",
            "-0x1F",
            "-Infinity",
        ] {
            assert!(needs_prefix(not_a_number.as_bytes()), "{not_a_number:?}");
        }
    }

    #[test]
    fn a_leading_quote_mark_is_doubled_so_the_rule_reverses() {
        assert_eq!(field("'=1"), "\"''=1\"");
        assert_eq!(field("'hello"), "\"''hello\"");
        // A reader removes one `'` from every cell that begins with one: the original text.
        for text in [
            "'=1",
            "=1",
            "'",
            "''",
            "-12.5",
            "-x",
            "it's",
            "@",
            "a,b",
            "say \"hi\"",
        ] {
            let line = format!("{}\n", field(text));
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(line.as_bytes());
            let record = reader
                .records()
                .next()
                .expect("a record")
                .expect("valid CSV");
            let cell = &record[0];
            assert_eq!(cell.strip_prefix('\'').unwrap_or(cell), text);
        }
    }

    #[test]
    fn other_text_is_quoted_only_when_csv_needs_it() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("it's"), "it's");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("a = b"), "a = b");
        assert_eq!(field(""), "");
        let mut out = Vec::new();
        write_text(&mut out, b"a,b", Holds::NoQuotesOrLineBreaks);
        assert_eq!(out, b"\"a,b\"");
    }
}
