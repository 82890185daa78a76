//! `purge`: retention and a tenant purge of a tenant with many stored rows (`BENCH_PURGE_ROWS`,
//! default 10M; 200k with `--quick`), generated in bulk straight into Postgres (row chunks of
//! 256 rows as the consumer stores them, error records, events, a blob per file) beside a
//! second tenant that must come out untouched. Half of the tenant's files are past its
//! retention: the retention job removes those, then a purge removes the rest and everything else
//! the tenant owns. Both run through the worker's own job functions; every statement is one
//! transaction, timed, and the longest is the longest a lock was held. Ends by checking that
//! nothing of the tenant is left (rows, error records, events, blobs).

use std::time::Instant;

use anyhow::ensure;
use bytes::Bytes;
use worker::lifecycle::{purge, retention, LifecycleConfig, Pace, Progress};

use crate::env::{count, fresh_env};
use crate::report::Run;

/// Files the tenant's rows are spread over.
const FILES: i64 = 100;
/// Rows per chunk, as the consumer stores them.
const CHUNK_ROWS: i64 = 256;
/// Error records per file.
const ERRORS_PER_FILE: i64 = 1000;

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
/// spread evenly over them, their error records, a `task.completed` event each and a blob each.
async fn generate(
    env: &harness::worker::WorkerEnv,
    tenant: &str,
    files: i64,
    rows: i64,
    created_days_ago: i32,
) -> anyhow::Result<()> {
    let chunks_per_file = (rows / files / CHUNK_ROWS).max(1);
    let ids: Vec<uuid::Uuid> = (0..files).map(|_| uuid::Uuid::now_v7()).collect();
    let mut tx = env.db.begin().await?;
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
         SELECT id, 0, 'Sheet1', $2, '[]', '[]' FROM unnest($1::uuid[]) id",
    )
    .bind(&ids)
    .bind(chunks_per_file * CHUNK_ROWS)
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
    for id in &ids {
        let body = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"a\n1\n"))]);
        env.blobs
            .upload(&format!("{tenant}/{id}"), "text/csv", body)
            .await?;
    }
    Ok(())
}

pub async fn run(rows: i64) -> anyhow::Result<Run> {
    let env = fresh_env().await;
    let t0 = Instant::now();
    // Half the files past the retention, half young; a neighbour with files as old.
    generate(&env, "bulk", FILES / 2, rows / 2, 400).await?;
    generate(&env, "bulk", FILES / 2, rows / 2, 0).await?;
    generate(&env, "neighbour", 2, 2 * CHUNK_ROWS * 10, 400).await?;
    let generated_s = t0.elapsed().as_secs_f64();
    let stored = |sql: &'static str| count(&env.db, sql);
    let chunks = stored("SELECT count(*) FROM parsed_row_chunks").await?;
    let mut run = Run::default();
    run.note(format!(
        "purge: {rows} parsed rows of one tenant ({FILES} files, {chunks} row chunks in all, {ERRORS_PER_FILE} error records and an event per file) generated in SQL in {generated_s:.0} s; retention removes the half past 30d, then a purge the rest and every other row of the tenant; LIFECYCLE_BATCH default; longest_statement = the longest single transaction (and lock) of the run"
    ));
    sqlx::query("INSERT INTO tenant_limits (tenant_id, retention_secs) VALUES ('bulk', 2592000)")
        .execute(&env.db)
        .await?;

    let cfg = LifecycleConfig::default();
    let mut pace = Pace::new(cfg.batch);
    let started = Instant::now();
    let (removed, progress) = retention::run_once(&env.db, &env.blobs, &cfg, &mut pace).await?;
    ensure!(
        progress == Progress::Done && removed == (FILES / 2) as u64,
        "retention removed {removed}"
    );
    run.put("retention_s", "s", started.elapsed().as_secs_f64());
    run.put("retention_statements", "", pace.statements as f64);
    run.put(
        "retention_longest_statement",
        "ms",
        pace.longest.as_secs_f64() * 1e3,
    );

    let mut tx = env.db.begin().await?;
    shared::db::purges::request(&mut tx, "bulk").await?;
    tx.commit().await?;
    let mut pace = Pace::new(cfg.batch);
    let started = Instant::now();
    let (purged, progress) = purge::run_once(&env.db, &env.blobs, &mut pace).await?;
    ensure!(
        progress == Progress::Done && purged.iter().all(|p| p.finished),
        "purge did not finish: {purged:?}"
    );
    run.put("purge_s", "s", started.elapsed().as_secs_f64());
    run.put("purge_statements", "", pace.statements as f64);
    run.put(
        "purge_longest_statement",
        "ms",
        pace.longest.as_secs_f64() * 1e3,
    );

    // Nothing of the tenant left; the neighbour whole.
    let left = stored("SELECT count(*) FROM source_files WHERE tenant_id = 'bulk'").await?
        + stored("SELECT count(*) FROM events WHERE tenant_id = 'bulk'").await?
        + stored(
            "SELECT count(*) FROM parsed_row_chunks c
             WHERE NOT EXISTS (SELECT 1 FROM source_files f WHERE f.id = c.source_file_id)",
        )
        .await?
        + stored(
            "SELECT count(*) FROM validation_errors e
             WHERE NOT EXISTS (SELECT 1 FROM source_files f WHERE f.id = e.source_file_id)",
        )
        .await?;
    let blobs_left = env
        .blobs
        .list_names()
        .await?
        .iter()
        .filter(|n| n.starts_with("bulk/"))
        .count();
    run.put("rows_left_behind", "", left as f64);
    run.put("blobs_left_behind", "", blobs_left as f64);
    let neighbour = stored(
        "SELECT count(*) FROM parsed_row_chunks c JOIN source_files f ON f.id = c.source_file_id
         WHERE f.tenant_id = 'neighbour'",
    )
    .await?;
    ensure!(
        neighbour == 20,
        "the neighbour lost rows: {neighbour} chunks of 20"
    );
    ensure!(
        left == 0 && blobs_left == 0,
        "left behind: {left} rows, {blobs_left} blobs"
    );
    Ok(run)
}
