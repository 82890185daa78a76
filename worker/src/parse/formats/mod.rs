//! The formats an upload may be, each read its own way until its cells are decoded: what the
//! bytes say the file is ([`sniff`]), CSV/TSV with its encoding and dialect ([`csv`],
//! [`encoding`], [`delimiter`]), and workbooks through calamine ([`excel`], with how its cells
//! and errors are turned into ours). What every format shares after that is the table
//! ([`super::table`]).

pub mod csv;
pub(super) mod delimiter;
pub(super) mod encoding;
pub(super) mod excel;
pub(super) mod excel_error;
pub(super) mod excel_value;
pub(super) mod sniff;
