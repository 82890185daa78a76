//! The worker's tests that need no services, as one test binary (as `tests/it` is the
//! workspace's): the `worker` command line ([`cli`]) and the parsers on generated, real and
//! hostile files (`parse_*`, with the helpers of [`parse_support`]). One binary links the
//! worker once instead of once per file.

mod cli;
mod parse_csv;
mod parse_excel;
mod parse_forced;
mod parse_headers;
mod parse_hostile;
mod parse_isolation;
mod parse_ods;
mod parse_review;
mod parse_statistical;
mod parse_support;
mod parse_xls;
mod parse_xlsb;
mod parse_xlsx_cells;
