//! Patch 1: the xlsx and xlsb shared-string tables live in one buffer. Every string of a table
//! with empty, long and non-ASCII entries comes back whole, at its index (an empty one as an
//! empty string, not an empty cell).

use std::io::Cursor;

use calamine::{Data, Reader, Xlsb, Xlsx};

use crate::support::xlsb::{xlsb, XlsbCell, XlsbSheet};
use crate::support::{drain, range_cells, xlsx};

/// The `i`th string: empty every 10th, long every 97th, otherwise short and mixed scripts.
fn text(i: usize) -> String {
    match i {
        _ if i % 10 == 0 => String::new(),
        _ if i % 97 == 0 => format!("{i}").repeat(5_000),
        _ => format!("{i}: née 東京 ✓"),
    }
}

const STRINGS: usize = 2_000;

fn expected() -> Vec<((u32, u32), Data)> {
    (0..STRINGS)
        .map(|i| ((i as u32, 0), Data::String(text(i))))
        .collect()
}

fn escaped(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;")
}

#[test]
fn every_xlsx_shared_string_comes_back_at_its_index() {
    let sst: String = (0..STRINGS)
        .map(|i| format!("<si><t>{}</t></si>", escaped(&text(i))))
        .collect();
    let rows: String = (0..STRINGS)
        .map(|i| {
            format!(
                r#"<row r="{0}"><c r="A{0}" t="s"><v>{1}</v></c></row>"#,
                i + 1,
                i
            )
        })
        .collect();
    let bytes = xlsx(&rows, Some(&sst));
    let mut wb = Xlsx::new(Cursor::new(bytes.clone())).expect("open");
    let mut cells = wb.worksheet_cells_reader("Sheet1").expect("cells reader");
    assert_eq!(drain(|| cells.next_cell()), expected());
    let mut wb = Xlsx::new(Cursor::new(bytes)).expect("open");
    assert_eq!(
        range_cells(&wb.worksheet_range("Sheet1").expect("range")),
        expected()
    );
}

#[test]
fn every_xlsb_shared_string_comes_back_at_its_index() {
    let sheet = XlsbSheet {
        name: "Sheet1".to_owned(),
        hidden: false,
        cells: (0..STRINGS)
            .map(|i| XlsbCell::Shared(i as u32, 0, text(i)))
            .collect(),
    };
    let bytes = xlsb(&[sheet]);
    let mut wb = Xlsb::new(Cursor::new(bytes.clone())).expect("open");
    let mut cells = wb.worksheet_cells_reader("Sheet1").expect("cells reader");
    assert_eq!(drain(|| cells.next_cell()), expected());
    let mut wb = Xlsb::new(Cursor::new(bytes)).expect("open");
    assert_eq!(
        range_cells(&wb.worksheet_range("Sheet1").expect("range")),
        expected()
    );
}
