//! Parsed rows generated in bulk straight into Postgres, as the consumer would have stored them
//! (row chunks of 256 rows, error records, a `task.completed` event and a blob per file): the
//! `purge`, `keyset` and `row-store-migration` scenarios need tens of millions of stored rows in
//! seconds, not the hours parsing them would take.

use bytes::Bytes;

/// Rows per chunk, as the consumer stores them.
pub const CHUNK_ROWS: i64 = 256;
/// Error records per file.
pub const ERRORS_PER_FILE: i64 = 1000;

/// The columns of [`chunk_json`]'s rows, named and typed as the worker would have.
const COLUMNS: [&str; 8] = [
    "id", "code", "name", "qty", "amount", "date", "datetime", "active",
];
const COLUMN_TYPES: [&str; 8] = [
    "integer",
    "text",
    "text",
    "integer",
    "decimal",
    "date",
    "date_time",
    "boolean",
];

/// One stored chunk: 256 rows of 8 typed values, alike (lz4 compresses them as it would real
/// rows of one file, which repeat their shapes).
fn chunk_json() -> String {
    let rows: Vec<String> = (0..CHUNK_ROWS)
        .map(|i| {
            format!(
                r#"[{i},"C-{i:08}","customer name {i}",{q},{a}.25,"2026-01-{d:02}","2026-01-01 12:00:00",true]"#,
                q = i % 100,
                a = i * 3,
                d = i % 28 + 1
            )
        })
        .collect();
    format!("[{}]", rows.join(","))
}

/// Writes `files` COMPLETED files of `tenant`, `created_days_ago` old, with `rows` parsed rows
/// spread evenly over them, their error records, a `task.completed` event each and a blob each;
/// returns the files' ids.
pub async fn generate(
    env: &harness::worker::WorkerEnv,
    tenant: &str,
    files: i64,
    rows: i64,
    created_days_ago: i32,
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let ids = insert(&env.db, tenant, files, rows, created_days_ago).await?;
    for id in &ids {
        let body = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"a\n1\n"))]);
        env.blobs
            .upload(&format!("{tenant}/{id}"), "text/csv", body)
            .await?;
    }
    Ok(ids)
}

/// Rows per file and files per transaction of [`insert_many`].
const MANY_ROWS_PER_FILE: i64 = 100_000;
const MANY_FILES_PER_BATCH: i64 = 100;

/// Writes `rows` parsed rows of `tenant`, uploaded now, in files of 100k rows, 100 files a
/// transaction ([`insert`]: no blobs), as the crowd a scenario measures beside; returns the
/// first file's id.
pub async fn insert_many(db: &sqlx::PgPool, tenant: &str, rows: i64) -> anyhow::Result<uuid::Uuid> {
    let mut generated = 0;
    let mut first = None;
    while generated < rows {
        let batch = (rows - generated).min(MANY_FILES_PER_BATCH * MANY_ROWS_PER_FILE);
        let files = (batch / MANY_ROWS_PER_FILE).max(1);
        let ids = insert(db, tenant, files, batch, 0).await?;
        first.get_or_insert(ids[0]);
        generated += batch;
    }
    first.ok_or_else(|| anyhow::anyhow!("no rows asked for"))
}

/// [`generate`]'s rows, without the blobs: what a database needs, on any schema since the
/// row chunks. File ids are UUIDv7 of the files' upload time, as the api makes them, so old
/// files land in their month's partition (added first, where the row store is partitioned).
pub async fn insert(
    db: &sqlx::PgPool,
    tenant: &str,
    files: i64,
    rows: i64,
    created_days_ago: i32,
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let chunks_per_file = (rows / files / CHUNK_ROWS).max(1);
    let made = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .saturating_sub(std::time::Duration::from_secs(
            u64::try_from(created_days_ago)? * 86_400,
        ));
    let ids: Vec<uuid::Uuid> = (0..files)
        .map(|i| {
            let ms = made.as_millis() as u64 + i as u64;
            uuid::Uuid::new_v7(uuid::Timestamp::from_unix(
                uuid::NoContext,
                ms / 1000,
                (ms % 1000) as u32 * 1_000_000,
            ))
        })
        .collect();
    let partitioned: bool =
        sqlx::query_scalar("SELECT to_regproc('row_store_add_month') IS NOT NULL")
            .fetch_one(db)
            .await?;
    if partitioned {
        // The first and last files' months (one, unless the files straddle a month's end).
        let months = shared::db::row_store::Months::default();
        for id in [ids[0], ids[ids.len() - 1]] {
            months.ensure(db, id).await?;
        }
    }
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO source_files (id, tenant_id, file_name, content_type, format, size_bytes,
                                   sha256, blob_name, created_at)
         SELECT id, $2, 'bulk.csv', 'text/csv', 'csv', 100, repeat('0', 64),
                $2 || '/' || id, now() - make_interval(days => $3)
         FROM unnest($1::uuid[]) id",
    )
    .bind(&ids)
    .bind(tenant)
    .bind(created_days_ago)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO tasks (id, source_file_id, status, attempts, result, created_at, started_at,
                            finished_at)
         SELECT gen_random_uuid(), id, 'PENDING', 0, NULL, now(), NULL, NULL
         FROM unnest($1::uuid[]) id",
    )
    .bind(&ids)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO parsed_sheets (source_file_id, sheet_index, name, row_count, columns,
                                    column_types)
         SELECT id, 0, 'Sheet1', $2, $3::jsonb, $4::jsonb FROM unnest($1::uuid[]) id",
    )
    .bind(&ids)
    .bind(chunks_per_file * CHUNK_ROWS)
    .bind(serde_json::json!(COLUMNS))
    .bind(serde_json::json!(COLUMN_TYPES))
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO parsed_row_chunks (source_file_id, sheet_index, first_row, row_count, rows)
         SELECT id, 0, c * $3, $3::int, $4::json
         FROM unnest($1::uuid[]) id, generate_series(0, $2 - 1) c",
    )
    .bind(&ids)
    .bind(chunks_per_file)
    .bind(CHUNK_ROWS)
    .bind(chunk_json())
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO validation_errors (source_file_id, seq, sheet, row_number, field, value,
                                        code, message)
         SELECT id, s, 0, s + 2, 'amount', 'lots', 'type-error', 'not a number'
         FROM unnest($1::uuid[]) id, generate_series(0, $2 - 1) s",
    )
    .bind(&ids)
    .bind(ERRORS_PER_FILE)
    .execute(&mut *tx)
    .await?;
    // Completed as the consumer completes them: the trigger writes each task.completed event.
    sqlx::query(
        "UPDATE tasks SET status = 'COMPLETED', attempts = 1, result = '{}', started_at = now(),
                          finished_at = now()
         WHERE source_file_id = ANY($1)",
    )
    .bind(&ids)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(ids)
}
