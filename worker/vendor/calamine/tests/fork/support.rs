//! Workbooks built in memory, and the cells of a workbook read back in one comparable shape.
//! The xls and xlsb writers are the worker's test writers (`worker/tests/it/parse_support`), so
//! the worker's tests and the fork's read the same files.

use std::io::{Cursor, Write};

use calamine::{Cell, Data, DataRef, Range};

#[path = "../../../../tests/it/parse_support/biff.rs"]
#[allow(dead_code)]
pub mod biff;

#[path = "../../../../tests/it/parse_support/xlsb.rs"]
#[allow(dead_code)]
pub mod xlsb;

/// A cell's absolute (row, column) and its value.
pub type Positioned = ((u32, u32), Data);

/// A zip of (name, content) entries, deflated, in order.
pub fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        out.start_file(*name, opts).expect("start entry");
        out.write_all(data).expect("write entry");
    }
    out.finish().expect("finish zip").into_inner()
}

/// An xlsx of one sheet, `Sheet1`, whose `<sheetData>` is `sheet_data`, with
/// `<sst>` content `shared_strings` when given.
pub fn xlsx(sheet_data: &str, shared_strings: Option<&str>) -> Vec<u8> {
    let content_types = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>"#;
    let root_rels = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
    let workbook = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>"#;
    let workbook_rels = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>"#;
    let sheet = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{sheet_data}</sheetData></worksheet>"#
    );
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", content_types.as_bytes()),
        ("_rels/.rels", root_rels.as_bytes()),
        ("xl/workbook.xml", workbook.as_bytes()),
        ("xl/_rels/workbook.xml.rels", workbook_rels.as_bytes()),
        ("xl/worksheets/sheet1.xml", sheet.as_bytes()),
    ];
    let sst = shared_strings.map(|s| {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">{s}</sst>"#
        )
    });
    if let Some(sst) = &sst {
        entries.push(("xl/sharedStrings.xml", sst.as_bytes()));
    }
    zip(&entries)
}

/// An ods whose `content.xml` has `styles` as automatic styles and `tables` as its body.
pub fn ods(styles: &str, tables: &str) -> Vec<u8> {
    let manifest = br#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/></manifest:manifest>"#;
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3"><office:automatic-styles>{styles}</office:automatic-styles><office:body><office:spreadsheet>{tables}</office:spreadsheet></office:body></office:document-content>"#
    );
    zip(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        ),
        ("META-INF/manifest.xml", manifest),
        ("content.xml", content.as_bytes()),
    ])
}

/// The non-empty cells of a range, at absolute positions, in row-major order.
pub fn range_cells(range: &Range<Data>) -> Vec<Positioned> {
    let (top, left) = range.start().unwrap_or((0, 0));
    range
        .used_cells()
        .map(|(r, c, v)| ((top + r as u32, left + c as u32), v.clone()))
        .collect()
}

/// Drains a cells reader (`next` as `XlsxCellReader::next_cell` and the like) into owned
/// values (shared strings resolved), skipping empty cells as `Range::used_cells` does.
pub fn drain<'a, E: std::fmt::Debug>(
    mut next: impl FnMut() -> Result<Option<Cell<DataRef<'a>>>, E>,
) -> Vec<Positioned> {
    let mut out = Vec::new();
    while let Some(cell) = next().expect("read a cell") {
        let value = Data::from(cell.get_value().clone());
        if value != Data::Empty {
            out.push((cell.get_position(), value));
        }
    }
    out
}
