//! A cheap look at an xls before calamine reads it. calamine loads every sheet of an xls at once
//! and reserves room for all the cells a sheet's DIMENSIONS record declares: a few-KB file that
//! declares 2^32 rows aborts the process on the failed allocation, and an honest-looking 65,536
//! × 256 declaration costs most of a gigabyte before a cell is read. This follows the `Workbook`
//! stream's records the way calamine does (the globals up to their EOF, then each sheet from
//! the position its BOUNDSHEET8 record gives) reading only record headers and DIMENSIONS, and
//! refuses declarations past the limits or past what the parse child may hold. (Cells far apart
//! cost nothing more: the reader keeps a sheet's cells as a list, not as a grid.)

use std::io::Read;
use std::path::Path;

use crate::parse::{ParseFailure, ParseLimits, TaskErrorCode};

/// BIFF record types this check reads.
const DIMENSIONS: u16 = 0x0200;
const BOF: u16 = 0x0809;
const EOF: u16 = 0x000A;
const BOUNDSHEET8: u16 = 0x0085;

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
    check_stream(&bytes, limits)
}

/// Checks a workbook stream: its first record, then every sheet its globals name.
fn check_stream(stream: &[u8], limits: &ParseLimits) -> Result<(), ParseFailure> {
    // BIFF2–4 open with a BOF of another record type; calamine finds no sheets in them and
    // would report an empty workbook.
    if let Some((0x0009 | 0x0209 | 0x0409, _)) = Records(stream).next() {
        return Err(ParseFailure::new(
            TaskErrorCode::UnsupportedFormat,
            "an Excel 2.x–4.x (BIFF2–4) workbook: re-save it as .xlsx",
        ));
    }
    let positions: Vec<usize> = Records(stream)
        .take_while(|(typ, _)| *typ != EOF)
        .filter(|(typ, data)| *typ == BOUNDSHEET8 && data.len() >= 4)
        .map(|(_, data)| u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize)
        .collect();
    for (index, pos) in positions.into_iter().enumerate() {
        let sheet = stream.get(pos..).ok_or_else(|| {
            ParseFailure::corrupt(format!(
                "sheet {index} starts at byte {pos}, past the end of the workbook stream"
            ))
        })?;
        check_sheet(sheet, index, limits)?;
    }
    Ok(())
}

/// Checks one sheet substream's DIMENSIONS records, skipping nested substreams (embedded
/// charts) as calamine does.
fn check_sheet(sheet: &[u8], index: usize, limits: &ParseLimits) -> Result<(), ParseFailure> {
    let mut seen_bof = false;
    let mut depth = 0usize;
    for (typ, data) in Records(sheet) {
        match typ {
            BOF if seen_bof => depth += 1,
            BOF => seen_bof = true,
            EOF if depth == 0 => break,
            EOF => depth -= 1,
            _ if depth > 0 => {}
            DIMENSIONS => check_dimensions(data, index, limits)?,
            _ => {}
        }
    }
    Ok(())
}

/// BIFF records (type, data) from the start of `bytes`, until one does not fit.
struct Records<'a>(&'a [u8]);

impl<'a> Iterator for Records<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let header = self.0.get(..4)?;
        let typ = u16::from_le_bytes([header[0], header[1]]);
        let len = usize::from(u16::from_le_bytes([header[2], header[3]]));
        let data = self.0.get(4..4 + len)?;
        self.0 = &self.0[4 + len..];
        Some((typ, data))
    }
}

/// The grid calamine reserves for one DIMENSIONS record (first row, last row + 1, first
/// column, last column + 1; rows are u32 in BIFF8, u16 before), computed as calamine does:
/// a first column past 0xFF or past the last counts from 0, a zero end means one cell, and the
/// row count wraps as u32 arithmetic wraps in its release build. `None` for lengths calamine
/// refuses itself.
fn reserved_grid(data: &[u8]) -> Option<(u64, u64)> {
    let u16_at = |i: usize| u32::from(u16::from_le_bytes([data[i], data[i + 1]]));
    let u32_at = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    let (first_row, end_row, mut first_col, end_col) = match data.len() {
        10 => (u16_at(0), u16_at(2), u16_at(4), u16_at(6)),
        14 | 16 => (u32_at(0), u32_at(4), u16_at(8), u16_at(10)),
        _ => return None,
    };
    if first_col > 0xFF || end_col < first_col {
        first_col = 0;
    }
    if end_row == 0 || end_col == 0 {
        return Some((1, 1));
    }
    Some((
        u64::from(end_row.wrapping_sub(first_row)),
        u64::from(end_col - first_col),
    ))
}

fn check_dimensions(data: &[u8], sheet: usize, limits: &ParseLimits) -> Result<(), ParseFailure> {
    let Some((rows, cols)) = reserved_grid(data) else {
        return Ok(());
    };
    if rows > limits.max_rows.saturating_add(1) {
        return Err(ParseFailure::new(
            TaskErrorCode::TooManyRows,
            format!(
                "sheet {sheet} declares {rows} rows; at most {} data rows are allowed",
                limits.max_rows
            ),
        ));
    }
    if cols > u64::from(limits.max_columns) {
        return Err(ParseFailure::new(
            TaskErrorCode::TooManyColumns,
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
            TaskErrorCode::MemoryLimit,
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

    #[test]
    fn the_reserved_grid_is_computed_as_the_reader_computes_it() {
        assert_eq!(reserved_grid(&dims(2, 12, 1, 4)), Some((10, 3)));
        assert_eq!(reserved_grid(&dims(0, 0, 0, 0)), Some((1, 1)));
        assert_eq!(
            reserved_grid(&dims(10, 5, 0, 1)),
            Some((u64::from(u32::MAX) - 4, 1))
        );
        assert_eq!(reserved_grid(&dims(0, 1, 0x100, 0x200)), Some((1, 0x200)));
        assert_eq!(reserved_grid(&dims(0, 1, 8, 4)), Some((1, 4)));
        assert_eq!(reserved_grid(&[0; 12]), None);
    }
}
