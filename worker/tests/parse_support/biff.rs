//! A minimal BIFF8 (.xls) writer for test fixtures: nothing on this machine writes xls, so the
//! tests build the records calamine reads — a compound file holding a `Workbook` stream of
//! globals (BOF, DATEMODE, XF, BOUNDSHEET8, EOF) and one substream per sheet (BOF, DIMENSIONS,
//! cells, EOF). Strings are written as UTF-16 (`fHighByte`), so any text round-trips.
//! The benchmark includes this file too (`#[path]`), to generate its large xls.

use std::io::{Cursor, Write};

/// One cell record of a sheet.
pub enum XlsCell {
    Number(u16, u16, f64),
    /// A number shown with the built-in date format (XF 1 → format 14).
    Date(u16, u16, f64),
    Label(u16, u16, String),
    Bool(u16, u16, bool),
    /// A BIFF error code, e.g. 0x07 for `#DIV/0!`.
    Error(u16, u16, u8),
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

fn sheet_stream(sheet: &XlsSheet) -> Vec<u8> {
    let mut out = Vec::new();
    bof(&mut out, 0x0010);
    let (rows, cols) = sheet.cells.iter().fold((0u32, 0u16), |(r, c), cell| {
        let (row, col) = match cell {
            XlsCell::Number(r, c, _)
            | XlsCell::Date(r, c, _)
            | XlsCell::Label(r, c, _)
            | XlsCell::Bool(r, c, _)
            | XlsCell::Error(r, c, _) => (*r, *c),
        };
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
            XlsCell::Number(r, c, v) | XlsCell::Date(r, c, v) => {
                let xf = u16::from(matches!(cell, XlsCell::Date(..)));
                let mut d = cell_head(*r, *c, xf);
                d.extend_from_slice(&v.to_le_bytes());
                record(&mut out, 0x0203, &d);
            }
            XlsCell::Label(r, c, s) => {
                let mut d = cell_head(*r, *c, 0);
                d.extend_from_slice(&(s.encode_utf16().count() as u16).to_le_bytes());
                d.push(1);
                d.extend_from_slice(&utf16(s));
                record(&mut out, 0x0204, &d);
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
        }
    }
    record(&mut out, 0x000A, &[]);
    out
}

/// An .xls file with `sheets` in order; `date1904` sets the workbook's date system.
pub fn xls(sheets: &[XlsSheet], date1904: bool) -> Vec<u8> {
    let substreams: Vec<Vec<u8>> = sheets.iter().map(sheet_stream).collect();
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
        record(&mut out, 0x0022, &u16::from(date1904).to_le_bytes());
        for ifmt in [0u16, 14] {
            let mut xf = vec![0u8; 20];
            xf[2..4].copy_from_slice(&ifmt.to_le_bytes());
            record(&mut out, 0x00E0, &xf);
        }
        for (sheet, pos) in sheets.iter().zip(positions) {
            record(&mut out, 0x0085, &boundsheet(*pos, sheet));
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
    // Version 3 (512-byte sectors), as Excel writes: calamine reads a large stream in a
    // version 4 file as an empty root directory.
    let mut book =
        cfb::CompoundFile::create_with_version(cfb::Version::V3, Cursor::new(Vec::new()))
            .expect("create a compound file");
    book.create_stream("/Workbook")
        .and_then(|mut w| w.write_all(stream))
        .expect("write the Workbook stream");
    book.flush().expect("flush the compound file");
    book.into_inner().into_inner()
}
