//! CSV/TSV in one streaming pass: detect the encoding and the dialect from a sample (the
//! delimiter, `"` or `'` quotes, doubled or backslash-escaped, a space after every delimiter:
//! from the data, never the extension), decode incrementally (UTF-8 is read as is and only
//! validated), split records as the `csv` crate does ([`records`]: a bit-mask scan for
//! well-formed records, `csv_core`, its parser, for the rest; RFC 4180 quotes, embedded
//! newlines, CRLF/LF/CR), find the header among the first records ([`table`]), and emit each
//! row as a JSON array of strings while narrowing every column's type. Memory stays flat in the file size: the only
//! buffers are the sample, the decoder's chunks, the read buffer, one record and one 64 KiB
//! batch of rows ([`row`]).

mod masks;
mod records;
mod row;
mod spaced;
mod table;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;

use encoding_rs::UTF_8;

use records::Records;
use spaced::SpacesAfterDelimiters;
use table::Table;

use crate::parse::formats::delimiter;
use crate::parse::formats::delimiter::Quoting;
use crate::parse::formats::encoding;
use crate::parse::formats::Reading;
use crate::parse::table::sheet::{SheetBuilder, SheetId};
use crate::parse::{ParseEvent, ParseFailure, ParseLimits, ParseSummary, TaskErrorCode};

/// The name of the single sheet of a CSV/TSV file.
pub const CSV_SHEET_NAME: &str = "Sheet1";

/// Parses a text file. `tsv_hint` makes tab the delimiter when the sample has no delimiter at all.
pub(crate) fn parse(
    path: &Path,
    tsv_hint: bool,
    read: Reading<'_, '_, '_>,
    on_event: &mut dyn FnMut(ParseEvent<'_>) -> io::Result<()>,
) -> Result<ParseSummary, ParseFailure> {
    let Reading {
        limits,
        validation,
        layout,
    } = read;
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
    let quoting = Quoting::of(&decoded_sample);
    let spaced = delimiter::space_after(&decoded_sample, delimiter, quoting);
    drop(decoded_sample);

    let bom_len = detected.bom_len as u64;
    let mut cursor = Cursor::new(sample);
    cursor.set_position(bom_len);
    let raw = cursor.chain(file);
    let input: Box<dyn Read> = if detected.encoding == UTF_8 {
        Box::new(raw)
    } else {
        Box::new(encoding::decoding_reader(raw, detected.encoding))
    };
    let input: Box<dyn Read> = if spaced {
        Box::new(SpacesAfterDelimiters::new(input, delimiter, quoting))
    } else {
        input
    };
    let mut records =
        Records::new(input, delimiter, max_record_bytes(limits)).with_quoting(quoting);

    let id = SheetId {
        index: 0,
        name: CSV_SHEET_NAME.to_owned(),
        hidden: false,
    };
    on_event(id.start_event()).map_err(ParseFailure::sink)?;
    let mut validation = validation;
    if let Some(v) = validation.as_deref_mut() {
        v.reading_sheet(CSV_SHEET_NAME, false);
    }
    let mut table = Table::new(id, limits, validation, layout);
    // The record number a person sees (blank records count), for the header row and the
    // error report.
    let mut record_no = 0u64;
    loop {
        let record = match records.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(e) => return Err(read_error(e, &table.sheet, limits)),
        };
        record_no += 1 + record.blank_lines_before;
        table.record(&record, record_no, on_event)?;
    }
    let Some(summary) = table.finish(on_event)? else {
        return Err(ParseFailure::new(
            TaskErrorCode::EmptyFile,
            "the file holds no data: every line is blank",
        ));
    };
    on_event(ParseEvent::SheetEnd(summary.clone())).map_err(ParseFailure::sink)?;
    Ok(ParseSummary {
        rows_total: summary.rows,
        sheets: vec![summary],
        skipped_parts: Vec::new(),
        validation: None,
    })
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
