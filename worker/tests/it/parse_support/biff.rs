//! A minimal BIFF8 (.xls) writer for test fixtures: nothing on this machine writes xls, so the
//! tests build the records calamine reads (MS-XLS) — a compound file holding a `Workbook` stream
//! of globals (BOF, CODEPAGE, DATEMODE, FORMAT, XF, BOUNDSHEET8, SST, EOF) and one substream per
//! sheet (BOF, DIMENSIONS, cell records, MERGEDCELLS, EOF). Strings are written as UTF-16
//! (`fHighByte`), so any text round-trips. The benchmark includes this file too (`#[path]`), to
//! generate its large xls.

use std::io::{Cursor, Write};

/// One record of a sheet's cell table; cells are at (row, column).
pub enum XlsCell {
    Number(u16, u16, f64),
    /// A number shown with the built-in date format (XF 1 → format 14).
    Date(u16, u16, f64),
    /// A number shown with the custom format `yyyy/mm/dd hh:mm` (XF 2 → a FORMAT record).
    CustomDate(u16, u16, f64),
    /// A string stored in the record itself (LABEL).
    Label(u16, u16, String),
    /// A string stored once in the workbook's SST and referenced by index (LABELSST), as
    /// Excel writes them.
    Shared(u16, u16, String),
    /// An integer in the compact RK encoding.
    Rk(u16, u16, i32),
    /// An RK integer with its "divide by 100" flag: `RkHundredths(.., 1999)` is 19.99.
    RkHundredths(u16, u16, i32),
    /// Integers in consecutive columns from the given one (MULRK).
    MulRk(u16, u16, Vec<i32>),
    Bool(u16, u16, bool),
    /// A BIFF error code, e.g. 0x07 for `#DIV/0!`.
    Error(u16, u16, u8),
    /// A FORMULA record with the result Excel cached when it saved. The formula itself is
    /// always `=1+1`: a reader of values sees only the cached result.
    Formula(u16, u16, Cached),
    /// A MERGEDCELLS record: first row, last row, first column, last column (inclusive).
    Merged(u16, u16, u16, u16),
}

/// The cached result of a formula.
pub enum Cached {
    Number(f64),
    /// Written as a STRING record after the FORMULA record.
    Text(String),
    Bool(bool),
    Error(u8),
}

impl XlsCell {
    /// Where the cell is; `None` for records that are not cells.
    fn position(&self) -> Option<(u16, u16)> {
        match self {
            XlsCell::Number(r, c, _)
            | XlsCell::Date(r, c, _)
            | XlsCell::CustomDate(r, c, _)
            | XlsCell::Label(r, c, _)
            | XlsCell::Shared(r, c, _)
            | XlsCell::Rk(r, c, _)
            | XlsCell::RkHundredths(r, c, _)
            | XlsCell::Bool(r, c, _)
            | XlsCell::Error(r, c, _)
            | XlsCell::Formula(r, c, _) => Some((*r, *c)),
            XlsCell::MulRk(r, c, values) => Some((*r, c + values.len() as u16 - 1)),
            XlsCell::Merged(..) => None,
        }
    }
}

pub struct XlsSheet {
    pub name: String,
    pub hidden: bool,
    pub cells: Vec<XlsCell>,
    /// Overrides the DIMENSIONS record: (first row, last row + 1, first col, last col + 1).
    pub dimensions: Option<(u32, u32, u16, u16)>,
}

/// Appends one record: type, length, data.
pub fn record(out: &mut Vec<u8>, typ: u16, data: &[u8]) {
    out.extend_from_slice(&typ.to_le_bytes());
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.extend_from_slice(data);
}

/// Appends a BIFF8 BOF record of substream type `dt` (5 globals, 0x10 worksheet).
pub fn bof(out: &mut Vec<u8>, dt: u16) {
    let mut d = Vec::new();
    d.extend_from_slice(&0x0600u16.to_le_bytes());
    d.extend_from_slice(&dt.to_le_bytes());
    d.extend_from_slice(&[0; 12]);
    record(out, 0x0809, &d);
}

fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

fn cell_head(row: u16, col: u16, xf: u16) -> Vec<u8> {
    [row.to_le_bytes(), col.to_le_bytes(), xf.to_le_bytes()].concat()
}

/// An XLUnicodeString: character count, `fHighByte`, UTF-16LE.
fn unicode_string(s: &str) -> Vec<u8> {
    let mut d = (s.encode_utf16().count() as u16).to_le_bytes().to_vec();
    d.push(1);
    d.extend_from_slice(&utf16(s));
    d
}

/// An RK value holding integer `v` (30 bits), optionally to be divided by 100.
fn rk_int(v: i32, hundredths: bool) -> [u8; 4] {
    ((v << 2) as u32 | 2 | u32::from(hundredths)).to_le_bytes()
}

/// The shared strings of a workbook, in first-use order: SST indexes into this.
fn shared_strings(sheets: &[XlsSheet]) -> Vec<&str> {
    let mut strings: Vec<&str> = Vec::new();
    for cell in sheets.iter().flat_map(|s| &s.cells) {
        if let XlsCell::Shared(_, _, s) = cell {
            if !strings.contains(&s.as_str()) {
                strings.push(s);
            }
        }
    }
    strings
}

fn sheet_stream(sheet: &XlsSheet, sst: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    bof(&mut out, 0x0010);
    let (rows, cols) = sheet
        .cells
        .iter()
        .filter_map(XlsCell::position)
        .fold((0u32, 0u16), |(r, c), (row, col)| {
            (r.max(u32::from(row) + 1), c.max(col + 1))
        });
    let (r0, r1, c0, c1) = sheet.dimensions.unwrap_or((0, rows, 0, cols));
    let mut d = Vec::new();
    d.extend_from_slice(&r0.to_le_bytes());
    d.extend_from_slice(&r1.to_le_bytes());
    d.extend_from_slice(&c0.to_le_bytes());
    d.extend_from_slice(&c1.to_le_bytes());
    d.extend_from_slice(&[0, 0]);
    record(&mut out, 0x0200, &d);
    for cell in &sheet.cells {
        match cell {
            XlsCell::Number(r, c, v) | XlsCell::Date(r, c, v) | XlsCell::CustomDate(r, c, v) => {
                let xf = match cell {
                    XlsCell::Date(..) => 1,
                    XlsCell::CustomDate(..) => 2,
                    _ => 0,
                };
                let mut d = cell_head(*r, *c, xf);
                d.extend_from_slice(&v.to_le_bytes());
                record(&mut out, 0x0203, &d);
            }
            XlsCell::Label(r, c, s) => {
                let mut d = cell_head(*r, *c, 0);
                d.extend_from_slice(&unicode_string(s));
                record(&mut out, 0x0204, &d);
            }
            XlsCell::Shared(r, c, s) => {
                let index = sst.iter().position(|x| x == s).expect("in the SST") as u32;
                let mut d = cell_head(*r, *c, 0);
                d.extend_from_slice(&index.to_le_bytes());
                record(&mut out, 0x00FD, &d);
            }
            XlsCell::Rk(r, c, v) | XlsCell::RkHundredths(r, c, v) => {
                let mut d = cell_head(*r, *c, 0);
                d.extend_from_slice(&rk_int(*v, matches!(cell, XlsCell::RkHundredths(..))));
                record(&mut out, 0x027E, &d);
            }
            XlsCell::MulRk(r, c, values) => {
                let mut d = [r.to_le_bytes(), c.to_le_bytes()].concat();
                for v in values {
                    d.extend_from_slice(&0u16.to_le_bytes());
                    d.extend_from_slice(&rk_int(*v, false));
                }
                d.extend_from_slice(&(c + values.len() as u16 - 1).to_le_bytes());
                record(&mut out, 0x00BD, &d);
            }
            XlsCell::Formula(r, c, cached) => {
                let mut d = cell_head(*r, *c, 0);
                let value: [u8; 8] = match cached {
                    Cached::Number(v) => v.to_le_bytes(),
                    Cached::Text(_) => [0, 0, 0, 0, 0, 0, 0xFF, 0xFF],
                    Cached::Bool(b) => [1, 0, u8::from(*b), 0, 0, 0, 0xFF, 0xFF],
                    Cached::Error(e) => [2, 0, *e, 0, 0, 0, 0xFF, 0xFF],
                };
                d.extend_from_slice(&value);
                // grbit, chn (unused), then the parsed formula: ptgInt 1, ptgInt 1, ptgAdd.
                d.extend_from_slice(&[0; 6]);
                let rgce = [0x1E, 1, 0, 0x1E, 1, 0, 0x03];
                d.extend_from_slice(&(rgce.len() as u16).to_le_bytes());
                d.extend_from_slice(&rgce);
                record(&mut out, 0x0006, &d);
                if let Cached::Text(s) = cached {
                    record(&mut out, 0x0207, &unicode_string(s));
                }
            }
            XlsCell::Bool(r, c, b) => {
                let mut d = cell_head(*r, *c, 0);
                d.extend_from_slice(&[u8::from(*b), 0]);
                record(&mut out, 0x0205, &d);
            }
            XlsCell::Error(r, c, e) => {
                let mut d = cell_head(*r, *c, 0);
                d.extend_from_slice(&[*e, 1]);
                record(&mut out, 0x0205, &d);
            }
            XlsCell::Merged(r0, r1, c0, c1) => {
                let mut d = 1u16.to_le_bytes().to_vec();
                for v in [r0, r1, c0, c1] {
                    d.extend_from_slice(&v.to_le_bytes());
                }
                record(&mut out, 0x00E5, &d);
            }
        }
    }
    record(&mut out, 0x000A, &[]);
    out
}

/// An .xls file with `sheets` in order; `date1904` sets the workbook's date system.
pub fn xls(sheets: &[XlsSheet], date1904: bool) -> Vec<u8> {
    let sst = shared_strings(sheets);
    let substreams: Vec<Vec<u8>> = sheets.iter().map(|s| sheet_stream(s, &sst)).collect();
    let boundsheet = |pos: u32, sheet: &XlsSheet| {
        let mut d = pos.to_le_bytes().to_vec();
        d.push(u8::from(sheet.hidden));
        d.push(0);
        d.push(sheet.name.encode_utf16().count() as u8);
        d.push(1);
        d.extend_from_slice(&utf16(&sheet.name));
        d
    };
    // Globals with placeholder positions first, to learn their length.
    let globals = |positions: &[u32]| {
        let mut out = Vec::new();
        bof(&mut out, 0x0005);
        // UTF-16: the code page of every BIFF8 workbook Excel writes.
        record(&mut out, 0x0042, &1200u16.to_le_bytes());
        record(&mut out, 0x0022, &u16::from(date1904).to_le_bytes());
        let mut format = 164u16.to_le_bytes().to_vec();
        format.extend_from_slice(&unicode_string("yyyy/mm/dd hh:mm"));
        record(&mut out, 0x041E, &format);
        // XF 0 general, XF 1 the built-in date format 14, XF 2 the custom format above.
        for ifmt in [0u16, 14, 164] {
            let mut xf = vec![0u8; 20];
            xf[2..4].copy_from_slice(&ifmt.to_le_bytes());
            record(&mut out, 0x00E0, &xf);
        }
        for (sheet, pos) in sheets.iter().zip(positions) {
            record(&mut out, 0x0085, &boundsheet(*pos, sheet));
        }
        if !sst.is_empty() {
            let count = (sst.len() as u32).to_le_bytes();
            let mut d = [count, count].concat();
            for s in &sst {
                d.extend_from_slice(&unicode_string(s));
            }
            // Larger tables would continue in CONTINUE records; fixtures stay below that.
            assert!(d.len() <= 8224, "the SST fits in one record");
            record(&mut out, 0x00FC, &d);
        }
        record(&mut out, 0x000A, &[]);
        out
    };
    let mut pos = globals(&vec![0; sheets.len()]).len() as u32;
    let positions: Vec<u32> = substreams
        .iter()
        .map(|s| {
            let p = pos;
            pos += s.len() as u32;
            p
        })
        .collect();
    let mut stream = globals(&positions);
    for s in &substreams {
        stream.extend_from_slice(s);
    }
    compound_file(&stream)
}

/// A compound file whose `Workbook` stream is `stream`.
pub fn compound_file(stream: &[u8]) -> Vec<u8> {
    compound_file_named("/Workbook", stream)
}

/// A compound file holding `stream` under `name` (`/Book` in Excel 5.0/95 workbooks).
pub fn compound_file_named(name: &str, stream: &[u8]) -> Vec<u8> {
    // Version 3 (512-byte sectors), as Excel writes: calamine reads a large stream in a
    // version 4 file as an empty root directory.
    let mut book =
        cfb::CompoundFile::create_with_version(cfb::Version::V3, Cursor::new(Vec::new()))
            .expect("create a compound file");
    book.create_stream(name)
        .and_then(|mut w| w.write_all(stream))
        .expect("write the Workbook stream");
    book.flush().expect("flush the compound file");
    book.into_inner().into_inner()
}
