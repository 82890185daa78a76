//! The bounds a parse must stay within. Defaults are generous enough that no real upload meets
//! them by accident (Excel's own sheet size, cells far larger than Excel allows) while still
//! stopping hostile files long before they exhaust the machine.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Limits applied to one parse. They travel to the isolated child as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseLimits {
    /// Data rows in the whole file (all sheets together).
    pub max_rows: u64,
    /// Columns in one sheet, extra columns of ragged rows included.
    pub max_columns: u32,
    /// Bytes of one cell's text.
    pub max_cell_bytes: usize,
    /// Zip formats: the inflated size of all entries may not exceed this multiple of the file's
    /// size (checked once the inflated total passes a small floor, so tiny files are never hit).
    pub max_inflate_ratio: u64,
    /// Zip formats: absolute cap on the inflated size of all entries.
    pub max_inflated_bytes: u64,
    /// Address space of the isolated child process (RLIMIT_AS).
    pub memory_limit_bytes: u64,
    /// Wall-clock deadline of the isolated child process.
    pub timeout: Duration,
}

/// Below this inflated size the ratio check does not apply: a 10 KB workbook that inflates to a
/// few megabytes is ordinary, not a bomb.
pub const INFLATE_RATIO_FLOOR: u64 = 16 * 1024 * 1024;

impl Default for ParseLimits {
    fn default() -> Self {
        Self {
            // Far above Excel's 1,048,576 rows per sheet: CSV exports of databases are larger.
            max_rows: 50_000_000,
            max_columns: 16_384,
            // Excel caps a cell at 32,767 characters; CSV cells holding whole documents exist.
            max_cell_bytes: 1024 * 1024,
            max_inflate_ratio: 100,
            max_inflated_bytes: 8 * 1024 * 1024 * 1024,
            memory_limit_bytes: 1024 * 1024 * 1024,
            timeout: Duration::from_secs(600),
        }
    }
}
