//! `validation_errors` and `rejected_rows`: a templated upload's error report, stored with the
//! task's outcome in one transaction, read back in file order with keyset pagination on `seq`.

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::domain::ErrorRecord;

/// A stored error record with its place in the report (its keyset cursor).
#[derive(Debug, Clone, PartialEq)]
pub struct Numbered {
    pub seq: i32,
    pub record: ErrorRecord,
}

/// A page's row as both reports read it (the upload's, [`page`], and a revision's,
/// `corrections::errors_page`): a record's columns named as its fields, and its cursor.
pub(super) struct NumberedRow {
    pub seq: i32,
    pub sheet: i32,
    pub row: i64,
    pub column: Option<String>,
    pub field: Option<String>,
    pub value: Option<String>,
    pub code: String,
    pub constraint: Option<String>,
    pub message: String,
    pub transformed: Option<String>,
}

impl From<NumberedRow> for Numbered {
    fn from(r: NumberedRow) -> Self {
        Numbered {
            seq: r.seq,
            record: ErrorRecord {
                sheet: r.sheet,
                row: r.row,
                column: r.column,
                field: r.field,
                value: r.value,
                code: r.code,
                constraint: r.constraint,
                message: r.message,
                transformed: r.transformed,
            },
        }
    }
}

/// A rejected row's original cells (texts in the file's own columns).
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedRow {
    pub sheet: i32,
    pub row_number: i64,
    // Free-form: the row's original cells as the file's reader gave them (a JSON array of
    // texts, numbers, booleans, nulls), exported as they are.
    pub cells: serde_json::Value,
    /// How many of the sheet's rows were stored before it (`None`: parsed before this was kept).
    pub stored_index: Option<i64>,
}

/// Rows written per statement: the records arrive as arrays, one round trip per batch.
const BATCH: usize = 2000;

/// Stores a file's error records, in file order (numbered from 0 in that order), and its
/// rejected rows.
pub async fn insert(
    conn: &mut PgConnection,
    source_file_id: Uuid,
    errors: &[ErrorRecord],
    rejected: &[RejectedRow],
) -> sqlx::Result<()> {
    for (n, batch) in errors.chunks(BATCH).enumerate() {
        let first = n * BATCH;
        let seqs = (first..first + batch.len())
            .map(|seq| i32::try_from(seq).unwrap_or(i32::MAX))
            .collect::<Vec<_>>();
        let col = |f: fn(&ErrorRecord) -> Option<String>| batch.iter().map(f).collect::<Vec<_>>();
        sqlx::query!(
            r#"INSERT INTO validation_errors (source_file_id, seq, sheet, row_number, column_name,
                   field, value, code, constraint_name, message, transformed)
               SELECT $1, * FROM UNNEST($2::int[], $3::int[], $4::bigint[], $5::text[],
                   $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])"#,
            source_file_id,
            &seqs,
            &batch.iter().map(|e| e.sheet).collect::<Vec<_>>(),
            &batch.iter().map(|e| e.row).collect::<Vec<_>>(),
            &col(|e| e.column.clone()) as &[Option<String>],
            &col(|e| e.field.clone()) as &[Option<String>],
            &col(|e| e.value.clone()) as &[Option<String>],
            &batch.iter().map(|e| e.code.clone()).collect::<Vec<_>>(),
            &col(|e| e.constraint.clone()) as &[Option<String>],
            &batch.iter().map(|e| e.message.clone()).collect::<Vec<_>>(),
            &col(|e| e.transformed.clone()) as &[Option<String>],
        )
        .execute(&mut *conn)
        .await?;
    }
    for batch in rejected.chunks(BATCH) {
        sqlx::query!(
            r#"INSERT INTO rejected_rows (source_file_id, sheet, row_number, cells, stored_index)
               SELECT $1, * FROM UNNEST($2::int[], $3::bigint[], $4::jsonb[], $5::bigint[])"#,
            source_file_id,
            &batch.iter().map(|r| r.sheet).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.row_number).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.cells.clone()).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.stored_index).collect::<Vec<_>>() as &[Option<i64>],
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Up to `limit` error records after `after` (a `seq`), in file order, optionally only those of
/// one field and/or one code.
pub async fn page(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    after: Option<i32>,
    limit: i64,
    field: Option<&str>,
    code: Option<&str>,
) -> sqlx::Result<Vec<Numbered>> {
    let rows = sqlx::query_as!(
        NumberedRow,
        r#"SELECT seq, sheet, row_number AS "row", column_name AS "column", field, value, code,
                  constraint_name AS "constraint", message, transformed
           FROM validation_errors
           WHERE source_file_id = $1 AND seq > $2
             AND ($3::text IS NULL OR field = $3) AND ($4::text IS NULL OR code = $4)
           ORDER BY seq LIMIT $5"#,
        source_file_id,
        after.unwrap_or(-1),
        field,
        code,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Numbered::from).collect())
}
