//! `parsed_sheets` and `parsed_row_chunks`: the parse results users page through. Rows are
//! bulk-loaded in chunks with `COPY` in the transaction that completes the task, and read with
//! keyset pagination on their index within the sheet.

use sqlx::postgres::PgCopyIn;
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::domain::ColumnType;

#[derive(Debug, Clone, PartialEq)]
pub struct Sheet {
    pub sheet_index: i32,
    pub name: String,
    pub hidden: bool,
    pub row_count: i64,
    /// The columns' names and inferred types, one each (two JSON arrays), decoded when the row
    /// is read: a row the worker did not write (a bug or a hand edit) is an error there.
    pub columns: Json<Vec<String>>,
    pub column_types: Json<Vec<ColumnType>>,
}

/// A parsed sheet's columns: their names and the types inferred for them, one each, as the
/// worker stores them in `parsed_sheets.columns` and `column_types` (two JSON arrays).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SheetColumns {
    pub names: Vec<String>,
    pub types: Vec<ColumnType>,
}

impl Sheet {
    /// The sheet's columns.
    pub fn columns(&self) -> SheetColumns {
        SheetColumns {
            names: self.columns.0.clone(),
            types: self.column_types.0.clone(),
        }
    }
}

pub async fn insert_sheet(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet: &Sheet,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"INSERT INTO parsed_sheets
               (source_file_id, sheet_index, name, hidden, row_count, columns, column_types)
           VALUES ($1, $2, $3, $4, $5, $6, $7)"#,
        source_file_id,
        sheet.sheet_index,
        sheet.name,
        sheet.hidden,
        sheet.row_count,
        &sheet.columns as _,
        &sheet.column_types as _
    )
    .execute(db)
    .await?;
    Ok(())
}

pub async fn find_sheet(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet_index: i32,
) -> sqlx::Result<Option<Sheet>> {
    sqlx::query_as!(
        Sheet,
        r#"SELECT sheet_index, name, hidden, row_count, columns AS "columns: Json<Vec<String>>",
                  column_types AS "column_types: Json<Vec<ColumnType>>"
           FROM parsed_sheets WHERE source_file_id = $1 AND sheet_index = $2"#,
        source_file_id,
        sheet_index
    )
    .fetch_optional(db)
    .await
}

/// Every parsed sheet of a file, in index order.
pub async fn sheets(db: impl PgExecutor<'_>, source_file_id: Uuid) -> sqlx::Result<Vec<Sheet>> {
    sqlx::query_as!(
        Sheet,
        r#"SELECT sheet_index, name, hidden, row_count, columns AS "columns: Json<Vec<String>>",
                  column_types AS "column_types: Json<Vec<ColumnType>>"
           FROM parsed_sheets WHERE source_file_id = $1 ORDER BY sheet_index"#,
        source_file_id
    )
    .fetch_all(db)
    .await
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub row_index: i64,
    // Free-form: the file's data, one JSON value per cell, typed by the sheet's columns when
    // it is served.
    pub values: serde_json::Value,
}

/// Up to `limit` rows of one sheet after `after` (exclusive), in order: the rows of the chunks
/// that overlap the page, cut to it. The first of those chunks is the last one starting at or
/// before the page's first row (an index-only lookup).
pub async fn page(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet_index: i32,
    after: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<Row>> {
    let start = after.map_or(0, |a| a.saturating_add(1));
    let end = start.saturating_add(limit);
    let chunks = sqlx::query!(
        r#"SELECT first_row, "rows"::text AS "rows!"
           FROM parsed_row_chunks
           WHERE source_file_id = $1 AND sheet_index = $2 AND first_row < $4
             AND first_row >= COALESCE(
                 (SELECT max(first_row) FROM parsed_row_chunks
                  WHERE source_file_id = $1 AND sheet_index = $2 AND first_row <= $3), 0)
           ORDER BY first_row"#,
        source_file_id,
        sheet_index,
        start,
        end
    )
    .fetch_all(db)
    .await?;
    let mut rows = Vec::new();
    for chunk in chunks {
        let values: Vec<&serde_json::value::RawValue> =
            serde_json::from_str(&chunk.rows).map_err(|e| sqlx::Error::Decode(e.into()))?;
        for (row_index, raw) in (chunk.first_row..).zip(values) {
            if (start..end).contains(&row_index) {
                let values =
                    serde_json::from_str(raw.get()).map_err(|e| sqlx::Error::Decode(e.into()))?;
                rows.push(Row { row_index, values });
            }
        }
    }
    Ok(rows)
}

/// Starts a binary `COPY` of row chunks into `parsed_row_chunks`; feed it what [`CopyRows`]
/// writes.
pub async fn copy_in(conn: &mut PgConnection) -> sqlx::Result<PgCopyIn<&mut PgConnection>> {
    conn.copy_in_raw(
        r#"COPY parsed_row_chunks (source_file_id, sheet_index, first_row, row_count, "rows")
           FROM STDIN (FORMAT binary)"#,
    )
    .await
}

/// Writes the rows of one source file as chunks in COPY's binary format. A chunk holds up to
/// [`CopyRows::MAX_ROWS`] consecutive rows of one sheet, and stops growing past
/// [`CopyRows::MAX_BYTES`] of JSON: one tuple per row cost Postgres three times as much (see the
/// migration that made the chunks). Nothing is turned into text and back or escaped: the id and
/// numbers go as their bytes and the JSON (whose binary form is its text) as is.
pub struct CopyRows {
    source_file_id: [u8; 16],
    /// The open chunk: its sheet, its first row's index, its row count, and `[` plus its rows
    /// joined by commas.
    sheet_index: u32,
    first_row: u64,
    row_count: u32,
    json: String,
}

impl CopyRows {
    /// Rows per chunk: a 1,000-row page reads five chunks at most.
    pub const MAX_ROWS: u32 = 256;
    /// A chunk takes no further row once its JSON is this long (one row can exceed it).
    pub const MAX_BYTES: usize = 64 * 1024;

    pub fn new(source_file_id: Uuid) -> Self {
        Self {
            source_file_id: *source_file_id.as_bytes(),
            sheet_index: 0,
            first_row: 0,
            row_count: 0,
            json: String::new(),
        }
    }

    /// The header the data must start with: signature, no flags, no extension.
    pub fn begin(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        buf.extend_from_slice(&0u32.to_be_bytes());
        buf.extend_from_slice(&0u32.to_be_bytes());
    }

    /// Adds one row, `values_json` being its JSON array text; writes the open chunk to `buf`
    /// first when the row does not belong in it.
    pub fn push(&mut self, buf: &mut Vec<u8>, sheet_index: u32, row_index: u64, values_json: &str) {
        let follows = self.row_count > 0
            && sheet_index == self.sheet_index
            && row_index == self.first_row + u64::from(self.row_count);
        if !follows || self.row_count == Self::MAX_ROWS || self.json.len() >= Self::MAX_BYTES {
            self.write_chunk(buf);
            self.sheet_index = sheet_index;
            self.first_row = row_index;
            self.json.push('[');
        } else {
            self.json.push(',');
        }
        self.json.push_str(values_json);
        self.row_count += 1;
    }

    /// Writes the open chunk and the trailer that ends the data.
    pub fn end(&mut self, buf: &mut Vec<u8>) {
        self.write_chunk(buf);
        buf.extend_from_slice(&(-1i16).to_be_bytes());
    }

    /// Writes the open chunk, if it has rows, as one tuple of five fields, each as its length
    /// and its bytes; the chunk is then empty. A sheet index, a row index and a chunk's length
    /// (bounded by the parse limits) all fit their Postgres types.
    fn write_chunk(&mut self, buf: &mut Vec<u8>) {
        if self.row_count == 0 {
            return;
        }
        self.json.push(']');
        buf.extend_from_slice(&5i16.to_be_bytes());
        buf.extend_from_slice(&16i32.to_be_bytes());
        buf.extend_from_slice(&self.source_file_id);
        buf.extend_from_slice(&4i32.to_be_bytes());
        buf.extend_from_slice(&(self.sheet_index as i32).to_be_bytes());
        buf.extend_from_slice(&8i32.to_be_bytes());
        buf.extend_from_slice(&(self.first_row as i64).to_be_bytes());
        buf.extend_from_slice(&4i32.to_be_bytes());
        buf.extend_from_slice(&(self.row_count as i32).to_be_bytes());
        buf.extend_from_slice(&(self.json.len() as i32).to_be_bytes());
        buf.extend_from_slice(self.json.as_bytes());
        self.json.clear();
        self.row_count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What decoding a stored sheet's two JSON arrays into its [`Sheet`] fields gives.
    fn decode(
        columns: serde_json::Value,
        column_types: serde_json::Value,
    ) -> Result<SheetColumns, serde_json::Error> {
        Ok(SheetColumns {
            names: serde_json::from_value(columns)?,
            types: serde_json::from_value(column_types)?,
        })
    }

    #[test]
    fn columns_decode_from_what_the_worker_stores_and_a_bad_shape_is_an_error() {
        let good = decode(
            serde_json::json!(["id", "when"]),
            serde_json::json!(["integer", "date_time"]),
        );
        assert_eq!(
            good.expect("decodes"),
            SheetColumns {
                names: vec!["id".into(), "when".into()],
                types: vec![ColumnType::Integer, ColumnType::DateTime],
            }
        );
        let bad_type = decode(serde_json::json!(["id"]), serde_json::json!(["currency"]));
        assert!(bad_type.is_err());
        let not_a_list = decode(serde_json::json!({"id": 1}), serde_json::json!([]));
        assert!(not_a_list.is_err());
    }

    /// One chunk tuple as COPY's binary format has it.
    fn tuple(sheet: i32, first_row: i64, row_count: i32, json: &str) -> Vec<u8> {
        let mut t = vec![0, 5, 0, 0, 0, 16];
        t.extend_from_slice(Uuid::from_u128(1).as_bytes());
        for (len, value) in [
            (4i32, sheet.to_be_bytes().to_vec()),
            (8, first_row.to_be_bytes().to_vec()),
            (4, row_count.to_be_bytes().to_vec()),
        ] {
            t.extend_from_slice(&len.to_be_bytes());
            t.extend_from_slice(&value);
        }
        t.extend_from_slice(&(json.len() as i32).to_be_bytes());
        t.extend_from_slice(json.as_bytes());
        t
    }

    #[test]
    fn rows_are_written_as_chunks_in_copy_binary_format() {
        let mut rows = CopyRows::new(Uuid::from_u128(1));
        let mut buf = Vec::new();
        rows.begin(&mut buf);
        rows.push(&mut buf, 2, 7, r#"["a\"b"]"#);
        rows.push(&mut buf, 2, 8, "[1]");
        // Another sheet, then a gap in the row indexes, each start a chunk.
        rows.push(&mut buf, 3, 0, "[null]");
        rows.push(&mut buf, 3, 5, "[]");
        rows.end(&mut buf);
        let mut expected = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec();
        expected.extend(tuple(2, 7, 2, r#"[["a\"b"],[1]]"#));
        expected.extend(tuple(3, 0, 1, "[[null]]"));
        expected.extend(tuple(3, 5, 1, "[[]]"));
        expected.extend_from_slice(&[0xff, 0xff]);
        assert_eq!(buf, expected);
    }

    #[test]
    fn a_chunk_closes_at_its_row_or_byte_budget() {
        let mut rows = CopyRows::new(Uuid::from_u128(1));
        let mut buf = Vec::new();
        for i in 0..u64::from(CopyRows::MAX_ROWS) + 1 {
            rows.push(&mut buf, 0, i, "[0]");
        }
        let full = format!("[{}]", vec!["[0]"; CopyRows::MAX_ROWS as usize].join(","));
        assert_eq!(buf, tuple(0, 0, CopyRows::MAX_ROWS as i32, &full));

        let mut rows = CopyRows::new(Uuid::from_u128(1));
        let mut buf = Vec::new();
        let wide = format!("[\"{}\"]", "x".repeat(CopyRows::MAX_BYTES));
        rows.push(&mut buf, 0, 0, &wide);
        assert!(buf.is_empty(), "a chunk is written only when it is closed");
        rows.push(&mut buf, 0, 1, "[1]");
        assert_eq!(buf, tuple(0, 0, 1, &format!("[{wide}]")));
        buf.clear();
        rows.end(&mut buf);
        assert_eq!(&buf[..buf.len() - 2], tuple(0, 1, 1, "[[1]]"));
    }
}

/// One stored chunk: `row_count` consecutive rows from `first_row`, as the JSON text of an array
/// of the rows' arrays.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub first_row: i64,
    pub rows: String,
}

/// Every chunk of one sheet in row order, streamed as Postgres sends them, so an export of any
/// size holds one chunk at a time.
pub fn chunks<'e>(
    db: impl PgExecutor<'e> + 'e,
    source_file_id: Uuid,
    sheet_index: i32,
) -> futures::stream::BoxStream<'e, sqlx::Result<Chunk>> {
    sqlx::query_as!(
        Chunk,
        r#"SELECT first_row, "rows"::text AS "rows!"
           FROM parsed_row_chunks
           WHERE source_file_id = $1 AND sheet_index = $2
           ORDER BY first_row"#,
        source_file_id,
        sheet_index
    )
    .fetch(db)
}
