//! `row-store-migration`: the three migrations that partition the row store, run on a database
//! that already holds `BENCH_MIGRATION_ROWS` parsed rows (default 20M; 1M with `--quick`),
//! generated in bulk ([`crate::bulk::insert`]) on the schema before them, while one reader pages
//! through a file's rows (the api's page query, one page after another) and one writer stores
//! small files (a file, its task, a chunk, error records, a rejected row, in one transaction).
//! Reported: each migration's own time (as sqlx records it), the reader's and the writer's
//! slowest operation during the migrations, and whether every row is still there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::ensure;
use sqlx::PgPool;

use crate::bulk::{insert, insert_many};
use crate::env::count;
use crate::report::{quantile, Run};

pub async fn run(rows: i64) -> anyhow::Result<Run> {
    let db = harness::migrations::database_before(harness::migrations::ROW_STORE_PARTITIONS).await;
    let started = Instant::now();
    let probe = insert_many(&db, "before", rows).await?;
    // As autovacuum would have left a steady database: one running when a migration's ALTER
    // TABLE queues for its lock holds everyone queued behind that ALTER until Postgres cancels
    // it (deadlock_timeout, 1 s). A first run without this measured just that (BENCHMARKS.md).
    sqlx::query("VACUUM ANALYZE parsed_row_chunks, validation_errors, rejected_rows")
        .execute(&db)
        .await?;
    let generated_s = started.elapsed().as_secs_f64();
    let chunks_before = count(&db, "SELECT count(*) FROM parsed_row_chunks").await?;
    let rows_before = count(
        &db,
        "SELECT coalesce(sum(row_count), 0)::bigint FROM parsed_row_chunks",
    )
    .await?;

    let stop = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn(read_pages(db.clone(), probe, stop.clone()));
    let writer = tokio::spawn(write_files(db.clone(), stop.clone()));
    // A second of each before the migrations, for comparison.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let migrating = Instant::now();
    shared::db::MIGRATOR.run(&db).await?;
    let migrated_s = migrating.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let reads = reader.await??;
    let writes = writer.await??;

    let mut run = Run::default();
    steps(&mut run, &db, harness::migrations::ROW_STORE_PARTITIONS).await?;
    run.put("migrations_s", "s", migrated_s);
    report(&mut run, "read", &reads, migrating, migrated_s);
    report(&mut run, "write", &writes, migrating, migrated_s);
    let chunks_after = count(
        &db,
        "SELECT count(*) FROM parsed_row_chunks_legacy WHERE source_file_id IN
             (SELECT id FROM source_files WHERE tenant_id = 'before')",
    )
    .await?;
    ensure!(
        chunks_after == chunks_before,
        "{chunks_before} chunks before, {chunks_after} in the legacy partition after"
    );
    run.put("rows_stored", "rows", rows_before as f64);
    run.note(format!(
        "row-store-migration: {rows_before} rows in {chunks_before} chunks of {} files, generated in SQL on the schema before the partitioning in {generated_s:.0} s (then VACUUM ANALYZE of the three tables); then `MIGRATOR.run` applies the three partitioning migrations (and the usage one after them) while one task reads 100-row pages of a 100k-row file one after another and another stores small files one after another; during = operations that overlapped the migrations; every chunk stored before is in the legacy partition after (checked)",
        count(&db, "SELECT count(*) FROM source_files WHERE tenant_id = 'before'").await?
    ));
    Ok(run)
}

/// Each migration's own time from `from` on, as sqlx recorded it: `migration_<version>_s`.
pub(crate) async fn steps(run: &mut Run, db: &PgPool, from: i64) -> anyhow::Result<()> {
    let steps: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT version, execution_time FROM _sqlx_migrations WHERE version >= $1 ORDER BY version",
    )
    .bind(from)
    .fetch_all(db)
    .await?;
    for (version, nanos) in &steps {
        run.put(format!("migration_{version}_s"), "s", *nanos as f64 / 1e9);
    }
    Ok(())
}

/// One operation: when it started, how long it took.
pub(crate) type Timed = Vec<(Instant, Duration)>;

pub(crate) fn report(run: &mut Run, what: &str, ops: &Timed, from: Instant, secs: f64) {
    let until = from + Duration::from_secs_f64(secs);
    let during: Vec<f64> = ops
        .iter()
        .filter(|(at, took)| *at + *took >= from && *at <= until)
        .map(|(_, took)| took.as_secs_f64() * 1e3)
        .collect();
    let before: Vec<f64> = ops
        .iter()
        .filter(|(at, _)| *at < from)
        .map(|(_, took)| took.as_secs_f64() * 1e3)
        .collect();
    run.put(format!("{what}.during"), "ops", during.len() as f64);
    run.put(
        format!("{what}.during_max_ms"),
        "ms",
        during.iter().copied().fold(0.0, f64::max),
    );
    run.put(
        format!("{what}.before_p99_ms"),
        "ms",
        quantile(&before, 0.99),
    );
}

async fn read_pages(db: PgPool, probe: uuid::Uuid, stop: Arc<AtomicBool>) -> anyhow::Result<Timed> {
    let mut out = Vec::new();
    let mut after = None;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let rows = shared::db::rows::page(&db, probe, 0, after, 100).await?;
        ensure!(rows.len() == 100 || after.is_some(), "a short first page");
        after = rows.last().map(|r| r.row_index).filter(|&i| i < 90_000);
        out.push((started, started.elapsed()));
    }
    Ok(out)
}

async fn write_files(db: PgPool, stop: Arc<AtomicBool>) -> anyhow::Result<Timed> {
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        insert(&db, "during", 1, 256, 0).await?;
        out.push((started, started.elapsed()));
    }
    Ok(out)
}
