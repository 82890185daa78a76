//! The bounds a parse must stay within. Defaults are generous enough that no real upload meets
//! them by accident (Excel's own sheet size, cells far larger than Excel allows) while still
//! stopping hostile files long before they exhaust the machine. They are `worker run`'s
//! `PARSE_*` settings, flattened into its command line, and travel to the isolated child as JSON.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use shared::config::parse_duration;

/// Limits applied to one parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct ParseLimits {
    /// Maximum data rows in one file (all sheets)
    // Far above Excel's 1,048,576 rows per sheet: CSV exports of databases are larger.
    #[arg(
        long = "parse-max-rows",
        env = "PARSE_MAX_ROWS",
        default_value_t = 50_000_000
    )]
    pub max_rows: u64,

    /// Maximum columns in one sheet (extra columns of ragged rows included)
    #[arg(
        long = "parse-max-columns",
        env = "PARSE_MAX_COLUMNS",
        default_value_t = 16_384
    )]
    pub max_columns: u32,

    /// Maximum bytes of one cell's text
    // Excel caps a cell at 32,767 characters; CSV cells holding whole documents exist.
    #[arg(long = "parse-max-cell-bytes", env = "PARSE_MAX_CELL_BYTES", default_value_t = 1 << 20)]
    pub max_cell_bytes: usize,

    /// Zip formats: the most their entries may inflate to, as a multiple of the file's size
    /// (zip bombs; applies once the inflated total passes 16 MiB)
    #[arg(
        long = "parse-max-inflate-ratio",
        env = "PARSE_MAX_INFLATE_RATIO",
        default_value_t = 100
    )]
    pub max_inflate_ratio: u64,

    /// Zip formats: the most their entries may inflate to in all, in bytes
    #[arg(long = "parse-max-inflated-bytes", env = "PARSE_MAX_INFLATED_BYTES", default_value_t = 8 << 30)]
    pub max_inflated_bytes: u64,

    /// Address-space limit of the parser child process (RLIMIT_AS), in bytes
    #[arg(long = "parse-memory-limit", env = "PARSE_MEMORY_LIMIT", default_value_t = 1 << 30)]
    pub memory_limit_bytes: u64,

    /// Wall-clock limit of one parse
    #[arg(long = "parse-timeout", env = "PARSE_TIMEOUT", value_parser = parse_duration, default_value = "10m")]
    pub timeout: Duration,
}

/// Below this inflated size the ratio check does not apply: a 10 KB workbook that inflates to a
/// few megabytes is ordinary, not a bomb.
pub const INFLATE_RATIO_FLOOR: u64 = 16 * 1024 * 1024;

impl Default for ParseLimits {
    fn default() -> Self {
        shared::config::from_args(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let limits = ParseLimits::default();
        assert_eq!(limits.max_rows, 50_000_000);
        assert_eq!(limits.max_columns, 16_384);
        assert_eq!(limits.max_cell_bytes, 1024 * 1024);
        assert_eq!(limits.max_inflate_ratio, 100);
        assert_eq!(limits.max_inflated_bytes, 8 * 1024 * 1024 * 1024);
        assert_eq!(limits.memory_limit_bytes, 1024 * 1024 * 1024);
        assert_eq!(limits.timeout, Duration::from_secs(600));
    }
}
