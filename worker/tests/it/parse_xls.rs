//! Legacy Excel (.xls, BIFF8) workbooks, built record by record by `parse_support::biff`.

use crate::parse_support::biff::{
    bof, compound_file, compound_file_named, record, xls, Cached, XlsCell, XlsSheet,
};
use crate::parse_support::{assert_limits_are_exact, parse};
use serde_json::json;
use worker::parse::{ColumnType, FileFormat};

fn sheet(name: &str, hidden: bool, cells: Vec<XlsCell>) -> XlsSheet {
    XlsSheet {
        name: name.to_owned(),
        hidden,
        cells,
        dimensions: None,
    }
}

fn business(date1904: bool) -> Vec<u8> {
    use XlsCell::*;
    xls(
        &[
            sheet(
                "売上",
                false,
                vec![
                    Label(0, 0, "id".into()),
                    Label(0, 1, "name".into()),
                    Label(0, 2, "day".into()),
                    Label(0, 3, "ok".into()),
                    Label(0, 4, "ratio".into()),
                    Number(1, 0, 1.0),
                    Label(1, 1, "山田太郎".into()),
                    Date(1, 2, 45322.0),
                    Bool(1, 3, true),
                    Number(1, 4, 0.25),
                    Number(2, 0, 2.0),
                    Label(2, 1, "Bob, Jr.".into()),
                    Date(2, 2, 45323.5),
                    Bool(2, 3, false),
                    Error(2, 4, 0x07),
                ],
            ),
            sheet(
                "Hidden",
                true,
                vec![Label(0, 0, "x".into()), Number(1, 0, 7.0)],
            ),
            sheet("Empty", false, vec![]),
        ],
        date1904,
    )
}

#[test]
fn an_xls_gives_typed_values_for_every_sheet_in_order() {
    let p = parse(&business(false), FileFormat::Xls);
    let s = p.summary();
    let sheets: Vec<(&str, bool, u64)> = s
        .sheets
        .iter()
        .map(|s| (s.name.as_str(), s.hidden, s.rows))
        .collect();
    assert_eq!(
        sheets,
        [("売上", false, 2), ("Hidden", true, 1), ("Empty", false, 0)]
    );
    assert_eq!(s.sheets[0].columns, ["id", "name", "day", "ok", "ratio"]);
    assert_eq!(
        s.sheets[0].column_types,
        [
            ColumnType::Integer,
            ColumnType::Text,
            ColumnType::DateTime,
            ColumnType::Boolean,
            ColumnType::Mixed
        ]
    );
    assert_eq!(
        p.rows(0),
        [
            json!([1, "山田太郎", "2024-01-31", true, 0.25]),
            json!([2, "Bob, Jr.", "2024-02-01T12:00:00", false, "#DIV/0!"]),
        ]
    );
    assert_eq!(p.rows(1), [json!([7])]);
}

#[test]
fn cells_out_of_order_come_out_in_rows_and_a_repeated_cell_keeps_its_last_value() {
    use XlsCell::*;
    let book = xls(
        &[sheet(
            "S",
            false,
            vec![
                Label(0, 1, "b".into()),
                Number(2, 1, 4.0),
                Label(0, 0, "a".into()),
                Number(1, 0, 1.0),
                Number(2, 0, 3.0),
                Number(1, 1, 2.0),
                // The same cell again: the value read last is the cell's.
                Label(1, 1, "x".into()),
            ],
        )],
        false,
    );
    let p = parse(&book, FileFormat::Xls);
    assert_eq!(p.summary().sheets[0].columns, ["a", "b"]);
    assert_eq!(p.rows(0), [json!([1, "x"]), json!([3, 4])]);
}

#[test]
fn dates_in_a_1904_xls_are_read_in_that_system() {
    let p = parse(&business(true), FileFormat::Xls);
    // The same serial numbers, 1,462 days later.
    assert_eq!(p.rows(0)[0][2], json!("2028-02-01"));
}

#[test]
fn an_xls_declaring_four_billion_rows_is_refused_before_the_reader_reserves_them() {
    let mut s = sheet("Big", false, vec![XlsCell::Label(0, 0, "a".into())]);
    s.dimensions = Some((0, u32::MAX, 0, 1));
    // In process: without the check, the reader's reservation would abort this test binary.
    let p = parse(&xls(&[s], false), FileFormat::Xls);
    assert_eq!(p.code(), "too_many_rows");
}

#[test]
fn shared_strings_rk_numbers_formula_results_and_custom_date_formats_are_read_as_values() {
    use XlsCell::*;
    let header = [
        "int", "cents", "a", "b", "sum", "label", "check", "fail", "stamp", "city",
    ];
    let mut cells: Vec<XlsCell> = header
        .iter()
        .enumerate()
        .map(|(c, h)| Shared(0, c as u16, (*h).to_owned()))
        .collect();
    cells.extend([
        Rk(1, 0, 42),
        RkHundredths(1, 1, 1999),
        MulRk(1, 2, vec![7, 8]),
        Formula(1, 4, Cached::Number(2.0)),
        Formula(1, 5, Cached::Text("合計".into())),
        Formula(1, 6, Cached::Bool(true)),
        Formula(1, 7, Cached::Error(0x2A)),
        CustomDate(1, 8, 45322.75),
        Shared(1, 9, "東京".into()),
        Rk(2, 0, -5),
        RkHundredths(2, 1, -250),
        MulRk(2, 2, vec![9, 10]),
        Formula(2, 4, Cached::Number(0.5)),
        Formula(2, 5, Cached::Text("sub".into())),
        Formula(2, 6, Cached::Bool(false)),
        Formula(2, 7, Cached::Error(0x0F)),
        CustomDate(2, 8, 45323.0),
        Shared(2, 9, "東京".into()),
    ]);
    let p = parse(
        &xls(&[sheet("Values", false, cells)], false),
        FileFormat::Xls,
    );
    let s = &p.summary().sheets[0];
    assert_eq!(s.columns, header);
    assert_eq!(
        s.column_types,
        [
            ColumnType::Integer,
            ColumnType::Decimal,
            ColumnType::Integer,
            ColumnType::Integer,
            ColumnType::Decimal,
            ColumnType::Text,
            ColumnType::Boolean,
            ColumnType::Text,
            ColumnType::DateTime,
            ColumnType::Text,
        ]
    );
    assert_eq!(
        p.rows(0),
        [
            json!([
                42,
                19.99,
                7,
                8,
                2,
                "合計",
                true,
                "#N/A",
                "2024-01-31T18:00:00",
                "東京"
            ]),
            json!([
                -5,
                -2.5,
                9,
                10,
                0.5,
                "sub",
                false,
                "#VALUE!",
                "2024-02-01",
                "東京"
            ]),
        ]
    );
}

#[test]
fn a_merged_range_in_an_xls_keeps_its_value_in_the_top_left_cell() {
    use XlsCell::*;
    let cells = vec![
        Shared(0, 0, "region".into()),
        Shared(0, 1, "q1".into()),
        Shared(0, 2, "q2".into()),
        Shared(1, 0, "North".into()),
        Rk(1, 1, 10),
        Rk(1, 2, 11),
        Rk(2, 1, 12),
        Rk(2, 2, 13),
        Shared(3, 1, "closed".into()),
        Merged(1, 2, 0, 0),
        Merged(3, 3, 1, 2),
    ];
    let p = parse(
        &xls(&[sheet("Merged", false, cells)], false),
        FileFormat::Xls,
    );
    assert_eq!(
        p.rows(0),
        [
            json!(["North", 10, 11]),
            json!([null, 12, 13]),
            json!([null, "closed", null]),
        ]
    );
}

/// A workbook stream of globals naming one sheet at `pos`, then `rest` (which holds the sheet).
fn stream_with_sheet_at(pos: u32, rest: &[u8]) -> Vec<u8> {
    let mut stream = Vec::new();
    bof(&mut stream, 0x0005);
    let mut boundsheet = pos.to_le_bytes().to_vec();
    boundsheet.extend_from_slice(&[0, 0, 1, 1, b'S', 0]);
    record(&mut stream, 0x0085, &boundsheet);
    record(&mut stream, 0x000A, &[]);
    stream.extend_from_slice(rest);
    stream
}

/// A sheet substream holding one DIMENSIONS record: first row, last row + 1, first column,
/// last column + 1.
fn sheet_declaring(r0: u32, r1: u32, c0: u16, c1: u16) -> Vec<u8> {
    let mut sheet = Vec::new();
    bof(&mut sheet, 0x0010);
    let mut dims = [r0.to_le_bytes(), r1.to_le_bytes()].concat();
    dims.extend_from_slice(&[c0.to_le_bytes(), c1.to_le_bytes(), [0, 0]].concat());
    record(&mut sheet, 0x0200, &dims);
    record(&mut sheet, 0x000A, &[]);
    sheet
}

fn code_of(stream: &[u8]) -> &'static str {
    parse(&compound_file(stream), FileFormat::Xls).code()
}

#[test]
fn dimensions_are_checked_where_the_reader_finds_the_sheet_not_only_in_record_order() {
    // The sheet sits inside the body of an unknown record, where a walk of the stream's records
    // never looks, but the BOUNDSHEET8 position sends the reader straight to it.
    let globals_len = stream_with_sheet_at(0, &[]).len() as u32;
    let hidden = sheet_declaring(0, u32::MAX, 0, 1);
    let mut wrapper = Vec::new();
    record(&mut wrapper, 0x1234, &hidden);
    assert_eq!(
        code_of(&stream_with_sheet_at(globals_len + 4, &wrapper)),
        "too_many_rows"
    );
}

#[test]
fn dimensions_are_sized_as_the_reader_sizes_them() {
    let at = stream_with_sheet_at(0, &[]).len() as u32;
    // A last row before the first: the reader's subtraction wraps to four billion rows.
    assert_eq!(
        code_of(&stream_with_sheet_at(at, &sheet_declaring(10, 5, 0, 1))),
        "too_many_rows"
    );
    // A first column past BIFF8's 256: the reader counts columns from 0 instead.
    assert_eq!(
        code_of(&stream_with_sheet_at(
            at,
            &sheet_declaring(0, 1, 0xFFFF, 0xFFFF)
        )),
        "too_many_columns"
    );
    // An honest declaration passes.
    assert_eq!(
        code_of(&stream_with_sheet_at(at, &sheet_declaring(0, 0, 0, 0))),
        "ok"
    );
}

#[test]
fn a_sheet_said_to_start_past_the_end_of_the_workbook_is_corrupt() {
    assert_eq!(code_of(&stream_with_sheet_at(100_000, &[])), "corrupt_file");
}

#[test]
fn an_excel_4_workbook_inside_a_compound_file_is_an_unsupported_format() {
    let mut stream = Vec::new();
    record(&mut stream, 0x0409, &[0, 0, 0x10, 0, 0, 0]);
    record(&mut stream, 0x000A, &[]);
    assert_eq!(code_of(&stream), "unsupported_format");
}

#[test]
fn an_xls_with_cells_far_apart_streams_without_laying_out_the_grid() {
    use XlsCell::*;
    // A1 and IV65536, BIFF8's last cell: a dense grid of 65,536 × 256 cells (half a gigabyte)
    // if the reader laid one out; two cells as it reads them. The declaration says 1 × 1.
    let far = |col| {
        let mut s = sheet(
            "Far",
            false,
            vec![Label(0, 0, "a".into()), Number(65_535, col, 7.0)],
        );
        s.dimensions = Some((0, 1, 0, 1));
        xls(&[s], false)
    };
    let p = parse(&far(255), FileFormat::Xls);
    let summary = &p.summary().sheets[0];
    assert_eq!(
        (summary.rows, summary.columns.len(), summary.extra_columns),
        (1, 256, 255)
    );
    let row = &p.rows(0)[0];
    assert_eq!(row.as_array().map(Vec::len), Some(256));
    assert_eq!((&row[0], &row[255]), (&json!(null), &json!(7)));
    // A cell's column is 16 bits in the record, past BIFF8's 256: held to the column limit.
    assert_eq!(
        parse(&far(65_534), FileFormat::Xls).code(),
        "too_many_columns"
    );
}

#[test]
fn the_xls_pre_check_applies_the_configured_limits() {
    use XlsCell::*;
    let cells = || {
        vec![
            Label(0, 0, "a".into()),
            Label(0, 1, "b".into()),
            Rk(1, 0, 1),
            Rk(2, 0, 2),
        ]
    };
    let book = xls(&[sheet("S", false, cells())], false);
    assert_limits_are_exact(&book, FileFormat::Xls, 2, 2);
}

#[test]
fn an_excel_95_workbook_is_read_with_its_code_page() {
    // BIFF5: a `Book` stream, byte strings in the workbook's code page (here Windows-1252),
    // 10-byte DIMENSIONS.
    let bof5 = |out: &mut Vec<u8>, dt: u16| {
        let d = [0x0500u16.to_le_bytes(), dt.to_le_bytes(), [0; 2], [0; 2]].concat();
        record(out, 0x0809, &d);
    };
    let label = |row: u16, col: u16, text: &[u8]| {
        let mut d = [row.to_le_bytes(), col.to_le_bytes(), [0, 0]].concat();
        d.extend_from_slice(&(text.len() as u16).to_le_bytes());
        d.extend_from_slice(text);
        d
    };
    let mut globals = Vec::new();
    bof5(&mut globals, 0x0005);
    record(&mut globals, 0x0042, &1252u16.to_le_bytes());
    let mut sheet = Vec::new();
    bof5(&mut sheet, 0x0010);
    record(&mut sheet, 0x0200, &[0, 0, 2, 0, 0, 0, 1, 0, 0, 0]);
    record(&mut sheet, 0x0204, &label(0, 0, b"Gr\xF6\xDFe"));
    let mut number = [1u16.to_le_bytes(), [0, 0], [0, 0]].concat();
    number.extend_from_slice(&1.5f64.to_le_bytes());
    record(&mut sheet, 0x0203, &number);
    record(&mut sheet, 0x000A, &[]);
    // BOUNDSHEET: position, visibility, type, then the name as a byte string.
    let boundsheet = |pos: u32| {
        let mut d = pos.to_le_bytes().to_vec();
        d.extend_from_slice(&[0, 0, 4]);
        d.extend_from_slice(b"Caf\xE9");
        d
    };
    let globals_len = globals.len() + 4 + boundsheet(0).len() + 4;
    record(&mut globals, 0x0085, &boundsheet(globals_len as u32));
    record(&mut globals, 0x000A, &[]);
    globals.extend_from_slice(&sheet);
    let p = parse(&compound_file_named("/Book", &globals), FileFormat::Xls);
    let s = p.summary();
    assert_eq!(s.sheets[0].name, "Café");
    assert_eq!(s.sheets[0].columns, ["Größe"]);
    assert_eq!(p.rows(0), [json!([1.5])]);
}
