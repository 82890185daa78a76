//! The export encoders: a sheet's stored chunks written out as CSV, TSV or NDJSON ([`text`]) or
//! as Parquet ([`parquet`]), each cell read once from the stored JSON text ([`cells`]). No HTTP
//! here: `routes::export` streams what they write.

pub(crate) mod cells;
pub(crate) mod parquet;
pub(crate) mod text;
