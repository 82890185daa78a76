//! OpenDocument spreadsheets through the parser API, with `content.xml` written the way
//! LibreOffice writes it: repeated rows and columns, a thousand empty columns and a million
//! empty rows padding each sheet, rows inside header and group elements, merged cells, hidden
//! sheets by table style, and whitespace between elements.

use crate::parse_support::{assert_limits_are_exact, ods, parse};
use serde_json::json;
use worker::parse::{ColumnType, FileFormat};

/// The automatic styles LibreOffice writes for a visible (`ta1`) and a hidden (`ta2`) sheet.
const TABLE_STYLES: &str = r#"<style:style style:name="ta1" style:family="table"><style:table-properties table:display="true" style:writing-mode="lr-tb"/></style:style><style:style style:name="ta2" style:family="table"><style:table-properties table:display="false" style:writing-mode="lr-tb"/></style:style>"#;

fn text(s: &str) -> String {
    format!(
        r#"<table:table-cell office:value-type="string" calcext:value-type="string"><text:p>{s}</text:p></table:table-cell>"#
    )
}

fn float(v: &str) -> String {
    format!(
        r#"<table:table-cell office:value-type="float" office:value="{v}" calcext:value-type="float"><text:p>{v}</text:p></table:table-cell>"#
    )
}

fn row(cells: &[String]) -> String {
    format!("<table:table-row>{}</table:table-row>", cells.concat())
}

/// LibreOffice pads every row to 1,024 columns and every sheet to 1,048,576 rows.
const ROW_PADDING: &str = r#"<table:table-cell table:number-columns-repeated="1016"/>"#;
const SHEET_PADDING: &str = r#"<table:table-row table:number-rows-repeated="1048560"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>"#;

fn business_ods() -> Vec<u8> {
    let header = row(&[
        text("id"),
        text("name"),
        text("amount"),
        text("ok"),
        text("day"),
        text("at"),
        text("share"),
        text("took"),
        ROW_PADDING.to_owned(),
    ]);
    let first = [
        float("1"),
        // Spaces, a tab, a line break and a second paragraph are the cell's own text.
        r#"<table:table-cell office:value-type="string"><text:p>Alice<text:s text:c="2"/>B.<text:tab/>x</text:p><text:p>line 2<text:line-break/>line 3</text:p></table:table-cell>"#.to_owned(),
        // A formula's cached result.
        r#"<table:table-cell table:formula="of:=[.A2]*2.5" office:value-type="float" office:value="2.5"><text:p>2.5</text:p></table:table-cell>"#.to_owned(),
        r#"<table:table-cell office:value-type="boolean" office:boolean-value="true"><text:p>TRUE</text:p></table:table-cell>"#.to_owned(),
        r#"<table:table-cell office:value-type="date" office:date-value="2024-01-15"><text:p>15.01.24</text:p></table:table-cell>"#.to_owned(),
        r#"<table:table-cell office:value-type="date" office:date-value="2024-01-15T10:30:00"><text:p>15.01.24 10:30</text:p></table:table-cell>"#.to_owned(),
        r#"<table:table-cell office:value-type="percentage" office:value="0.25"><text:p>25%</text:p></table:table-cell>"#.to_owned(),
        r#"<table:table-cell office:value-type="time" office:time-value="PT01H30M00S"><text:p>01:30:00</text:p></table:table-cell>"#.to_owned(),
        ROW_PADDING.to_owned(),
    ];
    // Two identical rows written once, and a value repeated over two columns.
    let repeated = format!(
        r#"<table:table-row table:number-rows-repeated="2">{}{}<table:table-cell table:number-columns-repeated="2" office:value-type="float" office:value="7"><text:p>7</text:p></table:table-cell>{}</table:table-row>"#,
        float("2"),
        text("山田 &amp; 子"),
        ROW_PADDING
    );
    // An error cell as LibreOffice stores it: an empty string value, the error as the text.
    let error = row(&[
        float("3"),
        r#"<table:table-cell table:formula="of:=1/0" office:value-type="string" office:string-value="" calcext:value-type="error"><text:p>#DIV/0!</text:p></table:table-cell>"#.to_owned(),
        ROW_PADDING.to_owned(),
    ]);
    let data = format!(
        "<table:table table:name=\"Data\" table:style-name=\"ta1\">\n  <table:table-column table:number-columns-repeated=\"1024\"/>\n  <table:table-header-rows>{header}</table:table-header-rows>\n  <table:table-row-group>\n    {}\n    {repeated}\n  </table:table-row-group>\n  {error}\n  {SHEET_PADDING}\n</table:table>",
        row(&first),
    );
    // Merged A2:A3: the value sits in the top-left cell, the one below is covered.
    let merged = format!(
        r#"<table:table table:name="Merged" table:style-name="ta1">{}<table:table-row><table:table-cell table:number-rows-spanned="2" table:number-columns-spanned="1" office:value-type="string"><text:p>north</text:p></table:table-cell>{}</table:table-row><table:table-row><table:covered-table-cell/>{}</table:table-row>{SHEET_PADDING}</table:table>"#,
        row(&[text("group"), text("v")]),
        float("1"),
        float("2"),
    );
    let hidden = format!(
        r#"<table:table table:name="Secret" table:style-name="ta2">{}{}</table:table>"#,
        row(&[text("x")]),
        row(&[float("42")]),
    );
    let empty = format!(
        r#"<table:table table:name="Empty" table:style-name="ta1">{SHEET_PADDING}</table:table>"#
    );
    // Leading empty rows: the header is the first row with a value.
    let late = format!(
        r#"<table:table table:name="Late" table:style-name="ta1"><table:table-row table:number-rows-repeated="3"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>{}{}</table:table>"#,
        row(&[text("k")]),
        row(&[float("9")]),
    );
    ods(
        TABLE_STYLES,
        &format!("{data}\n{merged}\n{hidden}\n{empty}\n{late}"),
    )
}

#[test]
fn an_ods_gives_typed_values_for_every_sheet_in_order() {
    let p = parse(&business_ods(), FileFormat::Ods);
    assert_eq!(p.code(), "ok");
    let summary = p.summary();
    let sheets: Vec<_> = summary
        .sheets
        .iter()
        .map(|s| (s.index, s.name.as_str(), s.hidden, s.rows))
        .collect();
    assert_eq!(
        sheets,
        [
            (0, "Data", false, 4),
            (1, "Merged", false, 2),
            (2, "Secret", true, 1),
            (3, "Empty", false, 0),
            (4, "Late", false, 1),
        ]
    );
    assert_eq!(summary.rows_total, 8);
    let data = &summary.sheets[0];
    assert_eq!(
        data.columns,
        ["id", "name", "amount", "ok", "day", "at", "share", "took"]
    );
    assert_eq!(data.extra_columns, 0);
    assert_eq!(
        p.rows(0),
        [
            json!([
                1,
                "Alice  B.\tx\nline 2\nline 3",
                2.5,
                true,
                "2024-01-15",
                "2024-01-15T10:30:00",
                0.25,
                "PT01H30M00S"
            ]),
            json!([2, "山田 & 子", 7, 7, null, null, null, null]),
            json!([2, "山田 & 子", 7, 7, null, null, null, null]),
            json!([3, "#DIV/0!", null, null, null, null, null, null]),
        ]
    );
    assert_eq!(
        data.column_types,
        [
            ColumnType::Integer,
            ColumnType::Text,
            ColumnType::Decimal,
            // `true` and the repeated 7.
            ColumnType::Mixed,
            ColumnType::Date,
            ColumnType::DateTime,
            ColumnType::Decimal,
            ColumnType::Text,
        ]
    );
    assert_eq!(p.rows(1), [json!(["north", 1]), json!([null, 2])]);
    assert_eq!(p.rows(2), [json!([42])]);
    assert_eq!(p.rows(3), Vec::<serde_json::Value>::new());
    assert_eq!(summary.sheets[4].columns, ["k"]);
    assert_eq!(p.rows(4), [json!([9])]);
    assert!(summary.skipped_parts.is_empty());
}

#[test]
fn ods_row_and_column_limits_apply_to_repeated_cells() {
    let sheet = format!(
        r#"<table:table table:name="S">{}<table:table-row table:number-rows-repeated="5"><table:table-cell table:number-columns-repeated="3" office:value-type="float" office:value="1"><text:p>1</text:p></table:table-cell></table:table-row></table:table>"#,
        row(&[text("a")]),
    );
    let bytes = ods("", &sheet);
    let p = parse(&bytes, FileFormat::Ods);
    assert_eq!(p.rows(0), vec![json!([1, 1, 1]); 5]);
    assert_eq!(p.summary().sheets[0].extra_columns, 2);
    assert_limits_are_exact(&bytes, FileFormat::Ods, 5, 3);
}

#[test]
fn a_password_protected_ods_fails_as_encrypted() {
    let manifest = br#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"><manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="x"/></manifest:file-entry></manifest:manifest>"#;
    let bytes = crate::parse_support::make_zip(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        ),
        ("META-INF/manifest.xml", manifest),
        ("content.xml", b"\x01\x02 encrypted bytes"),
    ]);
    let p = parse(&bytes, FileFormat::Ods);
    assert_eq!(p.code(), "encrypted_file");
}

#[test]
fn a_broken_ods_table_is_corrupt_with_the_sheet_named() {
    let bytes = ods(
        "",
        r#"<table:table table:name="Broken"><table:table-row><table:table-cell office:value-type="float" office:value="x1"><text:p>1</text:p></table:table-cell></table:table-row></table:table>"#,
    );
    let p = parse(&bytes, FileFormat::Ods);
    assert_eq!(p.code(), "corrupt_file");
    let message = &p.result.as_ref().expect_err("corrupt").message;
    assert!(message.contains("sheet 'Broken'"), "{message}");
}

/// The rows under the header `a`…`d` of a one-sheet ods whose table holds `rows` after it.
fn rows_under_header(rows: &str) -> Vec<serde_json::Value> {
    let sheet = format!(
        r#"<table:table table:name="S">{}{rows}</table:table>"#,
        row(&[text("a"), text("b"), text("c"), text("d")])
    );
    let p = parse(&ods("", &sheet), FileFormat::Ods);
    assert_eq!(p.code(), "ok", "{:?}", p.result);
    assert_eq!(p.summary().sheets[0].columns, ["a", "b", "c", "d"]);
    p.rows(0)
}

fn cell(attrs: &str, content: &str) -> String {
    format!(r#"<table:table-cell {attrs}>{content}</table:table-cell>"#)
}

#[test]
fn cells_as_libreoffice_writes_them_keep_their_values() {
    // The shapes calamine reads straight from its buffer (patch 5): a start tag, at most one
    // plain `text:p`, and the end tag; rows switching with `</table:table-row><table:table-row>`.
    let bool_false = cell(
        r#"office:value-type="boolean" office:boolean-value="false""#,
        "<text:p>FALSE</text:p>",
    );
    let rows = [
        row(&[
            float("1"),
            text("x"),
            "<table:table-cell/>".into(),
            bool_false,
        ]),
        row(&[
            cell(
                r#"office:value-type="date" office:date-value="2024-01-15""#,
                "<text:p>15.01.24</text:p>",
            ),
            cell(
                r#"office:value-type="string" office:string-value="given""#,
                "<text:p>shown</text:p>",
            ),
            cell(r#"office:value-type="string""#, ""),
            cell(
                r#"table:formula="of:=1/0" office:value-type="string" office:string-value="" calcext:value-type="error""#,
                "<text:p>#N/A</text:p>",
            ),
        ]),
        format!(
            r#"<table:table-row table:number-rows-repeated="2">{}{}</table:table-row>"#,
            cell(
                r#"table:number-columns-repeated="2" office:value-type="percentage" office:value="0.5""#,
                "<text:p>50%</text:p>",
            ),
            text("日本語"),
        ),
        row(&[
            cell(
                r#"office:value-type="currency" office:currency="EUR" office:value="1.5""#,
                "<text:p>1,50 €</text:p>",
            ),
            cell(
                r#"office:value-type="time" office:time-value="PT01H30M00S""#,
                "<text:p>01:30:00</text:p>",
            ),
            text(""),
            r#"<table:table-cell table:number-columns-repeated="1020"/>"#.into(),
        ]),
    ];
    assert_eq!(
        rows_under_header(&rows.concat()),
        [
            json!([1, "x", null, false]),
            json!(["2024-01-15", "given", null, "#N/A"]),
            json!([0.5, 0.5, "日本語", null]),
            json!([0.5, 0.5, "日本語", null]),
            json!([1.5, "PT01H30M00S", null, null]),
        ]
    );
}

#[test]
fn other_cell_markup_is_read_through_quick_xml_as_before() {
    let rows = [
        row(&[
            float("1"),
            text("a &amp; b&#x41;"),
            text("one\r\ntwo\rthree"),
            // A `>` inside an attribute value.
            cell(
                r#"table:formula="of:=[.A1]>0" office:value-type="float" office:value="2""#,
                "<text:p>2</text:p>",
            ),
        ]),
        row(&[
            float("2"),
            cell(
                r#"office:value-type='string' office:string-value='say "hi"'"#,
                "<text:p>x</text:p>",
            ),
            cell(
                r#"office:value-type="string" office:string-value="O'Brien""#,
                "<text:p>x</text:p>",
            ),
            cell(
                r#"office:value-type="string""#,
                r#"<text:p text:style-name="P1">styled <text:span>span</text:span></text:p>"#,
            ),
        ]),
        format!(
            "\n  <table:table-row>\n    {}\n    {}\n    {}\n    {}\n  </table:table-row>\n",
            float("3"),
            cell(
                r#"office:value-type="string""#,
                "<office:annotation><text:p>note</text:p></office:annotation><text:p>v</text:p>",
            ),
            cell(r#"office:value-type="string""#, "<text:p><![CDATA[c<d]]></text:p>"),
            cell(r#"office:value-type="string""#, "<text:p/>"),
        ),
        row(&[
            float("4"),
            r#"<table:covered-table-cell office:value-type="float" office:value="5"><text:p>5</text:p></table:covered-table-cell>"#.into(),
            r#"<table:table-cell office:value-type="string" ><text:p>spaced tag</text:p></table:table-cell >"#.into(),
            r#"<x:table-cell office:value-type="float" office:value="6"/>"#.into(),
        ]),
    ];
    assert_eq!(
        rows_under_header(&rows.concat()),
        [
            json!([1, "a & bA", "one\ntwo\nthree", 2]),
            json!([2, "say \"hi\"", "O'Brien", "styled span"]),
            // calamine's ods reader skips CDATA (LibreOffice never writes it).
            json!([3, "v", null, null]),
            json!([4, 5, "spaced tag", null]),
        ]
    );
}

#[test]
fn an_ods_sheet_larger_than_the_read_buffer_reads_every_cell() {
    // Cells cut by the end of the buffered bytes are read through quick-xml: every one must
    // come out, wherever the cuts fall.
    let rows: String = (1..3000u32)
        .map(|r| {
            row(&[
                float(&r.to_string()),
                text(&format!("t{}", r % 7)),
                "<table:table-cell/>".into(),
                float(&format!("{}.5", r % 3)),
            ])
        })
        .collect();
    let rows = rows_under_header(&rows);
    assert_eq!(rows.len(), 2999);
    for (i, got) in rows.iter().enumerate() {
        let r = i + 1;
        let d = (r % 3) as f64 + 0.5;
        assert_eq!(got, &json!([r, format!("t{}", r % 7), null, d]), "row {r}");
    }
}

#[test]
fn broken_cells_after_the_first_are_corrupt_with_the_sheet_named() {
    // The messages are those of the reader before patch 5, which read every cell through
    // quick-xml: a cell the scanner leaves to quick-xml fails exactly as it did.
    for (broken, expected) in [
        (
            row(&[float("1"), float("x1")]),
            "sheet 'S' near row 1: Parse float error: invalid float literal",
        ),
        (
            row(&[
                float("1"),
                cell(
                    r#"table:number-columns-repeated="-2" office:value-type="float" office:value="1""#,
                    "",
                ),
            ]),
            "sheet 'S' near row 1: Parse integer error: invalid digit found in string",
        ),
        (
            format!(
                r#"{}<table:table-row table:number-rows-repeated="many">{}</table:table-row>"#,
                row(&[float("1")]),
                float("2")
            ),
            "sheet 'S' near row 2: Parse integer error: invalid digit found in string",
        ),
        (
            row(&[float("1"), cell(r#"office:value-type="float" office:value"#, "")]),
            "sheet 'S' near row 1: Xml attribute error: position 27: attribute key must be directly followed by `=` or space",
        ),
    ] {
        let sheet = format!(
            r#"<table:table table:name="S">{}{broken}</table:table>"#,
            row(&[text("a")])
        );
        let p = parse(&ods("", &sheet), FileFormat::Ods);
        assert_eq!(p.code(), "corrupt_file", "{broken}");
        let message = &p.result.as_ref().expect_err("corrupt").message;
        assert_eq!(message, expected, "{broken}");
    }
}
