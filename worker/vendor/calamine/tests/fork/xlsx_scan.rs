//! Patch 4: xlsx cells and shared strings in Excel's usual shapes are read straight from
//! quick-xml's buffer. The same sheet written compactly (scanned) and with whitespace between
//! every element (which the scanner leaves to quick-xml) must read the same, through the cells
//! reader and through `worksheet_range`, including the shapes the scanner never takes.

use std::io::Cursor;

use calamine::{Data, Reader, Xlsx};

use crate::support::{drain, range_cells, xlsx, Positioned};

const ROWS: u32 = 3_000;

/// The cells of a row in every shape the scanner recognises and several it leaves alone
/// (inline string, formula, `t="str"`, cells without `r`).
fn row(r: u32) -> Vec<String> {
    let at = |col: char| {
        if r % 7 == 0 {
            String::new()
        } else {
            format!(r#" r="{col}{r}""#)
        }
    };
    vec![
        format!(r#"<c{} t="s"><v>{}</v></c>"#, at('A'), (r - 1) % 500),
        format!(r#"<c{} s="1"><v>{r}.5</v></c>"#, at('B')),
        format!(r#"<c{} t="b"><v>{}</v></c>"#, at('C'), r % 2),
        format!(r#"<c{} t="e"><v>#DIV/0!</v></c>"#, at('D')),
        format!(r#"<c{} s="1"/>"#, at('E')),
        format!(r#"<c{}></c>"#, at('F')),
        format!(
            r#"<c{} t="inlineStr"><is><t>inline {r}</t></is></c>"#,
            at('G')
        ),
        format!(r#"<c{}><f>B{r}*2</f><v>{}</v></c>"#, at('H'), 2 * r + 1),
        format!(r#"<c{} t="n"><v>-{r}</v></c>"#, at('I')),
        format!(r#"<c{} t="str"><v>text {r}</v></c>"#, at('J')),
    ]
}

/// `<sheetData>` content; `sep` goes between every two elements.
fn sheet_data(sep: &str) -> String {
    (1..=ROWS)
        .map(|r| {
            let cells = row(r).join(sep);
            format!(r#"<row r="{r}" spans="1:10">{sep}{cells}{sep}</row>"#)
        })
        .collect::<Vec<_>>()
        .join(sep)
}

/// 500 shared strings: plain, empty, non-ASCII, with an entity, with spaces kept, rich text
/// (whose runs are trimmed: they keep no `xml:space`).
fn shared_strings(sep: &str) -> String {
    (0..500)
        .map(|i| match i % 6 {
            0 => format!("<si><t>plain {i}</t></si>"),
            1 => "<si><t/></si>".to_owned(),
            2 => format!("<si><t>Größe 🦀 {i}</t></si>"),
            3 => format!("<si><t>a &amp; b {i}</t></si>"),
            4 => format!(r#"<si><t xml:space="preserve">  kept {i} </t></si>"#),
            _ => format!("<si><r><t>rich </t></r><r><t>{i}</t></r></si>"),
        })
        .collect::<Vec<_>>()
        .join(sep)
}

fn workbook(sep: &str) -> Xlsx<Cursor<Vec<u8>>> {
    let bytes = xlsx(&sheet_data(sep), Some(&shared_strings(sep)));
    Xlsx::new(Cursor::new(bytes)).expect("open the xlsx")
}

fn streamed(sep: &str) -> Vec<Positioned> {
    let mut wb = workbook(sep);
    let mut cells = wb.worksheet_cells_reader("Sheet1").expect("cells reader");
    drain(|| cells.next_cell())
}

fn ranged(sep: &str) -> Vec<Positioned> {
    range_cells(&workbook(sep).worksheet_range("Sheet1").expect("range"))
}

#[test]
fn scanned_cells_read_as_quick_xml_reads_them() {
    let scanned = streamed("");
    assert_eq!(
        scanned.len(),
        ROWS as usize * 8,
        "eight non-empty cells a row"
    );
    assert_eq!(scanned, streamed("\n    "));
    assert_eq!(scanned, ranged(""));
    assert_eq!(scanned, ranged("\n    "));
}

#[test]
fn scanned_values_are_the_written_ones() {
    let cells = streamed("");
    let first: Vec<&Data> = cells.iter().take(8).map(|(_, v)| v).collect();
    assert_eq!(
        first,
        [
            &Data::String("plain 0".into()),
            &Data::Float(1.5),
            &Data::Bool(true),
            &Data::Error(calamine::CellErrorType::Div0),
            &Data::String("inline 1".into()),
            &Data::Float(3.0),
            &Data::Float(-1.0),
            &Data::String("text 1".into()),
        ]
    );
    let strings: Vec<&Data> = cells.iter().step_by(8).take(6).map(|(_, v)| v).collect();
    assert_eq!(
        strings,
        [
            &Data::String("plain 0".into()),
            &Data::String(String::new()),
            &Data::String("Größe 🦀 2".into()),
            &Data::String("a & b 3".into()),
            &Data::String("  kept 4 ".into()),
            &Data::String("rich5".into()),
        ]
    );
}
