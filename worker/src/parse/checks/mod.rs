//! The hostile-file checks, run before a reader opens a file: a zip's entries and inflation
//! ratios ([`zip`]), a legacy workbook's records ([`xls`]), and whether a compound file is an
//! encrypted workbook ([`cfb`]), so that a file built to exhaust the parser fails with a code
//! instead.

pub(super) mod cfb;
pub(super) mod xls;
pub(super) mod zip;
