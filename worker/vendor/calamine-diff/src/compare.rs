//! One workbook through both crates, view by view, and the part of two dumps that differs.

use std::fmt::Write;

use crate::dump::Dump;
use crate::views::{Format, View};

/// A view in which the fork and the release read a workbook differently.
#[derive(Debug)]
pub struct Difference {
    pub view: View,
    pub fork: Dump,
    pub stock: Dump,
}

impl Difference {
    /// The differing lines of the two dumps, `context` lines either side, fork's marked `-`
    /// and the release's `+`; at most `limit` lines from each.
    pub fn excerpt(&self, context: usize, limit: usize) -> String {
        let (a, b) = (&self.fork.lines, &self.stock.lines);
        let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let suffix = a[prefix..]
            .iter()
            .rev()
            .zip(b[prefix..].iter().rev())
            .take_while(|(x, y)| x == y)
            .count();
        let from = prefix.saturating_sub(context);
        let mut out = String::new();
        for line in &a[from..prefix] {
            let _ = writeln!(out, "   {line}");
        }
        for (mark, lines) in [("-", a), ("+", b)] {
            let changed = &lines[prefix..lines.len() - suffix];
            for line in changed.iter().take(limit) {
                let _ = writeln!(out, " {mark} {line}");
            }
            if changed.len() > limit {
                let _ = writeln!(out, " {mark} ... {} more", changed.len() - limit);
            }
        }
        for line in a[a.len() - suffix..].iter().take(context) {
            let _ = writeln!(out, "   {line}");
        }
        out
    }
}

/// A workbook read through both crates.
#[derive(Debug)]
pub struct Reading {
    /// Every view in which the fork's reading differs from the release's.
    pub differences: Vec<Difference>,
    /// The error (or panic) the fork's cells view fails with, if it does: such a workbook still
    /// counts, since its error must be the release's too.
    pub failure: Option<String>,
}

pub fn workbook(format: Format, book: &[u8]) -> Reading {
    let mut reading = Reading {
        differences: Vec::new(),
        failure: None,
    };
    for view in View::ALL {
        let (fork, stock) = view.dumps(format, book);
        if view == View::Cells {
            reading.failure = fork.failure().map(str::to_owned);
        }
        if fork != stock {
            reading.differences.push(Difference { view, fork, stock });
        }
    }
    reading
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use super::*;

    /// An ods of one sheet, `S`, whose `<table:table>` body is `rows`.
    fn ods(rows: &str) -> Vec<u8> {
        let content = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3"><office:body><office:spreadsheet><table:table table:name="S">{rows}</table:table></office:spreadsheet></office:body></office:document-content>"#
        );
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default();
        for (name, data) in [
            ("mimetype", "application/vnd.oasis.opendocument.spreadsheet"),
            ("META-INF/manifest.xml", MANIFEST),
            ("content.xml", content.as_str()),
        ] {
            zip.start_file(name, options).expect("start an entry");
            zip.write_all(data.as_bytes()).expect("write an entry");
        }
        zip.finish().expect("finish the zip").into_inner()
    }

    const MANIFEST: &str = r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/></manifest:manifest>"#;

    const ROW: &str = r#"<table:table-row><table:table-cell office:value-type="string"><text:p>a</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="2"><text:p>2</text:p></table:table-cell></table:table-row>"#;

    #[test]
    fn an_ods_both_crates_read_alike_shows_no_difference() {
        let book = ods(ROW);
        let reading = workbook(Format::Ods, &book);
        assert!(reading.differences.is_empty(), "{:?}", reading.differences);
        assert_eq!(reading.failure, None);
        let (fork, _) = View::Cells.dumps(Format::Ods, &book);
        assert_eq!(
            fork.lines,
            [
                r#"sheet "S" WorkSheet Visible"#,
                r#"  0,0 String("a")"#,
                "  0,1 Float(2.0)"
            ]
        );
    }

    #[test]
    fn whitespace_between_ods_cells_differs_in_the_cells_view_alone() {
        let book = ods(&ROW.replace("</table:table-cell><", "</table:table-cell>\n  <"));
        let reading = workbook(Format::Ods, &book);
        let views: Vec<View> = reading.differences.iter().map(|d| d.view).collect();
        assert_eq!(views, [View::Cells]);
        let cells = &reading.differences[0];
        assert_eq!(cells.fork.lines.len(), 3, "{:?}", cells.fork);
        let stock = cells
            .stock
            .failure()
            .expect("the release fails on whitespace");
        assert!(stock.contains("Expecting 'table-cell'"), "{stock}");
    }

    #[test]
    fn an_excerpt_shows_the_lines_that_differ_between_their_context() {
        let dump = |lines: &[&str]| Dump {
            lines: lines.iter().map(|l| l.to_string()).collect(),
        };
        let difference = Difference {
            view: View::Range,
            fork: dump(&["a", "b", "c", "d", "e"]),
            stock: dump(&["a", "b", "x", "y", "d", "e"]),
        };
        assert_eq!(difference.excerpt(1, 10), "   b\n - c\n + x\n + y\n   d\n");
        assert_eq!(difference.excerpt(0, 1), " - c\n + x\n + ... 1 more\n");
    }

    #[test]
    fn a_panicking_view_is_its_panic_message() {
        let dump = Dump::catching(|| panic!("index out of bounds"));
        assert_eq!(dump.failure(), Some("panic: index out of bounds"));
    }
}
