//! `purge`: retention and a tenant purge of a tenant with many stored rows (`BENCH_PURGE_ROWS`,
//! default 10M; 200k with `--quick`), generated in bulk straight into Postgres (row chunks of
//! 256 rows as the consumer stores them, error records, events, a blob per file) beside a
//! second tenant that must come out untouched. Half of the tenant's files are past its
//! retention: the retention job removes those, then a purge removes the rest and everything else
//! the tenant owns. Both run through the worker's own job functions; every statement is one
//! transaction, timed, and the longest is the longest a lock was held. The old half is alone in
//! its month of the row store, so retention drops that month's partitions whole; the young half
//! shares this month, which is never dropped, so the purge deletes its rows a batch at a time:
//! the write-ahead log each writes shows the difference (a deleted row is logged, and left for
//! VACUUM; a dropped partition is neither). Ends by checking that
//! nothing of the tenant is left (rows, error records, events, blobs).

use std::time::Instant;

use anyhow::ensure;
use worker::maintenance::{purge, retention, LifecycleConfig, Pace, Progress};

use crate::bulk::{generate, CHUNK_ROWS, ERRORS_PER_FILE};
use crate::env::{count, fresh_env};
use crate::report::Run;

/// Files the tenant's rows are spread over.
const FILES: i64 = 100;

pub async fn run(rows: i64) -> anyhow::Result<Run> {
    let env = fresh_env().await;
    let t0 = Instant::now();
    // Half the files past the retention, all uploaded on one day 400 days ago (a month of the
    // row store no one else has files in), half young; a neighbour with files older still, in
    // another month, kept for ever.
    generate(&env, "bulk", FILES / 2, rows / 2, 400).await?;
    generate(&env, "bulk", FILES / 2, rows / 2, 0).await?;
    generate(&env, "neighbour", 2, 2 * CHUNK_ROWS * 10, 460).await?;
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
    let partitions = stored("SELECT count(*) FROM row_store_partitions").await?;
    let wal = wal_position(&env.db).await?;
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
    run.put("retention_wal", "MB", wal_since(&env.db, wal).await? / 1e6);
    run.put(
        "retention_partitions_dropped",
        "",
        (partitions - stored("SELECT count(*) FROM row_store_partitions").await?) as f64,
    );

    let mut tx = env.db.begin().await?;
    shared::db::purges::request(&mut tx, "bulk").await?;
    tx.commit().await?;
    let mut pace = Pace::new(cfg.batch);
    let wal = wal_position(&env.db).await?;
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
    run.put("purge_wal", "MB", wal_since(&env.db, wal).await? / 1e6);

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

/// Where the write-ahead log is now.
pub(crate) async fn wal_position(db: &sqlx::PgPool) -> anyhow::Result<String> {
    Ok(sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
        .fetch_one(db)
        .await?)
}

/// Bytes of write-ahead log written since `from`.
pub(crate) async fn wal_since(db: &sqlx::PgPool, from: String) -> anyhow::Result<f64> {
    Ok(
        sqlx::query_scalar("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8")
            .bind(from)
            .fetch_one(db)
            .await?,
    )
}
