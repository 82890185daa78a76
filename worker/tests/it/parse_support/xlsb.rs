//! A minimal xlsb writer for test fixtures: a zip holding `xl/workbook.bin` (BrtWbProp for the
//! date system, BrtBundleSh per sheet), its relationships, `xl/styles.bin` (a date and a custom
//! date-time format), `xl/sharedStrings.bin` when cells use it, and one
//! `xl/worksheets/sheetN.bin` per sheet (BrtWsDim, BrtBeginSheetData, BrtRowHdr and cell
//! records). Nothing on this machine writes xlsb, so the records calamine reads are laid out
//! here, per MS-XLSB. The benchmark includes this file too (`#[path]`), to generate its large
//! xlsb.

/// One cell of a sheet, at (row, column).
pub enum XlsbCell {
    Real(u32, u32, f64),
    /// A number shown with the built-in date format (XF 1 → format 14).
    Date(u32, u32, f64),
    /// A number shown with the custom format `yyyy/mm/dd hh:mm` (XF 2 → a BrtFmt record).
    CustomDate(u32, u32, f64),
    /// An integer in the compact RK encoding.
    Rk(u32, u32, i32),
    /// An RK integer with its "divide by 100" flag: `RkHundredths(.., 1999)` is 19.99.
    RkHundredths(u32, u32, i32),
    /// A string stored in the cell record (BrtCellSt).
    Text(u32, u32, String),
    /// A string stored once in `xl/sharedStrings.bin` and referenced by index (BrtCellIsst),
    /// as Excel writes them.
    Shared(u32, u32, String),
    Bool(u32, u32, bool),
    /// A BIFF error code, e.g. 0x07 for `#DIV/0!`.
    Error(u32, u32, u8),
    /// A formula with the result Excel cached when it saved. The formula itself is always
    /// `=1+1`: a reader of values sees only the cached result.
    Formula(u32, u32, Cached),
    /// A raw shared-string index, past the end of the table when the test wants a broken file.
    SharedString(u32, u32, u32),
}

/// The cached result of a formula. (calamine 0.38 skips BrtFmlaError, so cached errors are
/// not written.)
pub enum Cached {
    Number(f64),
    Text(String),
    Bool(bool),
}

impl XlsbCell {
    fn position(&self) -> (u32, u32) {
        match self {
            XlsbCell::Real(r, c, _)
            | XlsbCell::Date(r, c, _)
            | XlsbCell::CustomDate(r, c, _)
            | XlsbCell::Rk(r, c, _)
            | XlsbCell::RkHundredths(r, c, _)
            | XlsbCell::Text(r, c, _)
            | XlsbCell::Shared(r, c, _)
            | XlsbCell::Bool(r, c, _)
            | XlsbCell::Error(r, c, _)
            | XlsbCell::Formula(r, c, _)
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

/// A parsed formula (`cce`, `rgce`, `cb`): ptgInt 1, ptgInt 1, ptgAdd.
const FORMULA: [u8; 15] = [7, 0, 0, 0, 0x1E, 1, 0, 0x1E, 1, 0, 0x03, 0, 0, 0, 0];

/// The shared strings of a workbook, in first-use order (BrtCellIsst indexes into `strings`),
/// with a map from each string to its index: the bench writes millions of them.
#[derive(Default)]
struct Sst<'a> {
    strings: Vec<&'a str>,
    index: std::collections::HashMap<&'a str, u32>,
}

fn shared_strings(sheets: &[XlsbSheet]) -> Sst<'_> {
    let mut sst = Sst::default();
    for cell in sheets.iter().flat_map(|s| &s.cells) {
        if let XlsbCell::Shared(_, _, s) = cell {
            sst.index.entry(s).or_insert_with(|| {
                sst.strings.push(s);
                sst.strings.len() as u32 - 1
            });
        }
    }
    sst
}

fn shared_strings_bin(sst: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    let count = (sst.len() as u32).to_le_bytes();
    record(&mut out, 0x009F, &[count, count].concat());
    for s in sst {
        let mut item = vec![0u8];
        item.extend_from_slice(&wide(s));
        record(&mut out, 0x0013, &item);
    }
    record(&mut out, 0x00A0, &[]);
    out
}

/// Cell formats: XF 0 general, XF 1 the built-in date format 14, XF 2 a custom date-time.
fn styles_bin() -> Vec<u8> {
    let mut out = Vec::new();
    record(&mut out, 0x0116, &[]);
    record(&mut out, 0x0267, &1u32.to_le_bytes());
    let mut fmt = 164u16.to_le_bytes().to_vec();
    fmt.extend_from_slice(&wide("yyyy/mm/dd hh:mm"));
    record(&mut out, 0x002C, &fmt);
    record(&mut out, 0x0268, &[]);
    record(&mut out, 0x0269, &3u32.to_le_bytes());
    for ifmt in [0u16, 14, 164] {
        let mut xf = vec![0u8; 16];
        xf[2..4].copy_from_slice(&ifmt.to_le_bytes());
        record(&mut out, 0x002F, &xf);
    }
    record(&mut out, 0x026A, &[]);
    record(&mut out, 0x0117, &[]);
    out
}

fn rk_int(v: i32, hundredths: bool) -> [u8; 4] {
    ((v << 2) as u32 | 2 | u32::from(hundredths)).to_le_bytes()
}

fn sheet_bin(sheet: &XlsbSheet, sst: &Sst<'_>) -> Vec<u8> {
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
        // iStyleRef (24 bits) and flags.
        let xf: u8 = match cell {
            XlsbCell::Date(..) => 1,
            XlsbCell::CustomDate(..) => 2,
            _ => 0,
        };
        data.extend_from_slice(&[xf, 0, 0, 0]);
        let typ = match cell {
            XlsbCell::Real(_, _, v) | XlsbCell::Date(_, _, v) | XlsbCell::CustomDate(_, _, v) => {
                data.extend_from_slice(&v.to_le_bytes());
                0x0005
            }
            XlsbCell::Rk(_, _, v) | XlsbCell::RkHundredths(_, _, v) => {
                data.extend_from_slice(&rk_int(*v, matches!(cell, XlsbCell::RkHundredths(..))));
                0x0002
            }
            XlsbCell::Shared(_, _, s) => {
                let index = sst.index[s.as_str()];
                data.extend_from_slice(&index.to_le_bytes());
                0x0007
            }
            XlsbCell::Formula(_, _, cached) => {
                let typ = match cached {
                    Cached::Number(v) => {
                        data.extend_from_slice(&v.to_le_bytes());
                        0x0009
                    }
                    Cached::Text(s) => {
                        data.extend_from_slice(&wide(s));
                        0x0008
                    }
                    Cached::Bool(b) => {
                        data.push(u8::from(*b));
                        0x000A
                    }
                };
                // grbitFlags, then the formula.
                data.extend_from_slice(&[0, 0]);
                data.extend_from_slice(&FORMULA);
                typ
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

/// An .xlsb file with `sheets` in order, in the 1900 date system.
pub fn xlsb(sheets: &[XlsbSheet]) -> Vec<u8> {
    xlsb_with(sheets, false)
}

/// An .xlsb file with `sheets` in order; `date1904` sets the workbook's date system.
pub fn xlsb_with(sheets: &[XlsbSheet], date1904: bool) -> Vec<u8> {
    let sst = shared_strings(sheets);
    let mut book = Vec::new();
    record(&mut book, 0x0083, &[]);
    // BrtWbProp: flags (f1904 first), theme version, default theme name.
    let mut wb_prop = u32::from(date1904).to_le_bytes().to_vec();
    wb_prop.extend_from_slice(&[0; 4]);
    wb_prop.extend_from_slice(&wide(""));
    record(&mut book, 0x0099, &wb_prop);
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
        parts.push((
            format!("xl/worksheets/sheet{n}.bin"),
            sheet_bin(sheet, &sst),
        ));
    }
    record(&mut book, 0x0090, &[]);
    record(&mut book, 0x0084, &[]);
    rels.push_str(r#"<Relationship Id="rIdStyles" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.bin"/>"#);
    parts.push(("xl/styles.bin".to_owned(), styles_bin()));
    if !sst.strings.is_empty() {
        rels.push_str(r#"<Relationship Id="rIdStrings" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.bin"/>"#);
        parts.push((
            "xl/sharedStrings.bin".to_owned(),
            shared_strings_bin(&sst.strings),
        ));
    }
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
