//! CSV/TSV parsing through the parser API: encodings, delimiters, quoting, ragged rows, header
//! naming and type inference, with fixtures generated here.

use crate::parse_support::{parse, parse_with};
use serde_json::json;
use worker::parse::{ColumnType, FileFormat, ParseLimits};

#[test]
fn a_shift_jis_csv_from_japanese_excel_is_decoded() {
    let text = "氏名,住所,年齢\r\n山田太郎,東京都千代田区,42\r\n鈴木花子,大阪府大阪市北区,37\r\n";
    let (bytes, _, unmappable) = encoding_rs::SHIFT_JIS.encode(text);
    assert!(!unmappable);
    let p = parse(&bytes, FileFormat::Csv);
    assert_eq!(p.code(), "ok");
    let sheet = &p.summary().sheets[0];
    assert_eq!(sheet.columns, ["氏名", "住所", "年齢"]);
    assert_eq!(
        p.rows(0),
        [
            json!(["山田太郎", "東京都千代田区", "42"]),
            json!(["鈴木花子", "大阪府大阪市北区", "37"])
        ]
    );
    assert_eq!(
        sheet.column_types,
        [ColumnType::Text, ColumnType::Text, ColumnType::Integer]
    );
}

#[test]
fn a_semicolon_csv_with_decimal_commas_is_split_on_semicolons() {
    let bytes = "Name;Preis;Menge\nKäse;\"1,50\";3\nBrot;2,25;1\n".as_bytes();
    let p = parse(bytes, FileFormat::Csv);
    assert_eq!(p.summary().sheets[0].columns, ["Name", "Preis", "Menge"]);
    assert_eq!(
        p.rows(0),
        [json!(["Käse", "1,50", "3"]), json!(["Brot", "2,25", "1"])]
    );
}

#[test]
fn a_utf16_tsv_with_bom_is_decoded() {
    let text = "id\tname\tactive\n1\tÅsa\ttrue\n2\t李\tFALSE\n";
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let p = parse(&bytes, FileFormat::Tsv);
    let sheet = &p.summary().sheets[0];
    assert_eq!(sheet.columns, ["id", "name", "active"]);
    assert_eq!(
        p.rows(0),
        [json!(["1", "Åsa", "true"]), json!(["2", "李", "FALSE"])]
    );
    assert_eq!(
        sheet.column_types,
        [ColumnType::Integer, ColumnType::Text, ColumnType::Boolean]
    );
}

#[test]
fn a_utf16_big_endian_csv_is_decoded() {
    let mut bytes = vec![0xFE, 0xFF];
    bytes.extend("a,b\nx,y\n".encode_utf16().flat_map(u16::to_be_bytes));
    let p = parse(&bytes, FileFormat::Csv);
    assert_eq!(p.rows(0), [json!(["x", "y"])]);
}

#[test]
fn a_utf8_bom_is_not_part_of_the_first_header() {
    let p = parse("\u{FEFF}id,name\n1,a\n".as_bytes(), FileFormat::Csv);
    assert_eq!(p.summary().sheets[0].columns, ["id", "name"]);
}

#[test]
fn windows_1252_is_the_single_byte_fallback() {
    let p = parse(
        b"name,city\nJos\xE9,Z\xFCrich\nFran\xE7ois,\x80uro\n",
        FileFormat::Csv,
    );
    assert_eq!(
        p.rows(0),
        [json!(["José", "Zürich"]), json!(["François", "€uro"])]
    );
}

#[test]
fn quoted_fields_keep_delimiters_quotes_and_newlines() {
    let bytes = b"id,note,n\r\n1,\"line one\r\nline two\",x\r\n2,\"say \"\"hi\"\", ok\",y\r\n";
    let p = parse(bytes, FileFormat::Csv);
    assert_eq!(
        p.rows(0),
        [
            json!(["1", "line one\r\nline two", "x"]),
            json!(["2", "say \"hi\", ok", "y"])
        ]
    );
}

#[test]
fn cr_only_line_ends_are_records() {
    let p = parse(b"a,b\r1,2\r3,4\r", FileFormat::Csv);
    assert_eq!(p.rows(0), [json!(["1", "2"]), json!(["3", "4"])]);
}

#[test]
fn ragged_rows_are_padded_or_get_generated_columns() {
    let bytes = b"a,b,c\n1\n1,2,3,4,5\n\n,,\n7,8,9\n";
    let p = parse(bytes, FileFormat::Csv);
    assert_eq!(
        p.rows(0),
        [
            json!(["1", null, null]),
            json!(["1", "2", "3", "4", "5"]),
            json!(["7", "8", "9"]),
        ]
    );
    let sheet = &p.summary().sheets[0];
    assert_eq!(sheet.columns, ["a", "b", "c", "column_4", "column_5"]);
    assert_eq!(sheet.extra_columns, 2);
    assert_eq!(sheet.rows, 3);
}

#[test]
fn the_header_is_the_first_non_empty_row_with_names_filled_in() {
    let p = parse(b"\n,,\nid,,id,\n1,2,3,4\n", FileFormat::Csv);
    assert_eq!(
        p.summary().sheets[0].columns,
        ["id", "column_2", "id_2", "column_4"]
    );
    assert_eq!(p.rows(0), [json!(["1", "2", "3", "4"])]);
}

#[test]
fn columns_are_typed_only_when_every_value_fits() {
    let bytes = b"id,code,price,ok,day,at,phone,zip,mixed\n\
        1,00123,1.50,true,2024-01-31,2024-01-31 09:30,090-1234-5678,01234,1\n\
        2,00456,2,FALSE,2024/02/29,2024-02-29T10:00:00Z,03-1234-5678,98765,x\n\
        3,,,,,,,,\n";
    let p = parse(bytes, FileFormat::Csv);
    assert_eq!(
        p.summary().sheets[0].column_types,
        [
            ColumnType::Integer,
            ColumnType::Text,
            ColumnType::Decimal,
            ColumnType::Boolean,
            ColumnType::Date,
            ColumnType::DateTime,
            ColumnType::Text,
            ColumnType::Text,
            ColumnType::Text,
        ]
    );
    assert_eq!(
        p.rows(0)[2],
        json!(["3", null, null, null, null, null, null, null, null])
    );
}

#[test]
fn the_pipe_delimiter_is_detected() {
    let p = parse(b"a|b\n1|2\n", FileFormat::Csv);
    assert_eq!(p.rows(0), [json!(["1", "2"])]);
}

#[test]
fn invalid_utf8_bytes_become_replacement_characters() {
    let mut bytes = b"name,x\n".to_vec();
    bytes.extend_from_slice(b"ok,1\n");
    bytes.extend("é,2\n".repeat(60_000).into_bytes()); // valid UTF-8 fills the sample
    bytes.extend_from_slice(b"bad\xFF\xFE,3\n");
    let p = parse(&bytes, FileFormat::Csv);
    assert_eq!(p.code(), "ok");
    let rows = p.rows(0);
    assert_eq!(rows.last(), Some(&json!(["bad\u{FFFD}\u{FFFD}", "3"])));
}

#[test]
fn an_empty_file_and_a_blank_file_fail_as_empty() {
    assert_eq!(parse(b"", FileFormat::Csv).code(), "empty_file");
    assert_eq!(parse(b"\n\r\n,,\n", FileFormat::Csv).code(), "empty_file");
}

#[test]
fn a_header_only_file_has_zero_rows() {
    let p = parse(b"a,b\n", FileFormat::Csv);
    assert_eq!(p.summary().rows_total, 0);
    assert_eq!(
        p.summary().sheets[0].column_types,
        [ColumnType::Text, ColumnType::Text]
    );
}

#[test]
fn a_csv_named_xlsx_is_parsed_as_csv() {
    let p = parse(b"a,b\n1,2\n", FileFormat::Xlsx);
    assert_eq!(p.rows(0), [json!(["1", "2"])]);
}

#[test]
fn row_column_and_cell_limits_are_enforced() {
    let limits = ParseLimits {
        max_rows: 2,
        max_columns: 3,
        max_cell_bytes: 5,
        ..ParseLimits::default()
    };
    assert_eq!(
        parse_with(b"a\n1\n2\n", FileFormat::Csv, &limits).code(),
        "ok"
    );
    assert_eq!(
        parse_with(b"a\n1\n2\n3\n", FileFormat::Csv, &limits).code(),
        "too_many_rows"
    );
    assert_eq!(
        parse_with(b"a,b,c,d\n", FileFormat::Csv, &limits).code(),
        "too_many_columns"
    );
    assert_eq!(
        parse_with(b"a\n1,2,3,4\n", FileFormat::Csv, &limits).code(),
        "too_many_columns"
    );
    assert_eq!(
        parse_with(b"a\n123456\n", FileFormat::Csv, &limits).code(),
        "cell_too_large"
    );
}

#[test]
fn an_unclosed_quote_cannot_swallow_unbounded_memory() {
    let limits = ParseLimits {
        max_cell_bytes: 1000,
        ..ParseLimits::default()
    };
    let mut bytes = b"a,b\n1,\"".to_vec();
    bytes.extend(std::iter::repeat_n(b'x', 20 * 1024 * 1024));
    assert_eq!(
        parse_with(&bytes, FileFormat::Csv, &limits).code(),
        "cell_too_large"
    );
}

#[test]
fn rows_are_numbered_in_order_across_batches() {
    // About 230 KB of rows: several of the 64 KiB batches rows are handed on in.
    let mut csv = String::from("id,text\n");
    for i in 0..5000 {
        csv.push_str(&format!("{i},row number {i} with some padding text\n"));
    }
    let p = parse(csv.as_bytes(), FileFormat::Csv);
    assert_eq!(p.code(), "ok");
    let indexes: Vec<u64> = p
        .events
        .iter()
        .filter_map(|e| match e {
            worker::parse::ParseEvent::Row { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, (0..5000).collect::<Vec<u64>>());
    assert_eq!(
        p.rows(0)[4999],
        json!(["4999", "row number 4999 with some padding text"])
    );
}
