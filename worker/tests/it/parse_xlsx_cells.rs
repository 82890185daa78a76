//! The xlsx cells reader and shared-string table on hand-written XML: the shapes Excel writes
//! (which calamine reads straight from its buffer, patch 4) and every other shape the XML
//! allows (which go through quick-xml), with exact values, and broken markup failing as corrupt.

use crate::parse_support::{parse, patch_zip};
use rust_xlsxwriter::{Format, Workbook};
use serde_json::{json, Value};
use worker::parse::FileFormat;

/// A workbook whose shared strings are `s0`…`s4` (indices 0–4) and whose styles 1 and 2 are a
/// date and a datetime format, with `sheet_data` as the worksheet's `<sheetData>` content.
fn workbook(sheet_data: &str) -> Vec<u8> {
    let mut wb = Workbook::new();
    let ws = wb.add_worksheet();
    for i in 0..5u16 {
        ws.write_string(0, i, format!("s{i}")).expect("write");
    }
    ws.write_number_with_format(1, 0, 1.0, &Format::new().set_num_format("yyyy-mm-dd"))
        .expect("write");
    ws.write_number_with_format(1, 1, 1.0, &Format::new().set_num_format("yyyy-mm-dd hh:mm"))
        .expect("write");
    let bytes = wb.save_to_buffer().expect("xlsx");
    patch_zip(&bytes, "xl/worksheets/sheet1.xml", |xml| {
        let start = xml.find("<sheetData>").expect("sheetData") + "<sheetData>".len();
        let end = xml.find("</sheetData>").expect("sheetData end");
        format!("{}{sheet_data}{}", &xml[..start], &xml[end..])
    })
}

/// The header row every sheet below starts with: `s0`…`s3`.
const HEADER: &str = r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c><c r="D1" t="s"><v>3</v></c></row>"#;

fn rows(rows: &str) -> Vec<Value> {
    let p = parse(&workbook(&format!("{HEADER}{rows}")), FileFormat::Xlsx);
    assert_eq!(p.code(), "ok", "{:?}", p.result);
    assert_eq!(p.summary().sheets[0].columns, ["s0", "s1", "s2", "s3"]);
    p.rows(0)
}

fn failure(sheet_data: &str) -> (&'static str, String) {
    let p = parse(&workbook(sheet_data), FileFormat::Xlsx);
    let code = p.code();
    (code, p.result.err().map(|f| f.message).unwrap_or_default())
}

#[test]
fn cells_as_excel_writes_them_keep_their_types() {
    assert_eq!(
        rows(concat!(
            r#"<row r="2" spans="1:4" x14ac:dyDescent="0.25"><c r="A2" t="s"><v>4</v></c>"#,
            r#"<c r="B2" s="1"><v>45306</v></c><c r="C2" s="2"><v>45306.5</v></c>"#,
            r#"<c r="D2" t="b"><v>1</v></c></row>"#,
            r#"<row r="3" spans="1:4"><c r="A3"><v>-2.5</v></c><c r="B3" s="1"/>"#,
            r#"<c r="C3" t="n"><v>7</v></c><c r="D3" t="e"><v>#N/A</v></c></row>"#,
            r#"<row r="4"><c r="A4" s="2" /><c r="B4"></c><c r="C4" t="s"><v></v></c>"#,
            r#"<c r="D4"><v>1E3</v></c></row>"#,
        )),
        [
            json!(["s4", "2024-01-15", "2024-01-15T12:00:00", true]),
            json!([-2.5, null, 7, "#N/A"]),
            json!([null, null, null, 1000]),
        ]
    );
}

#[test]
fn cells_without_a_reference_follow_the_previous_one() {
    assert_eq!(
        rows(concat!(
            r#"<row><c t="s"><v>1</v></c><c><v>2</v></c></row>"#,
            r#"<row><c r="B3"><v>3</v></c><c><v>4</v></c></row>"#,
            r#"<row r="5"><c t="b"><v>0</v></c></row><row><c/><c><v>5</v></c></row>"#,
        )),
        [
            json!(["s1", 2, null, null]),
            json!([null, 3, 4, null]),
            json!([false, null, null, null]),
            json!([null, 5, null, null]),
        ]
    );
}

#[test]
fn entities_inline_strings_and_rich_text_are_decoded() {
    assert_eq!(
        rows(concat!(
            r#"<row r="2"><c r="A2" t="str"><v>a&amp;b&#x41;&#66;</v></c>"#,
            r#"<c r="B2" t="inlineStr"><is><t>x &lt; y</t></is></c>"#,
            r#"<c r="C2" t="inlineStr"><is><r><t>ab</t></r><r><rPr><b/></rPr>"#,
            r#"<t xml:space="preserve"> cd </t></r></is></c>"#,
            r#"<c r="D2" t="inlineStr"><is><t>  trimmed  </t></is></c></row>"#,
            r#"<row r="3"><c r="A3" t="inlineStr"><is><t xml:space="preserve">  kept </t></is></c>"#,
            r#"<c r="B3" t="inlineStr"><is><t>a</t><rPh><t>phonetic</t></rPh></is></c>"#,
            r#"<c r="C3" t="str"><v>tab&#9;here</v></c><c r="D3"><v>1&#48;</v></c></row>"#,
        )),
        [
            json!(["a&bAB", "x < y", "ab cd ", "trimmed"]),
            json!(["  kept ", "a", "tab\there", 1]),
        ]
    );
}

#[test]
fn formulas_give_their_cached_results() {
    assert_eq!(
        rows(concat!(
            r#"<row r="2"><c r="A2"><f>B2*2</f><v>4</v></c>"#,
            r#"<c r="B2"><f t="shared" ref="B2:B3" si="0">A2+1</f><v>5</v></c>"#,
            r#"<c r="C2" t="str"><f>"x"&amp;"y"</f><v>xy</v></c>"#,
            r#"<c r="D2" t="e"><f>1/0</f><v>#DIV/0!</v></c></row>"#,
            r#"<row r="3"><c r="B3"><f t="shared" si="0"/><v>6</v></c>"#,
            r#"<c r="C3" t="b"><f>TRUE()</f><v>1</v></c>"#,
            r#"<c r="D3" t="d"><v>2024-01-02T03:04:05</v></c></row>"#,
        )),
        [
            json!([4, 5, "xy", "#DIV/0!"]),
            json!([null, 6, true, "2024-01-02T03:04:05"]),
        ]
    );
}

#[test]
fn namespace_prefixes_whitespace_cdata_and_comments_are_read_as_before() {
    assert_eq!(
        rows(concat!(
            "\n  <row r=\"2\">\n    <c r=\"A2\" t=\"s\">\n      <v>4</v>\n    </c>\n",
            "    <c\tr=\"B2\"\nt=\"s\"\r\n><v>3</v></c ><c r=\"C2\"><v>1</v> </c></row >\n",
            r#"<x:row r="3"><x:c r="A3" t="s"><x:v>2</x:v></x:c><c r='B3' t='n'><v>8</v></c>"#,
            r#"<!-- a comment --><c r="C3" t="s"><v><![CDATA[1]]></v></c>"#,
            r#"<c r="D3" t="inlineStr"><is><t><![CDATA[a<b&c]]></t></is></c></x:row>"#,
            r#"<row r="4"/><row r="5"></row><?pi?><row r="6"><c r="A6" foo="a>b"><v>9</v></c></row>"#,
        )),
        [
            json!(["s4", "s3", 1, null]),
            json!(["s2", 8, null, "a<b&c"]),
            json!([9, null, null, null]),
        ]
    );
}

#[test]
fn a_sheet_larger_than_the_read_buffer_reads_every_cell() {
    // Cells cut by the end of the buffered bytes are read through quick-xml: every one must
    // come out, wherever the cuts fall.
    let mut data = String::new();
    for r in 2..3000u32 {
        data.push_str(&format!(
            r#"<row r="{r}" spans="1:4"><c r="A{r}"><v>{r}</v></c><c r="B{r}" t="s"><v>{}</v></c><c r="C{r}" s="1"/><c r="D{r}" t="b"><v>{}</v></c></row>"#,
            r % 5,
            r % 2
        ));
    }
    let rows = rows(&data);
    assert_eq!(rows.len(), 2998);
    for (i, row) in rows.iter().enumerate() {
        let r = i + 2;
        assert_eq!(
            row,
            &json!([r, format!("s{}", r % 5), null, r % 2 == 1]),
            "row {r}"
        );
    }
}

#[test]
fn broken_cell_markup_is_corrupt() {
    for (sheet_data, says) in [
        (
            r#"<row r="1"><c r="A1" t="s"><v>99</v></c></row>"#,
            "shared strings",
        ),
        (
            r#"<row r="1"><c r="A1" t="n"><v>abc</v></c></row>"#,
            "float",
        ),
        (
            r#"<row r="1"><c r="A1" t="b"><v>2</v></c></row>"#,
            "boolean",
        ),
        (r#"<row r="1"><c r="1A"><v>1</v></c></row>"#, "Sheet1"),
        (r#"<row r="1"><c r="A1" t><v>1</v></c></row>"#, "Sheet1"),
        (r#"<row r="1"><c r="A1"<v>1</v></c></row>"#, "Sheet1"),
        (r#"<row r="1"><c r="A1"><v>1</v>"#, "Sheet1"),
        (r#"<row r="1"><c r="A1"><v>1&2</v></c></row>"#, "Sheet1"),
        (r#"<row r="1"><c r="A1"><foo/></c></row>"#, "Sheet1"),
    ] {
        let (code, message) = failure(sheet_data);
        assert_eq!(code, "corrupt_file", "{sheet_data}: {message}");
        assert!(message.contains(says), "{sheet_data}: {message}");
    }
}

#[test]
fn shared_strings_in_every_shape_are_decoded() {
    let strings = [
        "<si><t>plain</t></si>",
        "<si><t>a &amp; b &lt;c&gt; &#x41;</t></si>",
        "<si><t>  trimmed\t</t></si>",
        r#"<si><t xml:space="preserve">  kept  </t></si>"#,
        "<si><t>one\r\ntwo\rthree</t></si>",
        "<si><t>ctl_x000D_x_x0041_</t></si>",
        r#"<si><r><t>rich</t></r><r><rPr><b/></rPr><t xml:space="preserve"> text</t></r></si>"#,
        "<si><t>base</t><rPh><t>phonetic</t></rPh></si>",
        "<si><t><![CDATA[c<d]]></t></si>",
        "\n  <si>\n    <t>spaced out</t>\n  </si>\n",
        "<x:si><x:t>prefixed</x:t></x:si>",
        "<si><t>日本語</t></si>",
        "<si><t></t></si>",
    ];
    let mut data =
        String::from(r#"<row r="1"><c r="A1" t="inlineStr"><is><t>s</t></is></c></row>"#);
    for i in 0..strings.len() {
        let r = i + 2;
        data.push_str(&format!(
            r#"<row r="{r}"><c r="A{r}" t="s"><v>{i}</v></c></row>"#
        ));
    }
    let bytes = patch_zip(&workbook(&data), "xl/sharedStrings.xml", |xml| {
        let start = xml.find("<sst").expect("sst");
        format!(
            r#"{}<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="{n}" uniqueCount="{n}">{}</sst>"#,
            &xml[..start],
            strings.concat(),
            n = strings.len()
        )
    });
    let p = parse(&bytes, FileFormat::Xlsx);
    assert_eq!(p.code(), "ok", "{:?}", p.result);
    assert_eq!(
        p.rows(0),
        [
            json!(["plain"]),
            json!(["a & b <c> A"]),
            json!(["trimmed"]),
            json!(["  kept  "]),
            json!(["one\ntwo\nthree"]),
            json!(["ctl\rxA"]),
            json!(["rich text"]),
            json!(["base"]),
            json!(["c<d"]),
            json!(["spaced out"]),
            json!(["prefixed"]),
            json!(["日本語"]),
            json!([null]),
        ]
    );
}
