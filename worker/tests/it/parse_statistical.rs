//! Header and table detection on files shaped like statistics offices' publications
//! (`tests/fixtures/statistical/`, written by its `generate.py` with what a person reads in
//! each in `manifest.json`): years as column labels under a title, sparse headers under
//! metadata lines, decimal commas and Unicode minus signs, missing-value markers, two-line
//! headers, several tables on a sheet, headerless series, notes under the table, and clean
//! tables. No file may lose a data row, every layout must add up, and the header must be
//! right in at least 95 % of them; the score is printed
//! (`cargo test -p worker --test parse_statistical -- --nocapture`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::parse_support::parse;
use serde::Deserialize;
use worker::parse::{FileFormat, SheetLayout};

#[derive(Deserialize)]
struct Expected {
    file: String,
    kind: String,
    header_row: u64,
    columns: Vec<String>,
    /// Data rows a person reads in the file.
    rows: u64,
    layout: SheetLayout,
}

fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/statistical")
}

/// Per kind: files, headers right, layouts right, files losing rows.
#[derive(Default)]
struct Score {
    files: u32,
    header: u32,
    layout: u32,
    lost: u32,
}

#[test]
fn statistical_files_keep_every_data_row_and_find_their_header() {
    let manifest = std::fs::read_to_string(folder().join("manifest.json")).expect("manifest");
    let expected: Vec<Expected> = serde_json::from_str(&manifest).expect("manifest is JSON");
    assert!(expected.len() >= 80, "{} fixtures", expected.len());
    let mut scores: BTreeMap<&str, Score> = BTreeMap::new();
    let mut misses = Vec::new();
    for e in &expected {
        let bytes = std::fs::read(folder().join(&e.file)).expect("fixture");
        // Parsing asserts that every record is accounted for (`parse_support::parse`).
        let p = parse(&bytes, FileFormat::Csv);
        let sheet = &p.summary().sheets[0];
        let score = scores.entry(&e.kind).or_default();
        score.files += 1;
        let header = sheet.header_row == e.header_row && sheet.columns == e.columns;
        score.header += u32::from(header);
        score.layout += u32::from(sheet.layout == e.layout);
        score.lost += u32::from(sheet.rows < e.rows);
        if !header || sheet.layout != e.layout || sheet.rows != e.rows {
            misses.push(format!(
                "{}: header {} {:?}, {} rows, {:?}\n  expected {} {:?}, {} rows, {:?}",
                e.file,
                sheet.header_row,
                sheet.columns,
                sheet.rows,
                sheet.layout,
                e.header_row,
                e.columns,
                e.rows,
                e.layout
            ));
        }
    }
    let total = scores.values().fold(Score::default(), |t, s| Score {
        files: t.files + s.files,
        header: t.header + s.header,
        layout: t.layout + s.layout,
        lost: t.lost + s.lost,
    });
    for (kind, s) in &scores {
        println!(
            "  {kind:<18} {:>2} files: header right {:>2}, layout right {:>2}, losing rows {}",
            s.files, s.header, s.layout, s.lost
        );
    }
    let pct = |n: u32| 100.0 * f64::from(n) / f64::from(total.files);
    println!(
        "statistical fixtures: header right {}/{} ({:.1} %), layout right {}/{} ({:.1} %), files losing data rows: {}",
        total.header,
        total.files,
        pct(total.header),
        total.layout,
        total.files,
        pct(total.layout),
        total.lost
    );
    for m in &misses {
        println!("{m}");
    }
    assert_eq!(total.lost, 0, "files losing data rows");
    assert!(
        pct(total.header) >= 95.0,
        "header right in {:.1} %",
        pct(total.header)
    );
    let clean = &scores["clean"];
    assert_eq!(
        (clean.header, clean.layout),
        (clean.files, clean.files),
        "clean files change"
    );
}

/// The same files as workbooks (numbers as number cells, the rest as text, blank lines as
/// empty rows), as a person saving the CSV from a spreadsheet gets them. Workbooks keep a header
/// row even over a table of values (see `docs/header-detection.md`), so a headerless file's
/// header is its first row; no file may lose a data row either way.
#[test]
fn statistical_files_as_workbooks_keep_every_data_row() {
    let manifest = std::fs::read_to_string(folder().join("manifest.json")).expect("manifest");
    let expected: Vec<Expected> = serde_json::from_str(&manifest).expect("manifest is JSON");
    let (mut right, mut lost) = (0, Vec::new());
    for e in &expected {
        let text = std::fs::read_to_string(folder().join(&e.file)).expect("fixture");
        let delimiter = if e.kind == "locale_numbers" {
            b';'
        } else {
            b','
        };
        let p = parse(&workbook_of(&text, delimiter), FileFormat::Xlsx);
        let sheet = &p.summary().sheets[0];
        let header_row = if e.header_row == 0 { 1 } else { e.header_row };
        right += u32::from(sheet.header_row == header_row);
        // A headerless file's first row is its header here: its other lines above the data
        // become rows, so only the rows a person reads as data are counted.
        if sheet.rows < e.rows {
            lost.push(format!("{}: {} rows of {}", e.file, sheet.rows, e.rows));
        }
    }
    println!(
        "statistical fixtures as xlsx: header right {right}/{} ({:.1} %), files losing data rows: {}",
        expected.len(),
        100.0 * f64::from(right) / expected.len() as f64,
        lost.len()
    );
    assert!(lost.is_empty(), "{}", lost.join("\n"));
    assert!(f64::from(right) >= 0.95 * expected.len() as f64);
}

/// An xlsx of a fixture's lines, split at `delimiter`: cells that read as plain numbers are
/// number cells.
fn workbook_of(text: &str, delimiter: u8) -> Vec<u8> {
    let mut wb = rust_xlsxwriter::Workbook::new();
    let ws = wb.add_worksheet();
    // One record a line in these files: each line read on its own keeps its row number.
    for (row, line) in text.lines().enumerate() {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(delimiter)
            .from_reader(line.as_bytes());
        let Some(record) = reader.records().next() else {
            continue;
        };
        let record = record.expect("a record");
        let row = u32::try_from(row).expect("row");
        for (c, cell) in record.iter().enumerate() {
            let c = u16::try_from(c).expect("column");
            match cell.parse::<f64>() {
                Ok(n) => ws.write_number(row, c, n).map(|_| ()),
                Err(_) if cell.is_empty() => Ok(()),
                Err(_) => ws.write_string(row, c, cell).map(|_| ()),
            }
            .expect("write a cell");
        }
    }
    wb.save_to_buffer().expect("xlsx")
}
