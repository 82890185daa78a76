//! A person's layout (`PUT /api/v1/tasks/{id}/layout`) in every reader: the same little table,
//! a title over it and a source line and a late row under a blank row, written as CSV, TSV,
//! xlsx, xlsb, xls and ods, parsed with a forced header row and table end, and with no header
//! and no end. Each comes out with the same layout, rows and invariant.

use serde_json::{json, Value};
use worker::parse::{
    parse_with_layout, FileFormat, LayoutOverride, ParseEvent, ParseLimits, ParseSummary,
};

use crate::parse_support::biff::{xls, XlsCell, XlsSheet};
use crate::parse_support::xlsb::{xlsb, XlsbCell, XlsbSheet};
use crate::parse_support::{assert_every_record_is_accounted_for, ods, temp_file, Parsed};

/// The table's cells by 0-based row: text, or a number.
enum Cell {
    Text(&'static str),
    Number(f64),
}

fn grid() -> Vec<Vec<Cell>> {
    use Cell::{Number, Text};
    vec![
        vec![Text("Regional figures")],
        vec![Text("region"), Text("count")],
        vec![Text("North"), Number(10.0)],
        vec![Text("South"), Number(20.0)],
        vec![],
        vec![Text("Source: office")],
        vec![Text("East"), Number(30.0)],
    ]
}

fn text_file(separator: &str) -> Vec<u8> {
    let lines: Vec<String> = grid()
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| match c {
                    Cell::Text(t) => (*t).to_owned(),
                    Cell::Number(n) => n.to_string(),
                })
                .collect::<Vec<_>>()
                .join(separator)
        })
        .collect();
    format!("{}\n", lines.join("\n")).into_bytes()
}

fn xlsx_file() -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    for (r, row) in grid().iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (r, c) = (r as u32, c as u16);
            match cell {
                Cell::Text(t) => sheet.write_string(r, c, *t).map(drop),
                Cell::Number(n) => sheet.write_number(r, c, *n).map(drop),
            }
            .expect("write");
        }
    }
    book.save_to_buffer().expect("xlsx")
}

fn xlsb_file() -> Vec<u8> {
    let mut cells = Vec::new();
    for (r, row) in grid().iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (r, c) = (r as u32, c as u32);
            cells.push(match cell {
                Cell::Text(t) => XlsbCell::Text(r, c, (*t).to_owned()),
                Cell::Number(n) => XlsbCell::Real(r, c, *n),
            });
        }
    }
    xlsb(&[XlsbSheet {
        name: "Sheet1".into(),
        hidden: false,
        cells,
    }])
}

fn xls_file() -> Vec<u8> {
    let mut cells = Vec::new();
    for (r, row) in grid().iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (r, c) = (r as u16, c as u16);
            cells.push(match cell {
                Cell::Text(t) => XlsCell::Label(r, c, (*t).to_owned()),
                Cell::Number(n) => XlsCell::Number(r, c, *n),
            });
        }
    }
    let sheet = XlsSheet {
        name: "Sheet1".into(),
        hidden: false,
        cells,
        dimensions: None,
    };
    xls(&[sheet], false)
}

fn ods_file() -> Vec<u8> {
    let rows: String = grid()
        .iter()
        .map(|row| {
            let cells: String = row
                .iter()
                .map(|c| match c {
                    Cell::Text(t) => format!(
                        r#"<table:table-cell office:value-type="string"><text:p>{t}</text:p></table:table-cell>"#
                    ),
                    Cell::Number(n) => format!(
                        r#"<table:table-cell office:value-type="float" office:value="{n}"><text:p>{n}</text:p></table:table-cell>"#
                    ),
                })
                .collect();
            let cells = if cells.is_empty() {
                "<table:table-cell/>".to_owned()
            } else {
                cells
            };
            format!("<table:table-row>{cells}</table:table-row>")
        })
        .collect();
    ods(
        "",
        &format!(r#"<table:table table:name="Sheet1">{rows}</table:table>"#),
    )
}

/// Every format of the same table.
fn files() -> Vec<(FileFormat, Vec<u8>)> {
    vec![
        (FileFormat::Csv, text_file(",")),
        (FileFormat::Tsv, text_file("\t")),
        (FileFormat::Xlsx, xlsx_file()),
        (FileFormat::Xlsb, xlsb_file()),
        (FileFormat::Xls, xls_file()),
        (FileFormat::Ods, ods_file()),
    ]
}

fn parse_forced(bytes: &[u8], format: FileFormat, layout: &Value) -> Parsed {
    let layout: LayoutOverride = serde_json::from_value(layout.clone()).expect("override");
    let (_dir, path) = temp_file(bytes, &format!("upload.{}", format.as_str()));
    let mut events = Vec::new();
    let limits = ParseLimits::default();
    let result = parse_with_layout(&path, format, &limits, None, &layout, &mut |e| {
        events.push(e.into_owned());
        Ok(())
    });
    let parsed = Parsed { events, result };
    let summary: &ParseSummary = parsed.summary();
    assert_every_record_is_accounted_for(&parsed, summary);
    assert!(parsed
        .events
        .iter()
        .all(|e| !matches!(e, ParseEvent::NeedsReview(_))));
    parsed
}

/// The first cell of each stored row, as text.
fn labels(parsed: &Parsed) -> Vec<String> {
    parsed
        .rows(0)
        .iter()
        .map(|r| r[0].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_forced_header_and_end_are_honoured_by_every_reader() {
    let forced = json!({"sheets": [{"sheet": 0, "header_row": 2, "last_row": 4}]});
    for (format, bytes) in files() {
        let p = parse_forced(&bytes, format, &forced);
        let sheet = &p.summary().sheets[0];
        assert_eq!(
            serde_json::to_value(&sheet.layout).expect("json"),
            json!({
                "records": 7,
                "header_rows": [2],
                "data": {"first_row": 3, "last_row": 4, "blank_rows": 0},
                "set_aside": [
                    {"from_row": 1, "to_row": 1, "kind": "above", "rows": 1},
                    {"from_row": 5, "to_row": 7, "kind": "notes", "rows": 3},
                ],
            }),
            "{format:?}"
        );
        assert_eq!(sheet.columns, ["region", "count"], "{format:?}");
        assert_eq!(labels(&p), ["North", "South"], "{format:?}");
    }
}

#[test]
fn no_header_and_no_end_make_every_row_data_in_every_reader() {
    let forced = json!({"sheets": [{"sheet": 0, "header_row": null, "last_row": null}]});
    for (format, bytes) in files() {
        let p = parse_forced(&bytes, format, &forced);
        let sheet = &p.summary().sheets[0];
        assert_eq!(sheet.header_row, 0, "{format:?}");
        assert_eq!(
            serde_json::to_value(&sheet.layout).expect("json"),
            json!({
                "records": 7,
                "header_rows": [],
                "data": {"first_row": 1, "last_row": 7, "blank_rows": 1},
                "set_aside": [],
            }),
            "{format:?}"
        );
        assert_eq!(
            labels(&p),
            [
                "Regional figures",
                "region",
                "North",
                "South",
                "Source: office",
                "East"
            ],
            "{format:?}"
        );
    }
}

#[test]
fn an_override_of_another_sheet_leaves_this_one_as_detected() {
    let other = json!({"sheets": [{"sheet": 3, "header_row": 5}]});
    for (format, bytes) in files() {
        let forced = parse_forced(&bytes, format, &other);
        let detected = crate::parse_support::parse(&bytes, format);
        assert_eq!(
            forced.summary().sheets,
            detected.summary().sheets,
            "{format:?}"
        );
    }
}
