//! Stored chunks turned into CSV or NDJSON, the export's hot path. A chunk is split into the
//! JSON text of its cells ([`Cells`]), not parsed into a `serde_json::Value` per row: a stored
//! string without escapes is copied as it is (NDJSON) or written as the CSV field it is, and a
//! typed column's string goes through [`column_type::render_str`] straight into the output.
//! Anything else (an escaped string, a number, a nested value, a row that is not an array) is
//! typed per cell or per chunk exactly as the rows endpoint types it. CSV text (cells and
//! header names) is written by [`csv_safe`], so that no spreadsheet runs it as a formula. The
//! reference, [`Encoder::chunk_by_value`], is the endpoint's first implementation; the tests
//! check that both give the same bytes.
//!
//! Measured (BENCHMARKS.md, "Export: a 1M-row sheet as CSV and NDJSON";
//! `cargo run -p bench --release -- export`, 3 runs, release binaries, 2026-11-24): the
//! reference path exported 506k rows/s as CSV and 566k as NDJSON at 1.73 s of api CPU per 1M
//! rows; this encoder 1.41M / 1.43M rows/s (run A; 1.34M / 1.43M in run B) at 0.58 s, the api's
//! RSS growing by 4–5 MB whatever the sheet's size. api CPU per 1M rows after each step: 1.73 s
//! → 0.85 (no `Value` per row, hand-written dates) → 0.72 (one vector of cells per chunk, CSV
//! without the `csv` writer) → 0.58 (the [`Cells`] scanner).

use std::io;

use csv::QuoteStyle;
use serde_json::value::RawValue;
use serde_json::Value;
use shared::domain::column_type::{self, Rendered};
use shared::domain::ColumnType;

use super::cells::{Cell, Cells};
use crate::csv_safe::{self, Holds};
use crate::typed;

/// The text formats this encoder writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    Csv,
    Ndjson,
}

/// Turns stored chunks into CSV or NDJSON.
pub struct Encoder {
    pub format: TextFormat,
    pub types: Vec<ColumnType>,
    pub columns: Vec<String>,
}

fn invalid(e: serde_json::Error) -> io::Error {
    io::Error::other(e)
}

impl Encoder {
    /// The CSV header row (names are text: [`csv_safe`] writes them); nothing for NDJSON.
    pub fn header(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if matches!(self.format, TextFormat::Csv) {
            for (i, name) in self.columns.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                csv_safe::write_text(&mut out, name.as_bytes(), Holds::Anything);
            }
            end_record(&mut out, 0);
        }
        out
    }

    /// Appends every row of one stored chunk (the JSON text of an array of rows), typed and
    /// encoded, to `out`.
    pub fn chunk(&self, rows_json: &str, out: &mut Vec<u8>) -> io::Result<()> {
        let Some(cells) = Cells::of(rows_json) else {
            // A row that is not an array (or invalid JSON, which fails there too).
            return self.chunk_by_value(rows_json, out);
        };
        let mut csv_fields = None;
        for row in cells.rows() {
            match self.format {
                TextFormat::Ndjson => self.ndjson_row(row, out)?,
                TextFormat::Csv => self.csv_row(row, out, &mut csv_fields)?,
            }
        }
        Ok(())
    }

    /// Ends the export after its last chunk: the bytes the format writes after the last row.
    /// CSV and NDJSON end with their last record, so there are none; a format with a trailer (a
    /// JSON array's `]`, a workbook's closing parts) returns it here. Called only when every
    /// chunk was encoded, so an export cut short by an error never looks whole.
    pub fn finish(self) -> &'static [u8] {
        match self.format {
            TextFormat::Csv | TextFormat::Ndjson => b"",
        }
    }

    /// One row as a JSON array and a newline; cells past the row's end are nulls.
    fn ndjson_row(&self, row: &[(&str, bool)], out: &mut Vec<u8>) -> io::Result<()> {
        let width = self.columns.len().max(row.len());
        out.push(b'[');
        for i in 0..width {
            if i > 0 {
                out.push(b',');
            }
            let Some(&cell) = row.get(i) else {
                out.extend_from_slice(b"null");
                continue;
            };
            let ty = self.types.get(i).copied();
            match Cell::of(cell)? {
                Cell::Literal(text) => out.extend_from_slice(text.as_bytes()),
                Cell::Str(s, stored_is_json) => {
                    match ty.and_then(|ty| column_type::render_str(&s, ty)) {
                        Some(r) => json_rendered(r, out)?,
                        None if stored_is_json => out.extend_from_slice(cell.0.as_bytes()),
                        None => serde_json::to_writer(&mut *out, &*s).map_err(invalid)?,
                    }
                }
                Cell::Other(text) => {
                    let value = typed_value(text, ty)?;
                    serde_json::to_writer(&mut *out, &value).map_err(invalid)?;
                }
            }
        }
        out.extend_from_slice(b"]\n");
        Ok(())
    }

    /// One row as a CSV record, as the reference path writes it: text through [`csv_safe`],
    /// `\n` after the record, and a record with no bytes at all written `""`. Like the `csv`
    /// crate's writer, it refuses a record whose length differs from the first one's (the
    /// chunk's, here).
    fn csv_row(
        &self,
        row: &[(&str, bool)],
        out: &mut Vec<u8>,
        fields: &mut Option<usize>,
    ) -> io::Result<()> {
        let width = self.columns.len().max(row.len());
        let first = *fields.get_or_insert(width);
        if first != width {
            return Err(io::Error::other(format!(
                "found record with {width} fields, but the previous record has {first} fields"
            )));
        }
        let start = out.len();
        for i in 0..width {
            if i > 0 {
                out.push(b',');
            }
            if let Some(&cell) = row.get(i) {
                self.csv_cell(cell, self.types.get(i).copied(), out)?;
            }
        }
        end_record(out, start);
        Ok(())
    }

    /// One cell as a CSV field: strings as their text, numbers and booleans as their JSON,
    /// null as nothing.
    fn csv_cell(
        &self,
        cell: (&str, bool),
        ty: Option<ColumnType>,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        match Cell::of(cell)? {
            Cell::Literal("null") => {}
            Cell::Literal(text) => out.extend_from_slice(text.as_bytes()),
            Cell::Str(s, stored_is_json) => match ty.and_then(|ty| column_type::render_str(&s, ty))
            {
                // Digits, signs, `.`, `e`, `:`, `T`, `Z`, `true`/`false`: never quoted.
                Some(Rendered::Iso(t)) => out.extend_from_slice(t.as_str().as_bytes()),
                Some(r) => json_rendered(r, out)?,
                // A stored string without escapes holds no quote, CR or LF.
                None if stored_is_json => {
                    csv_safe::write_text(out, s.as_bytes(), Holds::NoQuotesOrLineBreaks)
                }
                None => csv_safe::write_text(out, s.as_bytes(), Holds::Anything),
            },
            Cell::Other(text) => match typed_value(text, ty)? {
                Value::String(s) => csv_safe::write_text(out, s.as_bytes(), Holds::Anything),
                Value::Null => {}
                // Never prefixed: a JSON number is a plain number, and an array or an object
                // begins with `[` or `{`.
                other => csv_safe::write_text(out, other.to_string().as_bytes(), Holds::Anything),
            },
        }
        Ok(())
    }

    /// The reference: every row parsed into a `Value` and typed by [`typed`], as the rows
    /// endpoint does. Used for chunks the fast path does not read.
    pub fn chunk_by_value(&self, rows_json: &str, out: &mut Vec<u8>) -> io::Result<()> {
        let rows: Vec<&RawValue> = serde_json::from_str(rows_json).map_err(invalid)?;
        let width = self.columns.len();
        match self.format {
            TextFormat::Ndjson => {
                for raw in rows {
                    let values: Value = serde_json::from_str(raw.get()).map_err(invalid)?;
                    serde_json::to_writer(&mut *out, &typed(values, &self.types, width))
                        .map_err(invalid)?;
                    out.push(b'\n');
                }
            }
            // Each field is quoted and escaped by the `csv` crate, independently of the fast
            // path: always for a text that csv_safe prefixes (its one rule), else when needed.
            TextFormat::Csv => {
                let mut first = None;
                for raw in rows {
                    let values: Value = serde_json::from_str(raw.get()).map_err(invalid)?;
                    let fields = typed(values, &self.types, width);
                    let expected = *first.get_or_insert(fields.len());
                    if fields.len() != expected {
                        return Err(io::Error::other(format!(
                            "found record with {} fields, but the previous record has {expected} fields",
                            fields.len()
                        )));
                    }
                    let start = out.len();
                    for (i, value) in fields.into_iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        match value {
                            Value::String(s) if csv_safe::needs_prefix(s.as_bytes()) => {
                                csv_crate_field(
                                    out,
                                    format!("'{s}").as_bytes(),
                                    QuoteStyle::Always,
                                )?
                            }
                            Value::String(s) => {
                                csv_crate_field(out, s.as_bytes(), QuoteStyle::Necessary)?
                            }
                            Value::Null => {}
                            other => csv_crate_field(
                                out,
                                other.to_string().as_bytes(),
                                QuoteStyle::Necessary,
                            )?,
                        }
                    }
                    end_record(out, start);
                }
            }
        }
        Ok(())
    }
}

/// Ends the record that began at `start` in `out`: a record with no bytes at all is written
/// `""` (a lone empty field, which an empty line would not be), then `\n`.
fn end_record(out: &mut Vec<u8>, start: usize) {
    if out.len() == start {
        out.extend_from_slice(b"\"\"");
    }
    out.push(b'\n');
}

/// `field` as the `csv` crate writes it in `style`, for the reference path: written as a
/// record of its own (the crate closes a quoted field only at the record's end), less the
/// record's `\n`. An empty field is nothing, as within a longer record (the crate writes a
/// record of one empty field `""`, which [`end_record`] does for a whole empty record).
fn csv_crate_field(out: &mut Vec<u8>, field: &[u8], style: QuoteStyle) -> io::Result<()> {
    if field.is_empty() && matches!(style, QuoteStyle::Necessary) {
        return Ok(());
    }
    let mut writer = csv::WriterBuilder::new()
        .quote_style(style)
        .from_writer(Vec::with_capacity(field.len() + 3));
    writer.write_record([field])?;
    let mut record = writer
        .into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?;
    record.pop(); // the `\n`
    out.extend_from_slice(&record);
    Ok(())
}

/// A typed value as serde_json writes the `Value` [`column_type::render`] makes of it. Dates
/// are ASCII digits and separators, which need no escaping.
fn json_rendered(r: Rendered, out: &mut Vec<u8>) -> io::Result<()> {
    match r {
        Rendered::Integer(i) => serde_json::to_writer(&mut *out, &i).map_err(invalid),
        Rendered::Decimal(f) => serde_json::to_writer(&mut *out, &f).map_err(invalid),
        Rendered::Boolean(b) => {
            out.extend_from_slice(if b { b"true" } else { b"false" });
            Ok(())
        }
        Rendered::Iso(t) => {
            out.push(b'"');
            out.extend_from_slice(t.as_str().as_bytes());
            out.push(b'"');
            Ok(())
        }
    }
}

/// A cell the fast path does not read, typed as the reference path types it.
fn typed_value(text: &str, ty: Option<ColumnType>) -> io::Result<Value> {
    let value: Value = serde_json::from_str(text).map_err(invalid)?;
    Ok(match ty {
        Some(ty) => column_type::render(value, ty),
        None => value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_TYPES: [ColumnType; 7] = [
        ColumnType::Integer,
        ColumnType::Decimal,
        ColumnType::Boolean,
        ColumnType::Date,
        ColumnType::DateTime,
        ColumnType::Text,
        ColumnType::Mixed,
    ];

    /// Stored cells of every kind: what the worker writes for CSV and workbooks, and what it
    /// never writes but a stored chunk could hold (other escapes, `-0`, nested values).
    const CELLS: &[&str] = &[
        "null",
        "true",
        "false",
        r#""""#,
        r#""x""#,
        r#""a, quoted""#,
        r#""two\nlines""#,
        r#""say \"hi\"""#,
        r#""back\\slash""#,
        r#""\u0008\u000c\b\f\t\r\/""#,
        r#""\u00e9t\u00e9 東京 🦀""#,
        r#""山田""#,
        r#""42""#,
        r#""-7""#,
        r#""00123""#,
        r#""9223372036854775807""#,
        r#""9223372036854775808""#,
        r#""2.5""#,
        r#""-1.50""#,
        r#""1e3""#,
        r#""1e999""#,
        r#""0.1""#,
        r#""123456789.123456789""#,
        r#""TRUE""#,
        r#""false""#,
        r#""2024-01-05""#,
        r#""2024/02/29""#,
        r#""2024-02-30""#,
        r#""0000-01-01""#,
        r#""2024-01-05 10:30""#,
        r#""2024-01-05T10:30:00.5+09:00""#,
        r#""2024-01-05T10:30:00.0001Z""#,
        r#""2024-01-05 25:00""#,
        r#""=1+1""#,
        r#""=HYPERLINK(\"http://x\",\"click\")""#,
        r#""@SUM(A1)""#,
        r#""+cmd""#,
        r#""-x""#,
        r#""+3""#,
        r#""-12.5""#,
        r#""-1e5""#,
        r#""-""#,
        r#""'quoted""#,
        r#""=a,b""#,
        r#""\t=1""#,
        r#""\r=1""#,
        "0",
        "-0",
        "42",
        "-42",
        "1.0",
        "2.5",
        "1e5",
        "-1.5e-7",
        "18446744073709551615",
        "123456789012345678901234567890",
        "[1,\"a\"]",
        "{\"k\":null}",
    ];

    fn encoder(format: TextFormat, types: &[ColumnType]) -> Encoder {
        Encoder {
            format,
            types: types.to_vec(),
            columns: (0..types.len()).map(|i| format!("c{i}")).collect(),
        }
    }

    fn both(encoder: &Encoder, chunk: &str) -> (Vec<u8>, Vec<u8>) {
        let (mut fast, mut reference) = (Vec::new(), Vec::new());
        encoder.chunk(chunk, &mut fast).expect("fast path encodes");
        encoder
            .chunk_by_value(chunk, &mut reference)
            .expect("reference encodes");
        (fast, reference)
    }

    /// The same bytes, or an error from both (a CSV row longer than the others is one: the
    /// writer wants records of one length, and the parser never stores such a row).
    fn same_outcome(encoder: &Encoder, chunk: &str) -> Option<Vec<u8>> {
        let (mut fast, mut reference) = (Vec::new(), Vec::new());
        match (
            encoder.chunk(chunk, &mut fast),
            encoder.chunk_by_value(chunk, &mut reference),
        ) {
            (Ok(()), Ok(())) => {
                assert_eq!(
                    fast, reference,
                    "{:?} {:?} {chunk}",
                    encoder.format, encoder.types
                );
                Some(fast)
            }
            (Err(_), Err(_)) => None,
            (f, r) => panic!("fast {f:?}, reference {r:?}: {chunk}"),
        }
    }

    #[test]
    fn csv_rows_are_typed_and_quoted() {
        let csv = encoder(TextFormat::Csv, &[ColumnType::Integer, ColumnType::Text]);
        let mut out = Vec::new();
        csv.chunk(r#"[["1","a,b"],["2",null],["3"]]"#, &mut out)
            .expect("encodes");
        assert_eq!(&out[..], b"1,\"a,b\"\n2,\n3,\n");
        let ndjson = encoder(TextFormat::Ndjson, &csv.types);
        let mut out = Vec::new();
        ndjson.chunk(r#"[["1","x"]]"#, &mut out).expect("encodes");
        assert_eq!(&out[..], b"[1,\"x\"]\n");
    }

    #[test]
    fn csv_and_ndjson_end_with_their_last_record() {
        for format in [TextFormat::Csv, TextFormat::Ndjson] {
            assert_eq!(encoder(format, &[ColumnType::Text]).finish(), b"");
        }
    }

    #[test]
    fn csv_text_a_spreadsheet_would_run_is_prefixed_and_typed_values_are_not() {
        let types = [
            ColumnType::Text,
            ColumnType::Integer,
            ColumnType::Decimal,
            ColumnType::Date,
        ];
        let enc = encoder(TextFormat::Csv, &types);
        let chunk = r#"[["=HYPERLINK(\"http://x\",\"click\")","-7","-1e5","2024-01-05"],["@SUM(A1)","=1","+2.5","=TODAY()"],["-12.5",-3,-0.5,null],["'x","+3",null,"-"]]"#;
        let (fast, reference) = both(&enc, chunk);
        assert_eq!(
            String::from_utf8_lossy(&fast),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"click\"\")\",-7,-100000.0,2024-01-05\n\
             \"'@SUM(A1)\",\"'=1\",2.5,\"'=TODAY()\"\n\
             -12.5,-3,-0.5,\n\
             \"''x\",3,,\"'-\"\n"
        );
        assert_eq!(fast, reference);
        let mut ndjson = Vec::new();
        encoder(TextFormat::Ndjson, &types)
            .chunk(r#"[["=1","x","y","z"]]"#, &mut ndjson)
            .expect("encodes");
        assert_eq!(
            &ndjson[..],
            b"[\"=1\",\"x\",\"y\",\"z\"]\n",
            "NDJSON is not CSV"
        );
    }

    #[test]
    fn every_cell_in_every_column_type_encodes_as_the_reference_does() {
        for format in [TextFormat::Csv, TextFormat::Ndjson] {
            for ty in ALL_TYPES {
                // Each cell alone (width 1: a lone empty CSV field is written `""`), then
                // beside a text column.
                for cell in CELLS {
                    for (types, row) in [
                        (vec![ty], format!("[{cell}]")),
                        (vec![ty, ColumnType::Text], format!("[{cell},\"t\"]")),
                    ] {
                        let enc = encoder(format, &types);
                        let chunk = format!("[{row}]");
                        let (fast, reference) = both(&enc, &chunk);
                        assert_eq!(
                            String::from_utf8_lossy(&fast),
                            String::from_utf8_lossy(&reference),
                            "{format:?} {types:?} {chunk}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn generated_chunks_encode_as_the_reference_does() {
        // A fixed-seed generator: rows of up to 6 cells, or 8 (shorter and longer than the 6
        // columns, so rows are padded and extra cells stay untyped), drawn from CELLS, whose
        // nested values also send chunks to serde_json.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut encoded = [0; 2];
        for _ in 0..400 {
            let types: Vec<ColumnType> = (0..6).map(|_| ALL_TYPES[next(ALL_TYPES.len())]).collect();
            // One round in four has rows longer than the columns; one in three is written
            // as json_agg writes (`, ` between values), which the scanner leaves to serde_json.
            let longest = if next(4) == 0 { 8 } else { 6 };
            let sep = if next(3) == 0 { ", " } else { "," };
            let rows: Vec<String> = (0..1 + next(20))
                .map(|_| {
                    let cells: Vec<&str> = (0..next(longest + 1))
                        .map(|_| CELLS[next(CELLS.len())])
                        .collect();
                    format!("[{}]", cells.join(sep))
                })
                .collect();
            let chunk = format!("[{}]", rows.join(sep));
            for (i, format) in [TextFormat::Csv, TextFormat::Ndjson]
                .into_iter()
                .enumerate()
            {
                if same_outcome(&encoder(format, &types), &chunk).is_some() {
                    encoded[i] += 1;
                }
            }
        }
        // NDJSON encodes every round; CSV fails (both ways) on a chunk whose rows are longer
        // than the columns and not all of one length, which only the long rounds make.
        assert_eq!(encoded[1], 400);
        assert!(encoded[0] > 100, "{encoded:?}");
    }

    #[test]
    fn rows_that_are_not_arrays_take_the_reference_path() {
        for format in [TextFormat::Csv, TextFormat::Ndjson] {
            let enc = encoder(format, &[ColumnType::Integer, ColumnType::Text]);
            let chunk = r#"[["1","a"],"7",null,["2"]]"#;
            let (fast, reference) = both(&enc, chunk);
            assert_eq!(fast, reference);
            assert!(!fast.is_empty());
        }
        let mut out = Vec::new();
        let enc = encoder(TextFormat::Csv, &[ColumnType::Text]);
        assert!(enc.chunk("[[\"unterminated]", &mut out).is_err());
    }

    #[test]
    fn the_header_is_a_csv_record_and_ndjson_has_none() {
        let mut enc = encoder(TextFormat::Csv, &[ColumnType::Text, ColumnType::Text]);
        enc.columns = vec!["id".into(), "a, b".into()];
        assert_eq!(enc.header(), b"id,\"a, b\"\n");
        enc.columns = vec!["=cmd".into(), "-1".into(), "'x".into(), "@a, b".into()];
        assert_eq!(enc.header(), b"\"'=cmd\",-1,\"''x\",\"'@a, b\"\n");
        enc.format = TextFormat::Ndjson;
        assert!(enc.header().is_empty());
    }
}
