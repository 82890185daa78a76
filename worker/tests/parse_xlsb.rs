//! Excel binary workbooks (.xlsb), built record by record by `parse_support::xlsb`.

mod parse_support;

use parse_support::parse;
use parse_support::xlsb::{xlsb, XlsbCell, XlsbSheet};
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
