//! `file_keys`: a templated file's key index ([`crate::domain::key_index`]), written with its rows
//! and read and rewritten a bucket at a time by corrections.

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// One stored bucket of a key set.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    pub sheet: i32,
    pub slot: i32,
    pub bucket: i32,
    pub buckets: i32,
    pub entries: Vec<u8>,
}

/// Buckets written per statement.
const BATCH: usize = 500;

/// Stores a file's key index.
pub async fn insert(
    conn: &mut PgConnection,
    source_file_id: Uuid,
    buckets: &[Bucket],
) -> sqlx::Result<()> {
    for batch in buckets.chunks(BATCH) {
        sqlx::query!(
            r#"INSERT INTO file_keys (source_file_id, sheet, slot, bucket, buckets, entries)
               SELECT $1, * FROM UNNEST($2::int[], $3::int[], $4::int[], $5::int[], $6::bytea[])"#,
            source_file_id,
            &batch.iter().map(|b| b.sheet).collect::<Vec<_>>(),
            &batch.iter().map(|b| b.slot).collect::<Vec<_>>(),
            &batch.iter().map(|b| b.bucket).collect::<Vec<_>>(),
            &batch.iter().map(|b| b.buckets).collect::<Vec<_>>(),
            &batch.iter().map(|b| b.entries.clone()).collect::<Vec<_>>(),
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// How many buckets each key set of the sheet has: (slot, buckets).
pub async fn sets(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet: i32,
) -> sqlx::Result<Vec<(i32, i32)>> {
    let rows = sqlx::query!(
        "SELECT slot, buckets FROM file_keys
         WHERE source_file_id = $1 AND sheet = $2 AND bucket = 0",
        source_file_id,
        sheet
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.slot, r.buckets)).collect())
}

/// The buckets `wanted` (slot, bucket) of the sheet's key sets.
pub async fn fetch(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet: i32,
    wanted: &[(i32, i32)],
) -> sqlx::Result<Vec<Bucket>> {
    sqlx::query_as!(
        Bucket,
        r#"SELECT sheet, slot, bucket, buckets, entries FROM file_keys
           WHERE source_file_id = $1 AND sheet = $2
             AND (slot, bucket) IN (SELECT * FROM UNNEST($3::int[], $4::int[]))"#,
        source_file_id,
        sheet,
        &wanted.iter().map(|w| w.0).collect::<Vec<_>>(),
        &wanted.iter().map(|w| w.1).collect::<Vec<_>>(),
    )
    .fetch_all(db)
    .await
}

/// Replaces the entries of the given buckets.
pub async fn rewrite(
    conn: &mut PgConnection,
    source_file_id: Uuid,
    buckets: &[Bucket],
) -> sqlx::Result<()> {
    for batch in buckets.chunks(BATCH) {
        sqlx::query!(
            r#"UPDATE file_keys k SET entries = n.entries
               FROM UNNEST($2::int[], $3::int[], $4::int[], $5::bytea[])
                    AS n (sheet, slot, bucket, entries)
               WHERE k.source_file_id = $1 AND k.sheet = n.sheet AND k.slot = n.slot
                 AND k.bucket = n.bucket"#,
            source_file_id,
            &batch.iter().map(|b| b.sheet).collect::<Vec<_>>(),
            &batch.iter().map(|b| b.slot).collect::<Vec<_>>(),
            &batch.iter().map(|b| b.bucket).collect::<Vec<_>>(),
            &batch.iter().map(|b| b.entries.clone()).collect::<Vec<_>>(),
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
