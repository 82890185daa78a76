//! The differences a patch makes on purpose (`tests/calamine/expected-differences.txt`): one
//! per line, `<workbook pattern> <view> <patch> <reason>`, the pattern a path under the corpus
//! folder in which `*` stands for any run of characters; `#` starts a comment.

use std::fmt;

use crate::views::View;

/// One listed difference.
#[derive(Debug)]
pub struct Expected {
    /// The line of the list it comes from, for messages.
    pub line: usize,
    pub pattern: String,
    pub view: View,
    pub patch: String,
    pub reason: String,
}

impl Expected {
    pub fn covers(&self, workbook: &str, view: View) -> bool {
        self.view == view && wildcard_match(&self.pattern, workbook)
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {} {} (patch {}: {})",
            self.line, self.pattern, self.view, self.patch, self.reason
        )
    }
}

/// Reads the list; a line that does not name a workbook, a view, a patch and a reason is an
/// error, so that no entry is silently ignored.
pub fn parse(text: &str) -> Result<Vec<Expected>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.splitn(4, char::is_whitespace);
        let (Some(pattern), Some(view), Some(patch), Some(reason)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(format!(
                "line {}: want <workbook pattern> <view> <patch> <reason>: {line}",
                i + 1
            ));
        };
        let view = View::parse(view).ok_or_else(|| {
            format!(
                "line {}: unknown view {view:?} (cells, range or formulas)",
                i + 1
            )
        })?;
        if !(patch.len() == 4 && patch.bytes().all(|b| b.is_ascii_digit())) {
            return Err(format!(
                "line {}: the patch is its four-digit number, not {patch:?}",
                i + 1
            ));
        }
        out.push(Expected {
            line: i + 1,
            pattern: pattern.to_owned(),
            view,
            patch: patch.to_owned(),
            reason: reason.trim().to_owned(),
        });
    }
    Ok(out)
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters (`/` included).
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_matches_any_run_of_characters_and_nothing_else_is_loose() {
        assert!(wildcard_match("a/b.ods", "a/b.ods"));
        assert!(!wildcard_match("a/b.ods", "a/b.odsx"));
        assert!(wildcard_match(
            "pkg-*/tests/*.ods",
            "pkg-1.0/tests/fixtures/x.ods"
        ));
        assert!(!wildcard_match("pkg-*/tests/*.ods", "pkg-1.0/docs/x.ods"));
        assert!(wildcard_match("*", "anything/at/all"));
        assert!(wildcard_match("a*a", "aa"));
        assert!(!wildcard_match("ab*ba", "aba"));
    }

    #[test]
    fn an_entry_needs_a_known_view_a_patch_number_and_a_reason() {
        let list =
            parse("# note\n\nx/*.ods cells 0002 whitespace between cells\n").expect("a valid list");
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].line, 3);
        assert!(list[0].covers("x/y.ods", View::Cells));
        assert!(!list[0].covers("x/y.ods", View::Range));
        assert_eq!(list[0].reason, "whitespace between cells");

        assert!(parse("x.ods cells 0002").is_err());
        assert!(parse("x.ods rows 0002 why").is_err());
        assert!(parse("x.ods cells 2 why").is_err());
    }
}
