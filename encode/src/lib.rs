//! The export encoders, shared by the api's downloads and the worker's destinations: a sheet's
//! stored chunks written out as CSV, TSV or NDJSON ([`text`]) or as Parquet ([`parquet`]), each
//! cell read once from the stored JSON text ([`cells`]), CSV text made formula-safe
//! ([`csv_safe`]). No I/O here, so the same rows give the same bytes whoever encodes them: an
//! export downloaded from the api and a blob the worker writes are identical.

mod cells;
pub mod csv_safe;
pub mod parquet;
pub mod text;

use shared::domain::{column_type, ColumnType};

/// A stored row as the contract shows it: each value typed by its column, and as many values
/// as the sheet has columns (rows read before a longer, ragged row were stored shorter).
pub fn typed(
    values: serde_json::Value,
    types: &[ColumnType],
    width: usize,
) -> Vec<serde_json::Value> {
    let mut values = match values {
        serde_json::Value::Array(values) => values,
        other => vec![other],
    };
    if values.len() < width {
        values.resize(width, serde_json::Value::Null);
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| match types.get(i) {
            Some(&ty) => column_type::render(v, ty),
            None => v,
        })
        .collect()
}

/// The formats a sheet is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV with a header row, formula-safe.
    Csv,
    /// One JSON array of cell values per line.
    Ndjson,
    /// Apache Parquet, one typed column per sheet column.
    Parquet,
}

impl Format {
    /// `csv`, `ndjson` or `parquet`: the wire name and the file extension.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Ndjson => "ndjson",
            Format::Parquet => "parquet",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Format::Csv, Format::Ndjson, Format::Parquet]
            .into_iter()
            .find(|f| f.as_str() == s)
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Ndjson => "application/x-ndjson",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }
}

/// One sheet's encoder in any [`Format`]: the header, each stored chunk, then the end.
pub enum SheetEncoder {
    Text(text::Encoder),
    /// Boxed: the writer holds its row group state, far larger than the text encoder.
    Parquet(Box<parquet::ParquetEncoder>),
}

impl SheetEncoder {
    /// An encoder for a sheet of these columns.
    pub fn new(format: Format, names: Vec<String>, types: Vec<ColumnType>) -> Self {
        match format {
            Format::Parquet => {
                SheetEncoder::Parquet(Box::new(parquet::ParquetEncoder::new(&names, &types)))
            }
            Format::Csv | Format::Ndjson => SheetEncoder::Text(text::Encoder {
                format: if format == Format::Ndjson {
                    text::TextFormat::Ndjson
                } else {
                    text::TextFormat::Csv
                },
                types,
                columns: names,
            }),
        }
    }

    /// The bytes before the first row (CSV's header row).
    pub fn header(&self) -> Vec<u8> {
        match self {
            SheetEncoder::Text(e) => e.header(),
            SheetEncoder::Parquet(_) => Vec::new(),
        }
    }

    /// Appends the rows of one stored chunk (the JSON text of an array of rows).
    pub fn chunk(&mut self, rows_json: &str, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            SheetEncoder::Text(e) => e.chunk(rows_json, out),
            SheetEncoder::Parquet(e) => e.chunk(rows_json, out),
        }
    }

    /// The bytes after the last row (Parquet's last row group and footer).
    pub fn finish(self, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            SheetEncoder::Text(e) => out.extend_from_slice(e.finish()),
            SheetEncoder::Parquet(e) => (*e).finish(out)?,
        }
        Ok(())
    }
}
