//! CSV/TSV in one streaming pass: detect the encoding and the delimiter from a sample, decode
//! incrementally (UTF-8 is read as is and only validated), split records as the `csv` crate
//! does ([`records`]: a bit-mask scan for well-formed records, `csv_core`, its parser, for the
//! rest; RFC 4180 quotes, embedded newlines, CRLF/LF/CR), and emit each row as a JSON array of
//! strings while narrowing every column's type. Memory stays flat in the file size: the only
//! buffers are the sample, the decoder's chunks, the read buffer, one record and one 64 KiB
//! batch of rows ([`row`]).

mod masks;
mod records;
mod row;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;

use encoding_rs::UTF_8;

use records::Records;
use row::Rows;

use super::sheet::{check_cell, check_rows, ColumnTyping, SheetBuilder, SheetId};
use super::validate::Validation;
use super::{
    delimiter, encoding, json, ParseEvent, ParseFailure, ParseLimits, ParseSummary, TaskErrorCode,
};
use shared::template::Cell;

/// The name of the single sheet of a CSV/TSV file.
pub const CSV_SHEET_NAME: &str = "Sheet1";

/// Parses a text file. `tsv_hint` makes tab the delimiter when the sample has no delimiter at all.
pub(crate) fn parse(
    path: &Path,
    tsv_hint: bool,
    limits: &ParseLimits,
    mut validation: Option<&mut Validation<'_>>,
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
            TaskErrorCode::EmptyFile,
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
    let input: Box<dyn Read> = if detected.encoding == UTF_8 {
        Box::new(raw)
    } else {
        Box::new(encoding::DecodingReader::new(raw, detected.encoding))
    };
    let mut records = Records::new(input, delimiter, max_record_bytes(limits));

    let id = SheetId {
        index: 0,
        name: CSV_SHEET_NAME.to_owned(),
        hidden: false,
    };
    on_event(id.start_event()).map_err(ParseFailure::sink)?;
    let mut sheet = SheetBuilder::new(id, ColumnTyping::Inferred, limits.max_columns);

    // Rows' JSON is built as bytes and checked to be UTF-8 a batch at a time: cheaper than
    // checking each record and then slicing every cell out of it as `&str`.
    let mut row = Rows::default();
    // The record number a person sees (blank records count), for the header row and the
    // error report.
    let mut record_no = 0u64;
    loop {
        let record = match records.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(e) => return Err(read_error(e, &sheet, limits)),
        };
        record_no += 1 + record.blank_lines_before;
        // Blank lines and rows of empty fields carry nothing: skip them, but a template's
        // report names a blank row inside its table.
        if record.is_blank() && (validation.is_none() || !sheet.has_header()) {
            continue;
        }
        if !sheet.has_header() {
            let names: Vec<String> = (0..record.len())
                .map(|i| String::from_utf8_lossy(&record.bytes[record.range(i)]).into_owned())
                .collect();
            let raw = validation.is_some().then(|| names.clone());
            sheet.set_header(names, record_no)?;
            if let (Some(v), Some(raw)) = (validation.as_deref_mut(), raw) {
                v.start_sheet(&mut sheet, &raw, record_no, on_event)?;
            }
            continue;
        }
        if let Some(v) = validation.as_deref_mut() {
            templated_row(v, &mut sheet, record_no, &record, limits, on_event)?;
            continue;
        }
        let width = record.len();
        sheet.ensure_width(width)?;
        let bytes = record.bytes;
        // One scan tells whether any cell needs JSON escaping (most records: none).
        let escape = if record.quotes_enclose {
            json::needs_escape::<false>(bytes)
        } else {
            json::needs_escape::<true>(bytes)
        };
        // No cell can be longer than its record.
        let check_cells = bytes.len() > limits.max_cell_bytes;
        let cells = sheet.header_len().max(width);
        row.start(bytes.len(), cells);
        for (&(start, end), column) in record.spans().iter().zip(&mut sheet.columns_acc) {
            let cell = &bytes[start..end];
            if cell.is_empty() {
                row.null();
                continue;
            }
            if check_cells {
                check_cell(
                    cell.len(),
                    limits.max_cell_bytes,
                    &sheet.id.name,
                    sheet.rows,
                )?;
            }
            column.observe_text(cell);
            if escape && json::needs_escape::<true>(cell) {
                row.escaped_string(cell, bytes.len(), cells);
            } else {
                row.string(record.padded, start, end);
            }
        }
        for _ in width..sheet.header_len() {
            row.null();
        }
        check_rows(sheet.rows + 1, limits.max_rows)?;
        sheet.rows += 1;
        if row.finish() {
            emit(&mut row, sheet.rows, on_event)?;
        }
    }
    emit(&mut row, sheet.rows, on_event)?;
    if let Some(v) = validation {
        v.finish_sheet();
    }
    if !sheet.has_header() {
        return Err(ParseFailure::new(
            TaskErrorCode::EmptyFile,
            "the file holds no data: every line is blank",
        ));
    }
    let summary = sheet.finish();
    on_event(ParseEvent::SheetEnd(summary.clone())).map_err(ParseFailure::sink)?;
    Ok(ParseSummary {
        rows_total: summary.rows,
        sheets: vec![summary],
        skipped_parts: Vec::new(),
        validation: None,
    })
}

/// One data record of a templated file through the template: its cells as text (lossy where
/// the bytes are not UTF-8), its original cells as the plain parse would store them.
fn templated_row(
    v: &mut Validation<'_>,
    sheet: &mut SheetBuilder,
    record_no: u64,
    record: &records::Record<'_>,
    limits: &ParseLimits,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<(), ParseFailure> {
    let bytes = record.bytes;
    if bytes.len() > limits.max_cell_bytes {
        for &(start, end) in record.spans() {
            check_cell(
                end - start,
                limits.max_cell_bytes,
                &sheet.id.name,
                sheet.rows,
            )?;
        }
    }
    // The records read so far bound the data rows (rows dropped for errors count too).
    check_rows(record_no - 1, limits.max_rows)?;
    v.blank_rows_before(sheet, record_no, on_event)?;
    // Whole records are valid UTF-8 but for a file that only looked like UTF-8; its cells are
    // then each read lossily.
    let lossy: Vec<String>;
    let mut cells = v.cells();
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => cells.extend(
            record
                .spans()
                .iter()
                .map(|&(start, end)| text_cell(&text[start..end])),
        ),
        Err(_) => {
            lossy = record
                .spans()
                .iter()
                .map(|&(start, end)| String::from_utf8_lossy(&bytes[start..end]).into_owned())
                .collect();
            cells.extend(lossy.iter().map(|t| text_cell(t)));
        }
    }
    let original = |out: &mut String| {
        out.push('[');
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match cell {
                Cell::Text(t) => json::push_str(out, t),
                _ => out.push_str("null"),
            }
        }
        out.push(']');
    };
    let verdict = v.check(sheet.id.index, record_no, &cells, on_event)?;
    if !verdict.valid {
        v.reject(sheet.id.index, record_no, original, on_event)?;
    }
    v.recycle(cells);
    if verdict.store {
        v.store(sheet, on_event)?;
    }
    Ok(())
}

fn text_cell(text: &str) -> Cell<'_> {
    if text.is_empty() {
        Cell::Empty
    } else {
        Cell::Text(text)
    }
}

/// Hands the waiting rows on, numbered: they are the last of the sheet's `rows_so_far` rows.
fn emit(
    rows: &mut Rows,
    rows_so_far: u64,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<(), ParseFailure> {
    let mut next = rows_so_far - rows.waiting() as u64;
    rows.flush(|values| {
        let index = next;
        next += 1;
        on_event(ParseEvent::Row {
            sheet: 0,
            index,
            values,
        })
    })
    .map_err(ParseFailure::sink)
}

/// A record may not grow without bound (an unbalanced quote would otherwise swallow the whole
/// file into one field): reading fails past this many bytes in one record.
fn max_record_bytes(limits: &ParseLimits) -> usize {
    limits
        .max_cell_bytes
        .saturating_mul(4)
        .max(16 * 1024 * 1024)
}

fn read_error(e: io::Error, sheet: &SheetBuilder, limits: &ParseLimits) -> ParseFailure {
    if e.kind() == io::ErrorKind::FileTooLarge {
        return ParseFailure::new(
            TaskErrorCode::CellTooLarge,
            format!(
                "after data row {}: a record runs past {} bytes (an unclosed quote?), cells are limited to {} bytes",
                sheet.rows,
                max_record_bytes(limits),
                limits.max_cell_bytes
            ),
        );
    }
    ParseFailure::corrupt(format!(
        "after data row {}: cannot read the file: {e}",
        sheet.rows
    ))
}
