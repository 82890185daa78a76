//! A cheap look at an xls before calamine reads it. calamine loads every sheet of an xls at once
//! and reserves room for all the cells a sheet's DIMENSIONS record declares: a few-KB file that
//! declares 2^32 rows aborts the process on the failed allocation, and an honest-looking 65,536
//! × 256 declaration costs most of a gigabyte before a cell is read. This walks the `Workbook`
//! stream's record headers (type and length, four bytes each) and refuses declarations past the
//! limits or past what the parse child may hold, without decoding anything else.

use std::io::Read;
use std::path::Path;

use super::{ParseErrorCode, ParseFailure, ParseLimits};

/// BIFF record types this check reads.
const DIMENSIONS: u16 = 0x0200;
const BOF: u16 = 0x0809;

/// Files larger than this are left to the parse child's memory limit.
const CHECK_MAX_FILE: u64 = 4 << 20;

/// What calamine holds per declared cell while it loads a sheet (a `Cell<Data>`), rounded up.
const BYTES_PER_CELL: u64 = 48;

/// Refuses an xls whose sheets declare more rows, columns or cells than `limits` allow.
/// A file without a readable `Workbook` stream is left for calamine to report.
///
/// Only files up to [`CHECK_MAX_FILE`] are checked: the cfb crate re-walks a stream's sector
/// chain for every 8 KiB it reads, so reading a large stream is quadratic (an 18 MB workbook
/// took as long to check as to parse). The hostile case is the small file that declares a huge
/// grid; a large one that lies is still stopped by the parse child's memory limit.
pub(crate) fn check(path: &Path, limits: &ParseLimits) -> Result<(), ParseFailure> {
    if std::fs::metadata(path).map_or(true, |m| m.len() > CHECK_MAX_FILE) {
        return Ok(());
    }
    let Ok(mut book) = cfb::open(path) else {
        return Ok(());
    };
    let stream = book
        .open_stream("/Workbook")
        .or_else(|_| book.open_stream("/Book"));
    let Ok(mut stream) = stream else {
        return Ok(());
    };
    // One read of the whole (small) stream: calamine reads it whole too.
    let len = usize::try_from(stream.len()).unwrap_or(usize::MAX);
    let mut bytes = vec![0u8; len];
    stream
        .read_exact(&mut bytes)
        .map_err(|e| ParseFailure::corrupt(format!("cannot read the workbook: {e}")))?;
    let mut sheet = 0u32;
    let mut at = 0usize;
    while let Some(header) = bytes.get(at..at + 4) {
        let typ = u16::from_le_bytes([header[0], header[1]]);
        let len = usize::from(u16::from_le_bytes([header[2], header[3]]));
        let data = bytes.get(at + 4..at + 4 + len).unwrap_or(&[]);
        match typ {
            BOF => sheet += 1,
            // The first BOF opens the workbook globals; sheets are numbered from 1.
            DIMENSIONS => check_dimensions(data, sheet.saturating_sub(1), limits)?,
            _ => {}
        }
        at += 4 + len;
    }
    Ok(())
}

/// Checks one DIMENSIONS record: first row, last row + 1 (u32 in BIFF8, u16 before), first
/// column, last column + 1.
fn check_dimensions(data: &[u8], sheet: u32, limits: &ParseLimits) -> Result<(), ParseFailure> {
    let u16_at = |i: usize| {
        data.get(i..i + 2)
            .map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])))
    };
    let u32_at = |i: usize| {
        data.get(i..i + 4)
            .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    };
    let declared = match data.len() {
        10 => (u16_at(0), u16_at(2), u16_at(4), u16_at(6)),
        14 | 16 => (u32_at(0), u32_at(4), u16_at(8), u16_at(10)),
        // calamine reports other lengths itself.
        _ => return Ok(()),
    };
    let (Some(first_row), Some(end_row), Some(first_col), Some(end_col)) = declared else {
        return Ok(());
    };
    let rows = end_row.saturating_sub(first_row);
    let cols = end_col.saturating_sub(first_col);
    if rows > limits.max_rows.saturating_add(1) {
        return Err(ParseFailure::new(
            ParseErrorCode::TooManyRows,
            format!(
                "sheet {sheet} declares {rows} rows; at most {} data rows are allowed",
                limits.max_rows
            ),
        ));
    }
    if cols > u64::from(limits.max_columns) {
        return Err(ParseFailure::new(
            ParseErrorCode::TooManyColumns,
            format!(
                "sheet {sheet} declares {cols} columns; at most {} are allowed",
                limits.max_columns
            ),
        ));
    }
    // calamine reserves the whole declared grid up front; leave half the child's memory for
    // everything else.
    let cells = rows.saturating_mul(cols);
    if cells.saturating_mul(BYTES_PER_CELL) > limits.memory_limit_bytes / 2 {
        return Err(ParseFailure::new(
            ParseErrorCode::MemoryLimit,
            format!(
                "sheet {sheet} declares {rows} rows × {cols} columns; the xls reader would need \
                 {} MB for that grid before reading a cell",
                cells.saturating_mul(BYTES_PER_CELL) >> 20
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(first_row: u32, end_row: u32, first_col: u16, end_col: u16) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(&first_row.to_le_bytes());
        d.extend_from_slice(&end_row.to_le_bytes());
        d.extend_from_slice(&first_col.to_le_bytes());
        d.extend_from_slice(&end_col.to_le_bytes());
        d.extend_from_slice(&[0, 0]);
        d
    }

    fn code(data: &[u8]) -> &'static str {
        match check_dimensions(data, 1, &ParseLimits::default()) {
            Ok(()) => "ok",
            Err(f) => f.code.as_str(),
        }
    }

    #[test]
    fn declared_dimensions_are_held_to_the_limits() {
        assert_eq!(code(&dims(0, 1000, 0, 12)), "ok");
        assert_eq!(code(&dims(0, u32::MAX, 0, 1)), "too_many_rows");
        assert_eq!(code(&dims(0, 10, 0, 20_000)), "too_many_columns");
        // Within the row and column limits, but a grid calamine would reserve ~13 GB for.
        assert_eq!(code(&dims(0, 1_048_576, 0, 256)), "memory_limit");
        // BIFF5's short record, and lengths calamine reports itself.
        assert_eq!(code(&[0, 0, 10, 0, 0, 0, 5, 0, 0, 0]), "ok");
        assert_eq!(code(&[1, 2, 3]), "ok");
    }
}
