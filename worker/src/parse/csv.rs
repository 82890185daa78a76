//! CSV/TSV in one streaming pass: detect the encoding and the delimiter from a sample, decode
//! incrementally (UTF-8 is read as is and only validated), split records with the `csv` crate
//! (RFC 4180 quotes, embedded newlines, CRLF/LF/CR), and emit each row as a JSON array of
//! strings while narrowing every column's type. Memory stays flat in the file size: the only
//! buffers are the sample, the decoder's chunks and one record.

use std::borrow::Cow;
use std::cell::Cell;
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;
use std::rc::Rc;

use encoding_rs::UTF_8;

use super::sheet::{check_cell, check_rows, SheetBuilder};
use super::{
    delimiter, encoding, json, ParseErrorCode, ParseEvent, ParseFailure, ParseLimits, ParseSummary,
};

/// The name of the single sheet of a CSV/TSV file.
pub const CSV_SHEET_NAME: &str = "Sheet1";

/// Parses a text file. `tsv_hint` makes tab the delimiter when the sample has no delimiter at all.
pub(crate) fn parse(
    path: &Path,
    tsv_hint: bool,
    limits: &ParseLimits,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<ParseSummary, ParseFailure> {
    let io_err = |e: io::Error| ParseFailure::corrupt(format!("cannot read the file: {e}"));
    let mut file = File::open(path).map_err(io_err)?;
    let mut sample = Vec::with_capacity(encoding::SAMPLE_LEN);
    (&mut file)
        .take(encoding::SAMPLE_LEN as u64)
        .read_to_end(&mut sample)
        .map_err(io_err)?;
    if sample.is_empty() {
        return Err(ParseFailure::new(
            ParseErrorCode::EmptyFile,
            "the file is empty",
        ));
    }
    let complete = sample.len() < encoding::SAMPLE_LEN;
    let detected = encoding::detect(&sample, complete);
    let body = &sample[detected.bom_len..];
    let decoded_sample: Cow<'_, str> = if detected.encoding == UTF_8 {
        String::from_utf8_lossy(body)
    } else {
        detected.encoding.decode_without_bom_handling(body).0
    };
    let fallback = if tsv_hint { b'\t' } else { b',' };
    let delimiter = delimiter::detect(&decoded_sample, complete, fallback);
    drop(decoded_sample);

    let bom_len = detected.bom_len as u64;
    let mut cursor = Cursor::new(sample);
    cursor.set_position(bom_len);
    let raw = cursor.chain(file);
    // A record may not grow without bound (an unbalanced quote would otherwise swallow the
    // whole file into one field): the guard fails the read past this many bytes in a record.
    let record_limit = (limits.max_cell_bytes as u64)
        .saturating_mul(4)
        .max(16 * 1024 * 1024);
    let consumed = Rc::new(Cell::new(0u64));
    let mark = Rc::new(Cell::new(0u64));
    let input: Box<dyn Read> = if detected.encoding == UTF_8 {
        Box::new(raw)
    } else {
        Box::new(encoding::DecodingReader::new(raw, detected.encoding))
    };
    let guarded = RecordGuard {
        inner: input,
        consumed: consumed.clone(),
        mark: mark.clone(),
        limit: record_limit,
    };
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .buffer_capacity(256 * 1024)
        .from_reader(guarded);

    let mut sheet = SheetBuilder::new(
        0,
        CSV_SHEET_NAME.to_owned(),
        false,
        false,
        limits.max_columns,
    );
    on_event(ParseEvent::SheetStart {
        index: 0,
        name: sheet.name.clone(),
        hidden: false,
    })
    .map_err(ParseFailure::sink)?;

    let mut record = ::csv::ByteRecord::new();
    let mut row = String::with_capacity(1024);
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(e, &sheet, limits)),
        }
        mark.set(consumed.get());
        // Blank lines and rows of empty fields carry nothing: skip them everywhere.
        if record.as_slice().is_empty() {
            continue;
        }
        if !sheet.has_header() {
            let names = record
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect();
            sheet.set_header(names)?;
            continue;
        }
        let width = record.len();
        sheet.ensure_width(width)?;
        row.clear();
        row.push('[');
        // Validate the record once: delimiters are ASCII, so every field of a valid record is
        // valid too and can be sliced out of it as `&str` without another check. Likewise one
        // scan tells whether any cell of the record needs JSON escaping (most records: none).
        let bytes = record.as_slice();
        let whole = simdutf8::basic::from_utf8(bytes).ok();
        let clean = whole.is_some() && !json::needs_escape(bytes);
        for i in 0..width {
            if i > 0 {
                row.push(',');
            }
            let range = record.range(i).unwrap_or(0..0);
            if range.is_empty() {
                row.push_str("null");
                continue;
            }
            check_cell(range.len(), limits.max_cell_bytes, &sheet.name, sheet.rows)?;
            let text = match whole.and_then(|w| w.get(range.clone())) {
                Some(s) => Cow::Borrowed(s),
                None => String::from_utf8_lossy(&record.as_slice()[range]),
            };
            sheet.columns_acc[i].observe_text(&text);
            if clean {
                json::push_clean_str(&mut row, &text);
            } else {
                json::push_str(&mut row, &text);
            }
        }
        for _ in width..sheet.header_len() {
            row.push_str(",null");
        }
        row.push(']');
        check_rows(sheet.rows + 1, limits.max_rows)?;
        on_event(ParseEvent::Row {
            sheet: 0,
            index: sheet.rows,
            values: Cow::Borrowed(&row),
        })
        .map_err(ParseFailure::sink)?;
        sheet.rows += 1;
    }
    if !sheet.has_header() {
        return Err(ParseFailure::new(
            ParseErrorCode::EmptyFile,
            "the file holds no data: every line is blank",
        ));
    }
    let summary = sheet.finish();
    on_event(ParseEvent::SheetEnd(summary.clone())).map_err(ParseFailure::sink)?;
    Ok(ParseSummary {
        rows_total: summary.rows,
        sheets: vec![summary],
        skipped_parts: Vec::new(),
    })
}

fn csv_error(e: ::csv::Error, sheet: &SheetBuilder, limits: &ParseLimits) -> ParseFailure {
    let line = e.position().map(|p| p.line());
    match e.into_kind() {
        ::csv::ErrorKind::Io(io) if io.kind() == io::ErrorKind::FileTooLarge => ParseFailure::new(
            ParseErrorCode::CellTooLarge,
            format!(
                "after data row {}: a record runs past {} bytes (an unclosed quote?), cells are limited to {} bytes",
                sheet.rows,
                limits.max_cell_bytes.saturating_mul(4).max(16 * 1024 * 1024),
                limits.max_cell_bytes
            ),
        ),
        kind => ParseFailure::corrupt(format!("line {}: {kind:?}", line.unwrap_or(0))),
    }
}

/// Counts the bytes handed to the CSV reader and refuses to go further than `limit` past the
/// end of the last complete record.
struct RecordGuard {
    inner: Box<dyn Read>,
    consumed: Rc<Cell<u64>>,
    mark: Rc<Cell<u64>>,
    limit: u64,
}

impl Read for RecordGuard {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.consumed.get() - self.mark.get() > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                "record too large",
            ));
        }
        let n = self.inner.read(buf)?;
        self.consumed.set(self.consumed.get() + n as u64);
        Ok(n)
    }
}
