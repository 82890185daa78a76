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

/// Stores buckets of a file's key index, by a binary `COPY` as the rows are stored. Measured
/// (`BENCH_PG_STATEMENTS=1 bench templates`): the same buckets as `INSERT … SELECT FROM
/// UNNEST($bytea[])` in statements of 500 took Postgres 530 ms per 1M keys, a serial tail after
/// the rows' `COPY` of every templated file with a key.
pub async fn insert(
    conn: &mut PgConnection,
    source_file_id: Uuid,
    buckets: &[Bucket],
) -> sqlx::Result<()> {
    if buckets.is_empty() {
        return Ok(());
    }
    let mut copy = conn
        .copy_in_raw(
            "COPY file_keys (source_file_id, sheet, slot, bucket, buckets, entries)
             FROM STDIN (FORMAT binary)",
        )
        .await?;
    copy.send(copy_data(source_file_id, buckets)).await?;
    copy.finish().await?;
    Ok(())
}

/// `buckets` in `COPY`'s binary format: the signature, one tuple of six fields (each its
/// length and its big-endian bytes) per bucket, the trailer.
fn copy_data(source_file_id: Uuid, buckets: &[Bucket]) -> Vec<u8> {
    let bytes: usize = buckets.iter().map(|b| b.entries.len() + 64).sum();
    let mut buf = Vec::with_capacity(bytes + 32);
    super::rows::copy_binary_header(&mut buf);
    for b in buckets {
        buf.extend_from_slice(&6i16.to_be_bytes());
        buf.extend_from_slice(&16i32.to_be_bytes());
        buf.extend_from_slice(source_file_id.as_bytes());
        for n in [b.sheet, b.slot, b.bucket, b.buckets] {
            buf.extend_from_slice(&4i32.to_be_bytes());
            buf.extend_from_slice(&n.to_be_bytes());
        }
        let len = i32::try_from(b.entries.len()).unwrap_or(i32::MAX);
        buf.extend_from_slice(&len.to_be_bytes());
        buf.extend_from_slice(&b.entries);
    }
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    buf
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
