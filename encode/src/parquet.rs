//! A sheet as Parquet, with the Apache Arrow project's writer: one column per sheet column, typed
//! as the contract says (integer → INT64, decimal → DOUBLE, boolean → BOOLEAN, date → DATE,
//! date-time → TIMESTAMP in microseconds, text and mixed → UTF8), snappy-compressed. Rows are
//! gathered into Arrow arrays [`BATCH_ROWS`] at a time and written into row groups of
//! [`ROW_GROUP_ROWS`]; the writer's output is taken out of its buffer after every batch, so
//! memory holds one row group being encoded, whatever the sheet's size.
//!
//! Dictionary encoding is chosen per column from the first batch: a column whose first
//! [`BATCH_ROWS`] values are mostly distinct (an id, a name, an email) is written plainly. The
//! writer's default tries a dictionary for every column of every row group and gives up on it
//! once it passes 1 MiB, so such a column was hashed and interned for nothing: the interner and
//! its hash tables were about 8 % of the api's samples over a `bench export` of the three
//! formats (`perf`), nearly all of them in the Parquet export, and the abandoned dictionaries
//! part of its memory.
//!
//! A cell whose stored value does not fit its column's type (inference never makes one; a
//! templated upload with `keep_invalid_rows` keeps a failing cell's original text) is null
//! here: the error report has it. Date-times with an offset are written as their UTC instant;
//! those without one as they are.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Date32Builder, Float64Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::cast::AsArray as _;
use arrow_array::types::{Date32Type, Float64Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use chrono::Datelike as _;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use serde_json::Value;
use shared::domain::column_type::{self, Rendered};
use shared::domain::ColumnType;

use super::cells::{Cell, Cells};

/// Rows per Arrow batch handed to the writer.
const BATCH_ROWS: usize = 8192;
/// Rows per Parquet row group: what the writer holds before it writes them out.
const ROW_GROUP_ROWS: usize = 64 * 1024;

/// One column's values being gathered.
enum Column {
    Integer(Int64Builder),
    Decimal(Float64Builder),
    Boolean(BooleanBuilder),
    Date(Date32Builder),
    DateTime(TimestampMicrosecondBuilder),
    Text(StringBuilder),
}

/// A stored cell as the columns read it.
enum Scalar<'a> {
    Null,
    Bool(bool),
    /// A JSON number's text.
    Number(&'a str),
    Str(Cow<'a, str>),
    /// An array or object: its JSON text.
    Nested(&'a str),
}

/// Turns stored chunks into a Parquet file.
pub struct ParquetEncoder {
    /// Made at the first batch, whose values choose each column's encoding.
    writer: Option<ArrowWriter<Vec<u8>>>,
    schema: SchemaRef,
    columns: Vec<Column>,
    rows: usize,
}

impl ParquetEncoder {
    pub fn new(names: &[String], types: &[ColumnType]) -> Self {
        let types: Vec<ColumnType> = (0..names.len())
            .map(|i| types.get(i).copied().unwrap_or(ColumnType::Text))
            .collect();
        let fields: Vec<Field> = unique_names(names)
            .into_iter()
            .zip(&types)
            .map(|(name, ty)| Field::new(name, data_type(*ty), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        ParquetEncoder {
            writer: None,
            schema,
            columns: types.iter().map(|ty| Column::new(*ty)).collect(),
            rows: 0,
        }
    }

    /// The writer, its dictionary encoding enabled only for the columns of `first` (the first
    /// batch) whose values repeat.
    fn writer_for(schema: &SchemaRef, first: &[ArrayRef]) -> io::Result<ArrowWriter<Vec<u8>>> {
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
        for (field, array) in schema.fields().iter().zip(first) {
            if !repeats(array) {
                props = props
                    .set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), false);
            }
        }
        ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props.build()))
            .map_err(io::Error::other)
    }

    /// Adds every row of one stored chunk; appends to `out` what the writer has written.
    pub fn chunk(&mut self, rows_json: &str, out: &mut Vec<u8>) -> io::Result<()> {
        match Cells::of(rows_json) {
            Some(cells) => {
                for row in cells.rows() {
                    for (i, column) in self.columns.iter_mut().enumerate() {
                        let scalar = match row.get(i) {
                            Some(&cell) => Scalar::of_cell(cell)?,
                            None => Scalar::Null,
                        };
                        column.push(scalar);
                    }
                    self.row_done(out)?;
                }
            }
            None => {
                // A chunk the fast split does not take (see `cells`): through serde_json.
                let rows: Vec<Value> = serde_json::from_str(rows_json).map_err(io::Error::other)?;
                for row in rows {
                    let cells = match row {
                        Value::Array(cells) => cells,
                        other => vec![other],
                    };
                    for (i, column) in self.columns.iter_mut().enumerate() {
                        let text;
                        let scalar = match cells.get(i) {
                            None | Some(Value::Null) => Scalar::Null,
                            Some(Value::Bool(b)) => Scalar::Bool(*b),
                            Some(Value::Number(n)) => {
                                text = n.to_string();
                                Scalar::Number(&text)
                            }
                            Some(Value::String(s)) => Scalar::Str(Cow::Borrowed(s)),
                            Some(nested) => {
                                text = nested.to_string();
                                Scalar::Nested(&text)
                            }
                        };
                        column.push(scalar);
                    }
                    self.row_done(out)?;
                }
            }
        }
        Ok(())
    }

    /// Writes the rows still gathered and the file's footer into `out`.
    pub fn finish(mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.write_batch(out)?;
        let mut writer = match self.writer {
            Some(writer) => writer,
            // No rows: a file with the columns and no row group.
            None => Self::writer_for(&self.schema, &[])?,
        };
        writer.finish().map_err(io::Error::other)?;
        out.append(writer.inner_mut());
        Ok(())
    }

    fn row_done(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.rows += 1;
        if self.rows >= BATCH_ROWS {
            self.write_batch(out)?;
        }
        Ok(())
    }

    fn write_batch(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.columns.iter_mut().map(Column::finish).collect();
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self.writer.insert(Self::writer_for(&self.schema, &arrays)?),
        };
        let batch = RecordBatch::try_new(self.schema.clone(), arrays).map_err(io::Error::other)?;
        writer.write(&batch).map_err(io::Error::other)?;
        self.rows = 0;
        out.append(writer.inner_mut());
        Ok(())
    }
}

/// Whether a column's values repeat enough for a dictionary: at most half of them distinct.
fn repeats(array: &ArrayRef) -> bool {
    fn few<T: std::hash::Hash + Eq>(values: impl Iterator<Item = Option<T>>) -> bool {
        let (mut seen, mut count) = (std::collections::HashSet::new(), 0usize);
        for value in values.flatten() {
            seen.insert(value);
            count += 1;
        }
        seen.len() * 2 <= count
    }
    match array.data_type() {
        DataType::Utf8 => few(array.as_string::<i32>().iter()),
        DataType::Int64 => few(array.as_primitive::<Int64Type>().iter()),
        DataType::Float64 => few(array
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.map(f64::to_bits))),
        DataType::Date32 => few(array.as_primitive::<Date32Type>().iter()),
        DataType::Timestamp(..) => few(array.as_primitive::<TimestampMicrosecondType>().iter()),
        // Booleans are never dictionary-encoded.
        _ => true,
    }
}

/// Column names as Parquet readers want them: unique (a repeated name gets `_2`, `_3`, …).
fn unique_names(names: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names
        .iter()
        .map(|name| {
            let mut candidate = name.clone();
            let mut n = 1;
            while !seen.insert(candidate.clone()) {
                n += 1;
                candidate = format!("{name}_{n}");
            }
            candidate
        })
        .collect()
}

fn data_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Integer => DataType::Int64,
        ColumnType::Decimal => DataType::Float64,
        ColumnType::Boolean => DataType::Boolean,
        ColumnType::Date => DataType::Date32,
        ColumnType::DateTime => DataType::Timestamp(TimeUnit::Microsecond, None),
        ColumnType::Text | ColumnType::Mixed => DataType::Utf8,
    }
}

impl<'a> Scalar<'a> {
    fn of_cell(cell: (&'a str, bool)) -> io::Result<Scalar<'a>> {
        Ok(match Cell::of(cell)? {
            Cell::Literal("true") => Scalar::Bool(true),
            Cell::Literal("false") => Scalar::Bool(false),
            Cell::Literal(_) => Scalar::Null,
            Cell::Str(s, _) => Scalar::Str(s),
            Cell::Other(text) if text.starts_with(['[', '{']) => Scalar::Nested(text),
            Cell::Other(text) => Scalar::Number(text),
        })
    }
}

impl Column {
    fn new(ty: ColumnType) -> Column {
        let n = BATCH_ROWS;
        match ty {
            ColumnType::Integer => Column::Integer(Int64Builder::with_capacity(n)),
            ColumnType::Decimal => Column::Decimal(Float64Builder::with_capacity(n)),
            ColumnType::Boolean => Column::Boolean(BooleanBuilder::with_capacity(n)),
            ColumnType::Date => Column::Date(Date32Builder::with_capacity(n)),
            ColumnType::DateTime => Column::DateTime(TimestampMicrosecondBuilder::with_capacity(n)),
            ColumnType::Text | ColumnType::Mixed => {
                Column::Text(StringBuilder::with_capacity(n, n * 16))
            }
        }
    }

    fn push(&mut self, value: Scalar<'_>) {
        match self {
            Column::Integer(b) => b.append_option(match value {
                Scalar::Number(t) => t
                    .parse::<i64>()
                    .ok()
                    .or_else(|| t.parse::<f64>().ok().and_then(whole)),
                Scalar::Str(s) => match column_type::render_str(&s, ColumnType::Integer) {
                    Some(Rendered::Integer(i)) => Some(i),
                    _ => None,
                },
                _ => None,
            }),
            Column::Decimal(b) => b.append_option(match value {
                Scalar::Number(t) => t.parse::<f64>().ok(),
                Scalar::Str(s) => match column_type::render_str(&s, ColumnType::Decimal) {
                    Some(Rendered::Integer(i)) => Some(i as f64),
                    Some(Rendered::Decimal(f)) => Some(f),
                    _ => None,
                },
                _ => None,
            }),
            Column::Boolean(b) => b.append_option(match value {
                Scalar::Bool(v) => Some(v),
                Scalar::Str(s) => match column_type::render_str(&s, ColumnType::Boolean) {
                    Some(Rendered::Boolean(v)) => Some(v),
                    _ => None,
                },
                _ => None,
            }),
            // Typed straight from the stored text: through `render_str`'s ISO text and back,
            // a date column cost three times as much (perf of the 1M-row export).
            Column::Date(b) => b.append_option(match value {
                Scalar::Str(s) => {
                    column_type::parse_date(&s).map(|d| d.num_days_from_ce() - UNIX_EPOCH_DAY_CE)
                }
                _ => None,
            }),
            Column::DateTime(b) => b.append_option(match value {
                Scalar::Str(s) => column_type::datetime_micros(&s),
                _ => None,
            }),
            Column::Text(b) => match value {
                Scalar::Null => b.append_null(),
                Scalar::Bool(v) => b.append_value(if v { "true" } else { "false" }),
                Scalar::Number(t) | Scalar::Nested(t) => b.append_value(t),
                Scalar::Str(s) => b.append_value(s),
            },
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Column::Integer(b) => Arc::new(b.finish()),
            Column::Decimal(b) => Arc::new(b.finish()),
            Column::Boolean(b) => Arc::new(b.finish()),
            Column::Date(b) => Arc::new(b.finish()),
            Column::DateTime(b) => Arc::new(b.finish()),
            Column::Text(b) => Arc::new(b.finish()),
        }
    }
}

/// A whole number held as a float (`3.0`), as an integer.
fn whole(f: f64) -> Option<i64> {
    (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
}

/// Days from 0001-01-01 (chrono's day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAY_CE: i32 = 719_163;

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Date32Type, Float64Type, Int64Type, TimestampMicrosecondType};
    use arrow_array::Array as _;
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn encode(names: &[&str], types: &[ColumnType], chunks: &[&str]) -> RecordBatch {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut enc = ParquetEncoder::new(&names, types);
        let mut out = Vec::new();
        for chunk in chunks {
            enc.chunk(chunk, &mut out).expect("chunk");
        }
        enc.finish(&mut out).expect("finish");
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(out))
            .expect("a parquet file")
            .build()
            .expect("reader");
        let mut batches: Vec<RecordBatch> = reader.map(|b| b.expect("batch")).collect();
        assert_eq!(batches.len(), 1, "a small file is one batch");
        batches.remove(0)
    }

    #[test]
    fn each_type_is_written_as_its_parquet_type_and_read_back() {
        let types = [
            ColumnType::Integer,
            ColumnType::Decimal,
            ColumnType::Boolean,
            ColumnType::Date,
            ColumnType::DateTime,
            ColumnType::Text,
            ColumnType::Mixed,
        ];
        let batch = encode(
            &["i", "d", "b", "date", "ts", "t", "m"],
            &types,
            &[
                r#"[["1","1.5","true","2024-01-31","2024-01-31T09:05:00","a",1],[null,"2",false,null,"2024-01-31T09:05:00+09:00","=1+1",true]]"#,
                // Escapes and whitespace take the slow path.
                "[[ 3 , 2.25 , \"no\" , \"31/01/2024\" , null , \"x\\\"y\" , [1,2] ]]",
            ],
        );
        assert_eq!(batch.num_rows(), 3);
        let i = batch.column(0).as_primitive::<Int64Type>();
        assert_eq!((i.value(0), i.is_null(1), i.value(2)), (1, true, 3));
        let d = batch.column(1).as_primitive::<Float64Type>();
        assert_eq!((d.value(0), d.value(1), d.value(2)), (1.5, 2.0, 2.25));
        let b = batch.column(2).as_boolean();
        assert_eq!((b.value(0), b.value(1)), (true, false));
        let date = batch.column(3).as_primitive::<Date32Type>();
        assert_eq!(date.value(0), 19753);
        let ts = batch.column(4).as_primitive::<TimestampMicrosecondType>();
        assert_eq!(ts.value(0) - ts.value(1), 9 * 3600 * 1_000_000);
        let t = batch.column(5).as_string::<i32>();
        assert_eq!((t.value(0), t.value(1), t.value(2)), ("a", "=1+1", "x\"y"));
        let m = batch.column(6).as_string::<i32>();
        assert_eq!((m.value(0), m.value(1), m.value(2)), ("1", "true", "[1,2]"));
        assert_eq!(
            batch.schema().field(4).data_type(),
            &data_type(ColumnType::DateTime)
        );
    }

    /// A column whose values repeat keeps its dictionary; one of distinct values (and every
    /// column of an empty export, which writes no row group) is written plainly.
    #[test]
    fn only_columns_whose_values_repeat_get_a_dictionary() {
        use parquet::basic::Encoding;
        use parquet::file::reader::{FileReader as _, SerializedFileReader};
        let names: Vec<String> = ["id", "city", "amount"].map(String::from).to_vec();
        let types = [ColumnType::Integer, ColumnType::Text, ColumnType::Decimal];
        let rows: Vec<String> = (0..3 * BATCH_ROWS)
            .map(|i| format!(r#"["{i}","{}","{}.5"]"#, ["Oslo", "Rome"][i % 2], i % 3))
            .collect();
        let mut enc = ParquetEncoder::new(&names, &types);
        let mut out = Vec::new();
        for chunk in rows.chunks(256) {
            enc.chunk(&format!("[{}]", chunk.join(",")), &mut out)
                .expect("chunk");
        }
        enc.finish(&mut out).expect("finish");
        let file = SerializedFileReader::new(bytes::Bytes::from(out)).expect("a parquet file");
        let group = file.metadata().row_group(0);
        let dictionary: Vec<bool> = (0..3)
            .map(|c| {
                group
                    .column(c)
                    .encodings()
                    .any(|e| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY))
            })
            .collect();
        assert_eq!(dictionary, [false, true, true]);
        assert_eq!(
            file.metadata().file_metadata().num_rows(),
            3 * BATCH_ROWS as i64
        );

        let mut out = Vec::new();
        ParquetEncoder::new(&names, &types)
            .finish(&mut out)
            .expect("finish");
        let file = SerializedFileReader::new(bytes::Bytes::from(out)).expect("a parquet file");
        assert_eq!(file.metadata().num_row_groups(), 0);
        assert_eq!(
            file.metadata().file_metadata().schema_descr().num_columns(),
            3
        );
    }

    #[test]
    fn repeated_names_are_made_unique() {
        let batch = encode(&["a", "a", "a_2"], &[], &[r#"[["1","2","3"]]"#]);
        let names: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["a", "a_2", "a_2_2"]);
    }

    /// Dates and date-times as the CSV and NDJSON exports render them (ISO text, read back by
    /// chrono) are the values the Parquet columns hold, from year 0 to 9999 and in every form
    /// the recogniser takes.
    #[test]
    fn dates_and_date_times_hold_what_the_text_exports_render() {
        let as_parquet = |s: &str, ty| -> Option<i64> {
            let batch = encode(&["v"], &[ty], &[&format!(r#"[["{s}"]]"#)]);
            let column = batch.column(0);
            (!column.is_null(0)).then(|| match ty {
                ColumnType::Date => i64::from(column.as_primitive::<Date32Type>().value(0)),
                _ => column.as_primitive::<TimestampMicrosecondType>().value(0),
            })
        };
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        let rendered = |s: &str, ty| match column_type::render_str(s, ty) {
            Some(Rendered::Iso(t)) => Some(t.as_str().to_owned()),
            _ => None,
        };
        let instant = |iso: &str| {
            DateTime::parse_from_rfc3339(iso)
                .map(|t| t.timestamp_micros())
                .or_else(|_| {
                    NaiveDateTime::parse_from_str(iso, "%Y-%m-%dT%H:%M:%S%.f")
                        .map(|t| t.and_utc().timestamp_micros())
                })
                .ok()
        };
        let mut day = NaiveDate::from_ymd_opt(0, 1, 1).unwrap();
        while day.year() < 10_000 {
            let iso = day.format("%Y-%m-%d").to_string();
            let days = (day - epoch).num_days();
            assert_eq!(
                column_type::parse_date(&iso).map(|d| d.num_days_from_ce() - UNIX_EPOCH_DAY_CE),
                Some(i32::try_from(days).unwrap()),
                "{iso}"
            );
            let at = format!("{iso} 23:59:07");
            let expected = rendered(&at, ColumnType::DateTime).and_then(|t| instant(&t));
            assert!(expected.is_some(), "{at}");
            assert_eq!(column_type::datetime_micros(&at), expected, "{at}");
            day += chrono::Duration::days(if day.year() > 2100 { 97 } else { 1 });
        }
        for s in [
            "2024-01-31",
            "31/01/2024",
            "2024-01-31T09:05",
            "2024-01-31 09:05:00.250",
            "2024-01-31T09:05:00.123456789",
            "2024-01-31T09:05:00Z",
            "2024-01-31T09:05:00+09:00",
            "2024-01-31T09:05:00.5-05:30",
            "2024-01-31T24:00:00",
            "2024-02-30T09:05:00",
            "2024-01-31T09:05:00+24:00",
            "not a date",
        ] {
            let expected = rendered(s, ColumnType::DateTime).and_then(|t| instant(&t));
            assert_eq!(
                as_parquet(s, ColumnType::DateTime),
                expected,
                "{s} as a date-time"
            );
            let expected = rendered(s, ColumnType::Date)
                .and_then(|t| NaiveDate::parse_from_str(&t, "%Y-%m-%d").ok())
                .map(|d| (d - epoch).num_days());
            assert_eq!(as_parquet(s, ColumnType::Date), expected, "{s} as a date");
        }
    }
}
