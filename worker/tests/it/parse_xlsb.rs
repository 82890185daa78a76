//! Excel binary workbooks (.xlsb), built record by record by `parse_support::xlsb`.

use crate::parse_support::parse;
use crate::parse_support::xlsb::{xlsb, xlsb_with, Cached, XlsbCell, XlsbSheet};
use serde_json::json;
use worker::parse::{ColumnType, FileFormat};

#[test]
fn an_xlsb_gives_typed_values_for_every_sheet_in_order() {
    use XlsbCell::*;
    let text = |r, c, s: &str| Text(r, c, s.to_owned());
    let bytes = xlsb(&[
        XlsbSheet {
            name: "売上".to_owned(),
            hidden: false,
            cells: vec![
                text(0, 0, "id"),
                text(0, 1, "name"),
                text(0, 2, "ok"),
                text(0, 3, "ratio"),
                Real(1, 0, 1.0),
                text(1, 1, "山田太郎"),
                Bool(1, 2, true),
                Real(1, 3, 0.25),
                Real(2, 0, 2.0),
                text(2, 1, "Bob, Jr."),
                Bool(2, 2, false),
                Error(2, 3, 0x07),
            ],
        },
        XlsbSheet {
            name: "Hidden".to_owned(),
            hidden: true,
            cells: vec![text(0, 0, "x"), Real(1, 0, 7.0)],
        },
    ]);
    let p = parse(&bytes, FileFormat::Xlsb);
    let s = p.summary();
    let sheets: Vec<(&str, bool, u64)> = s
        .sheets
        .iter()
        .map(|s| (s.name.as_str(), s.hidden, s.rows))
        .collect();
    assert_eq!(sheets, [("売上", false, 2), ("Hidden", true, 1)]);
    assert_eq!(s.sheets[0].columns, ["id", "name", "ok", "ratio"]);
    assert_eq!(
        s.sheets[0].column_types,
        [
            ColumnType::Integer,
            ColumnType::Text,
            ColumnType::Boolean,
            ColumnType::Mixed
        ]
    );
    assert_eq!(
        p.rows(0),
        [
            json!([1, "山田太郎", true, 0.25]),
            json!([2, "Bob, Jr.", false, "#DIV/0!"]),
        ]
    );
    assert_eq!(p.rows(1), [json!([7])]);
}

fn values_sheet() -> XlsbSheet {
    use XlsbCell::*;
    let header = [
        "int", "cents", "sum", "label", "check", "day", "stamp", "city",
    ];
    let mut cells: Vec<XlsbCell> = header
        .iter()
        .enumerate()
        .map(|(c, h)| Shared(0, c as u32, (*h).to_owned()))
        .collect();
    cells.extend([
        Rk(1, 0, 42),
        RkHundredths(1, 1, 1999),
        Formula(1, 2, Cached::Number(2.0)),
        Formula(1, 3, Cached::Text("合計".into())),
        Formula(1, 4, Cached::Bool(true)),
        Date(1, 5, 45322.0),
        CustomDate(1, 6, 45322.75),
        Shared(1, 7, "東京".into()),
        Rk(2, 0, -5),
        RkHundredths(2, 1, -250),
        Formula(2, 2, Cached::Number(0.5)),
        Formula(2, 3, Cached::Text("sub".into())),
        Formula(2, 4, Cached::Bool(false)),
        Date(2, 5, 45323.5),
        CustomDate(2, 6, 45323.0),
        Shared(2, 7, "東京".into()),
    ]);
    XlsbSheet {
        name: "Values".to_owned(),
        hidden: false,
        cells,
    }
}

#[test]
fn shared_strings_rk_numbers_formula_results_and_date_formats_are_read_as_values() {
    let p = parse(&xlsb(&[values_sheet()]), FileFormat::Xlsb);
    let s = &p.summary().sheets[0];
    assert_eq!(
        s.columns,
        ["int", "cents", "sum", "label", "check", "day", "stamp", "city"]
    );
    assert_eq!(
        s.column_types,
        [
            ColumnType::Integer,
            ColumnType::Decimal,
            ColumnType::Decimal,
            ColumnType::Text,
            ColumnType::Boolean,
            ColumnType::DateTime,
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
                2,
                "合計",
                true,
                "2024-01-31",
                "2024-01-31T18:00:00",
                "東京"
            ]),
            json!([
                -5,
                -2.5,
                0.5,
                "sub",
                false,
                "2024-02-01T12:00:00",
                "2024-02-01",
                "東京"
            ]),
        ]
    );
}

#[test]
fn dates_in_a_1904_xlsb_are_read_in_that_system() {
    let p = parse(&xlsb_with(&[values_sheet()], true), FileFormat::Xlsb);
    // The same serial numbers, 1,462 days later.
    assert_eq!(p.rows(0)[0][5], json!("2028-02-01"));
}
