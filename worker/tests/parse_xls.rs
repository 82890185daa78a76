//! Legacy Excel (.xls, BIFF8) workbooks, built record by record by `parse_support::biff`.

mod parse_support;

use parse_support::biff::{xls, Cached, XlsCell, XlsSheet};
use parse_support::parse;
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
