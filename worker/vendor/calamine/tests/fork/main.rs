//! The fork's own integration tests (see `PATCH.md`): each patch's public entry point against
//! the stock code path it replaces or sits beside, on workbooks built in memory. Upstream's
//! suite reads binary fixtures that the crates.io package does not ship, so it is not here.

mod ods_stream;
mod shared_strings;
mod support;
mod xls_cells;
mod xlsx_scan;
