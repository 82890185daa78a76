//! A minimal xlsb writer for test fixtures: a zip holding `xl/workbook.bin` (BrtBundleSh per
//! sheet), its relationships, and one `xl/worksheets/sheetN.bin` per sheet (BrtWsDim,
//! BrtBeginSheetData, BrtRowHdr and cell records). Nothing on this machine writes xlsb, so the
//! records calamine reads are laid out here, per MS-XLSB. The benchmark includes this file too
//! (`#[path]`), to generate its large xlsb.

/// One cell of a sheet.
pub enum XlsbCell {
    Real(u32, u32, f64),
    Text(u32, u32, String),
    Bool(u32, u32, bool),
    /// A BIFF error code, e.g. 0x07 for `#DIV/0!`.
    Error(u32, u32, u8),
    /// A shared-string reference (the workbook writes no shared strings: any index is out of
    /// range, which is how a broken file looks).
    SharedString(u32, u32, u32),
}

impl XlsbCell {
    fn position(&self) -> (u32, u32) {
        match self {
            XlsbCell::Real(r, c, _)
            | XlsbCell::Text(r, c, _)
            | XlsbCell::Bool(r, c, _)
            | XlsbCell::Error(r, c, _)
            | XlsbCell::SharedString(r, c, _) => (*r, *c),
        }
    }
}

pub struct XlsbSheet {
    pub name: String,
    pub hidden: bool,
    /// In row-major order.
    pub cells: Vec<XlsbCell>,
}

/// Appends a record: its type and length in MS-XLSB's variable-length encodings, then `data`.
fn record(out: &mut Vec<u8>, typ: u16, data: &[u8]) {
    if typ < 0x80 {
        out.push(typ as u8);
    } else {
        out.push((typ & 0x7F) as u8 | 0x80);
        out.push((typ >> 7) as u8 & 0x7F);
    }
    let mut len = data.len();
    loop {
        let byte = (len & 0x7F) as u8;
        len >>= 7;
        if len == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(data);
}

/// An XLWideString: character count, then UTF-16LE.
fn wide(s: &str) -> Vec<u8> {
    let units: Vec<u16> = s.encode_utf16().collect();
    let mut out = (units.len() as u32).to_le_bytes().to_vec();
    out.extend(units.iter().flat_map(|u| u.to_le_bytes()));
    out
}

fn sheet_bin(sheet: &XlsbSheet) -> Vec<u8> {
    let mut out = Vec::new();
    record(&mut out, 0x0081, &[]);
    let (last_row, last_col) = sheet.cells.iter().fold((0, 0), |(r, c), cell| {
        let (row, col) = cell.position();
        (r.max(row), c.max(col))
    });
    let dims: Vec<u8> = [0u32, last_row, 0, last_col]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    record(&mut out, 0x0094, &dims);
    record(&mut out, 0x0091, &[]);
    let mut row = None;
    for cell in &sheet.cells {
        let (r, c) = cell.position();
        if row != Some(r) {
            let mut hdr = r.to_le_bytes().to_vec();
            hdr.extend_from_slice(&[0; 13]);
            record(&mut out, 0x0000, &hdr);
            row = Some(r);
        }
        let mut data = c.to_le_bytes().to_vec();
        data.extend_from_slice(&[0; 4]);
        let typ = match cell {
            XlsbCell::Real(_, _, v) => {
                data.extend_from_slice(&v.to_le_bytes());
                0x0005
            }
            XlsbCell::Text(_, _, s) => {
                data.extend_from_slice(&wide(s));
                0x0006
            }
            XlsbCell::Bool(_, _, b) => {
                data.push(u8::from(*b));
                0x0004
            }
            XlsbCell::Error(_, _, e) => {
                data.push(*e);
                0x0003
            }
            XlsbCell::SharedString(_, _, i) => {
                data.extend_from_slice(&i.to_le_bytes());
                0x0007
            }
        };
        record(&mut out, typ, &data);
    }
    record(&mut out, 0x0092, &[]);
    record(&mut out, 0x0082, &[]);
    out
}

/// An .xlsb file with `sheets` in order.
pub fn xlsb(sheets: &[XlsbSheet]) -> Vec<u8> {
    let mut book = Vec::new();
    record(&mut book, 0x0083, &[]);
    record(&mut book, 0x008F, &[]);
    let mut rels = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#,
    );
    let mut parts: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, sheet) in sheets.iter().enumerate() {
        let n = i + 1;
        let mut data = u32::from(sheet.hidden).to_le_bytes().to_vec();
        data.extend_from_slice(&(n as u32).to_le_bytes());
        data.extend_from_slice(&wide(&format!("rId{n}")));
        data.extend_from_slice(&wide(&sheet.name));
        record(&mut book, 0x009C, &data);
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.bin"/>"#
        ));
        parts.push((format!("xl/worksheets/sheet{n}.bin"), sheet_bin(sheet)));
    }
    record(&mut book, 0x0090, &[]);
    record(&mut book, 0x0084, &[]);
    rels.push_str("</Relationships>");
    let content_types = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="bin" ContentType="application/vnd.ms-excel.sheet.binary.macroEnabled.main"/><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/></Types>"#;
    let root_rels = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.bin"/></Relationships>"#;
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", content_types.as_bytes()),
        ("_rels/.rels", root_rels.as_bytes()),
        ("xl/workbook.bin", &book),
        ("xl/_rels/workbook.bin.rels", rels.as_bytes()),
    ];
    for (name, data) in &parts {
        entries.push((name, data));
    }
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for (name, data) in entries {
        zip.start_file(name, opts).expect("zip entry");
        std::io::Write::write_all(&mut zip, data).expect("zip data");
    }
    zip.finish().expect("finish the zip").into_inner()
}
