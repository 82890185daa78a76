//! Patches 2 and 5: `OdsStream` reads content.xml once, a row at a time, scanning the usual
//! cell shapes straight from quick-xml's buffer. It must give the cells, names and visibility
//! that stock `Ods` gives for the same file, and the same cells when whitespace between the
//! elements sends everything through quick-xml (stock `Ods` fails such rows).

use std::io::Cursor;

use calamine::{Data, OdsError, OdsStream, Reader, SheetVisible, MAX_REPEATED_CELLS};

use crate::support::{drain, ods, range_cells, Positioned};

const STYLES: &str = r#"<style:style style:name="ta1" style:family="table"><style:table-properties table:display="true"/></style:style><style:style style:name="ta2" style:family="table"><style:table-properties table:display="false"/></style:style>"#;

fn cell(value_type: &str, attrs: &str, text: &str) -> String {
    format!(
        r#"<table:table-cell office:value-type="{value_type}" calcext:value-type="{value_type}" {attrs}><text:p>{text}</text:p></table:table-cell>"#
    )
}

/// A row of every value type and the shapes the scanner leaves to quick-xml.
fn mixed_row() -> Vec<String> {
    vec![
        cell("string", "", "name"),
        cell("float", r#"office:value="1.5""#, "1.5"),
        cell("percentage", r#"office:value="0.25""#, "25%"),
        cell("currency", r#"office:currency="EUR" office:value="9.99""#, "9,99 €"),
        cell("boolean", r#"office:boolean-value="true""#, "TRUE"),
        cell("date", r#"office:date-value="2024-02-29""#, "29/02/24"),
        r#"<table:table-cell office:value-type="date" office:date-value="2024-02-29T13:45:00"/>"#
            .to_owned(),
        cell("time", r#"office:time-value="PT13H45M00S""#, "13:45"),
        cell("float", r#"table:number-columns-repeated="3" office:value="7""#, "7"),
        "<table:table-cell/>".to_owned(),
        r#"<table:table-cell table:number-columns-repeated="2"/>"#.to_owned(),
        r#"<table:table-cell office:value-type="string"><text:p>two</text:p><text:p>paragraphs</text:p></table:table-cell>"#.to_owned(),
        "<table:covered-table-cell/>".to_owned(),
        r#"<table:table-cell office:value-type="string"><text:p>a &amp; <text:span>b</text:span></text:p></table:table-cell>"#.to_owned(),
        r#"<table:table-cell office:value-type="string"><office:annotation><text:p>note</text:p></office:annotation><text:p>annotated</text:p></table:table-cell>"#.to_owned(),
        cell("string", "", "Größe 🦀 &lt;tag&gt;"),
    ]
}

/// Two sheets, the second hidden; `sep` goes between every two cells, rows and tables.
fn tables(sep: &str) -> String {
    let row = |cells: Vec<String>, attrs: &str| {
        format!(
            "<table:table-row{attrs}>{sep}{}{sep}</table:table-row>",
            cells.join(sep)
        )
    };
    let mut rows = vec![row(mixed_row(), "")];
    rows.push(row(
        vec![cell("float", r#"office:value="2""#, "2")],
        r#" table:number-rows-repeated="3""#,
    ));
    rows.push(row(
        vec![r#"<table:table-cell table:number-columns-repeated="1024"/>"#.to_owned()],
        r#" table:number-rows-repeated="100""#,
    ));
    // Enough rows to cross quick-xml's read buffer many times.
    for r in 0..2_000 {
        rows.push(row(
            vec![
                cell("float", &format!(r#"office:value="{r}""#), &r.to_string()),
                cell("string", "", &format!("row {r}")),
                "<table:table-cell/>".to_owned(),
                cell("boolean", r#"office:boolean-value="false""#, "FALSE"),
            ],
            "",
        ));
    }
    let hidden = row(vec![cell("string", "", "hidden")], "");
    format!(
        r#"<table:table table:name="Data" table:style-name="ta1">{sep}{}{sep}</table:table>{sep}<table:table table:name="Hidden" table:style-name="ta2">{sep}{hidden}{sep}</table:table>"#,
        rows.join(sep)
    )
}

/// Every sheet's name, visibility and cells, through the stream.
fn streamed(bytes: Vec<u8>) -> Vec<(String, SheetVisible, Vec<Positioned>)> {
    let mut stream = OdsStream::new(Cursor::new(bytes)).expect("open the ods");
    let mut sheets = stream.sheets().expect("content.xml");
    let mut out = Vec::new();
    while let Some(sheet) = sheets.next_sheet().expect("next sheet") {
        out.push((sheet.name, sheet.visible, drain(|| sheets.next_cell())));
    }
    out
}

#[test]
fn the_stream_reads_what_stock_ods_reads() {
    let bytes = ods(STYLES, &tables(""));
    let mut stock = calamine::Ods::new(Cursor::new(bytes.clone())).expect("stock ods");
    let expected: Vec<(String, SheetVisible, Vec<Positioned>)> = stock
        .sheets_metadata()
        .to_vec()
        .into_iter()
        .map(|s| {
            let cells = range_cells(&stock.worksheet_range(&s.name).expect("range"));
            (s.name, s.visible, cells)
        })
        .collect();
    let got = streamed(bytes);
    assert_eq!(got, expected);
    assert_eq!(got[0].2.len(), 15 + 3 + 2_000 * 3);
    assert_eq!(got[1].1, SheetVisible::Hidden);
    assert_eq!(got[0].2[1], ((0, 1), Data::Float(1.5)));
}

#[test]
fn whitespace_between_elements_streams_the_same_cells() {
    assert_eq!(
        streamed(ods(STYLES, &tables("\n  "))),
        streamed(ods(STYLES, &tables("")))
    );
}

#[test]
fn repeated_copies_past_the_cap_fail_before_they_are_made() {
    let rows = MAX_REPEATED_CELLS / 2 + 1;
    let table = format!(
        r#"<table:table table:name="Bomb"><table:table-row table:number-rows-repeated="{rows}">{}</table:table-row></table:table>"#,
        cell(
            "float",
            r#"table:number-columns-repeated="2" office:value="1""#,
            "1"
        )
    );
    let mut stream = OdsStream::new(Cursor::new(ods("", &table))).expect("open the ods");
    let mut sheets = stream.sheets().expect("content.xml");
    sheets.next_sheet().expect("the sheet").expect("one sheet");
    assert!(matches!(
        sheets.next_cell(),
        Err(OdsError::CellLimitExceeded { .. })
    ));
}
