//! `parsed_sheets` and `parsed_rows`: the parse results users page through. Rows are bulk-loaded
//! with `COPY` in the transaction that completes the task, and read with keyset pagination on
//! `(source_file_id, sheet_index, row_index)`.

use sqlx::postgres::PgCopyIn;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq)]
pub struct Sheet {
    pub sheet_index: i32,
    pub name: String,
    pub hidden: bool,
    pub row_count: i64,
    pub columns: serde_json::Value,
    pub column_types: serde_json::Value,
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
        sheet.columns,
        sheet.column_types
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
        r#"SELECT sheet_index, name, hidden, row_count, columns, column_types
           FROM parsed_sheets WHERE source_file_id = $1 AND sheet_index = $2"#,
        source_file_id,
        sheet_index
    )
    .fetch_optional(db)
    .await
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub row_index: i64,
    pub values: serde_json::Value,
}

/// Up to `limit` rows of one sheet after `after` (exclusive), in order.
pub async fn page(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet_index: i32,
    after: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<Row>> {
    sqlx::query_as!(
        Row,
        r#"SELECT row_index, "values" AS "values!"
           FROM parsed_rows
           WHERE source_file_id = $1 AND sheet_index = $2 AND row_index > $3
           ORDER BY row_index
           LIMIT $4"#,
        source_file_id,
        sheet_index,
        after.unwrap_or(-1),
        limit
    )
    .fetch_all(db)
    .await
}

/// Starts a `COPY` of rows into `parsed_rows`; feed it lines made by [`CopyLines`].
pub async fn copy_in(conn: &mut PgConnection) -> sqlx::Result<PgCopyIn<&mut PgConnection>> {
    conn.copy_in_raw(
        r#"COPY parsed_rows (source_file_id, sheet_index, row_index, "values") FROM STDIN"#,
    )
    .await
}

/// Writes rows of one source file in COPY's text format.
pub struct CopyLines {
    /// `<source_file_id>\t`, the same on every line: formatted once.
    prefix: String,
}

impl CopyLines {
    pub fn new(source_file_id: Uuid) -> Self {
        Self {
            prefix: format!("{source_file_id}\t"),
        }
    }

    /// Appends one row to `buf`. `values_json` is the row's JSON array text; backslashes are
    /// the only character JSON text can contain that COPY would reinterpret (JSON escapes
    /// control characters, so there are no raw tabs or newlines).
    pub fn push(&self, buf: &mut Vec<u8>, sheet_index: u32, row_index: u64, values_json: &str) {
        let mut numbers = itoa::Buffer::new();
        buf.extend_from_slice(self.prefix.as_bytes());
        buf.extend_from_slice(numbers.format(sheet_index).as_bytes());
        buf.push(b'\t');
        buf.extend_from_slice(numbers.format(row_index).as_bytes());
        buf.push(b'\t');
        for chunk in values_json.split_inclusive('\\') {
            buf.extend_from_slice(chunk.as_bytes());
            if chunk.ends_with('\\') {
                buf.push(b'\\');
            }
        }
        buf.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_lines_double_backslashes_and_nothing_else() {
        let mut buf = Vec::new();
        CopyLines::new(Uuid::nil()).push(&mut buf, 2, 7, r#"["a\"b","c\\d",null,"\n"]"#);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "00000000-0000-0000-0000-000000000000\t2\t7\t[\"a\\\\\"b\",\"c\\\\\\\\d\",null,\"\\\\n\"]\n"
        );
    }
}
