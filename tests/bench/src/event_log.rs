//! `event-log`: the retention of the event log, as it was (1,000 events a statement, their
//! deliveries by cascade, then 1,000 attempts a statement) against dropping a day's partitions,
//! and the migration between the two on a populated database. `BENCH_EVENT_LOG_EVENTS` events a
//! day (default 1M; 50k with `--quick`), each with one delivery and one attempt, generated in
//! SQL. While each step runs, a writer writes one event after another (each fanned out to a
//! delivery, as a finished task writes them); its slowest write during a step is the longest the
//! step held it up.
//!
//! 1. On the schema before partitioning, two days of events 10 and 9 days ago: the old retention
//!    deletes the older day.
//! 2. The migrations run, with the younger day still there (it lands in the legacy partition).
//! 3. On a new database, the same day 9 days ago in its partition: the maintenance job drops it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::ensure;
use sqlx::PgPool;

use crate::env::count;
use crate::purge::{wal_position, wal_since};
use crate::report::Run;
use crate::row_store_migration::{report, steps, Timed};

const DAY: Duration = Duration::from_secs(86_400);
/// Rows a generating statement writes.
const GENERATE_BATCH: i64 = 100_000;

pub async fn run(per_day: i64) -> anyhow::Result<Run> {
    let mut run = Run::default();

    // 1. Retention as it was.
    let db = harness::migrations::database_before(harness::migrations::EVENT_LOG_PARTITIONS).await;
    let started = Instant::now();
    let hook = endpoint(&db, "bulk").await?;
    endpoint(&db, "writer").await?;
    fill(&db, hook, per_day, 10).await?;
    fill(&db, hook, per_day, 9).await?;
    let generated_s = started.elapsed().as_secs_f64();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_events(db.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let wal = wal_position(&db).await?;
    let deleting = Instant::now();
    let (statements, longest) = delete_as_before(&db).await?;
    let deleted_s = deleting.elapsed().as_secs_f64();
    run.put("batched.s", "s", deleted_s);
    run.put("batched.statements", "", statements as f64);
    run.put(
        "batched.longest_statement",
        "ms",
        longest.as_secs_f64() * 1e3,
    );
    run.put("batched.wal", "MB", wal_since(&db, wal).await? / 1e6);

    // 2. The migration, the younger day still stored.
    let migrating = Instant::now();
    shared::db::MIGRATOR.run(&db).await?;
    let migrated_s = migrating.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let writes = writer.await??;
    report(&mut run, "batched.write", &writes, deleting, deleted_s);
    run.put("migration.s", "s", migrated_s);
    steps(&mut run, &db, harness::migrations::EVENT_LOG_PARTITIONS).await?;
    report(&mut run, "migration.write", &writes, migrating, migrated_s);
    let kept = count(
        &db,
        "SELECT count(*) FROM events_legacy WHERE created_at < now() - interval '8 days'",
    )
    .await?;
    ensure!(
        kept == per_day,
        "{kept} of the younger day's {per_day} events in the legacy partition"
    );
    db.close().await;

    // 3. A day dropped whole.
    let url = harness::services::fresh_database().await;
    let db = PgPool::connect(&url).await?;
    shared::db::MIGRATOR.run(&db).await?;
    sqlx::query("SELECT event_log_add_day(now() - interval '9 days')")
        .execute(&db)
        .await?;
    let hook = endpoint(&db, "bulk").await?;
    endpoint(&db, "writer").await?;
    fill(&db, hook, per_day, 9).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_events(db.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let wal = wal_position(&db).await?;
    let dropping = Instant::now();
    let dropped = worker::maintenance::event_log::job(&db, DAY * 7, DAY * 7).await?;
    let dropped_s = dropping.elapsed().as_secs_f64();
    let drop_wal = wal_since(&db, wal).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let writes = writer.await??;
    run.put("dropped.s", "s", dropped_s);
    run.put("dropped.partitions", "", dropped as f64);
    run.put("dropped.wal", "MB", drop_wal / 1e6);
    report(&mut run, "dropped.write", &writes, dropping, dropped_s);
    let left = count(
        &db,
        "SELECT (SELECT count(*) FROM events WHERE created_at < now() - interval '8 days')
                + (SELECT count(*) FROM webhook_deliveries
                   WHERE event_created_at < now() - interval '8 days')
                + (SELECT count(*) FROM webhook_attempts WHERE at < now() - interval '8 days')",
    )
    .await?;
    let written = count(
        &db,
        "SELECT count(*) FROM events WHERE tenant_id = 'writer'",
    )
    .await?;
    ensure!(
        left == 0 && written == writes.len() as i64,
        "{left} rows of the expired day left; {written} of {} written events kept",
        writes.len()
    );
    run.put("left_behind", "", left as f64);
    run.note(format!(
        "event-log: {per_day} events a day, each with a delivery and an attempt (generated in SQL: two days in {generated_s:.0} s); batched = the retention before partitioning deleting one day (1,000 events a statement with their deliveries by cascade, then 1,000 attempts a statement); migration = the seven partitioning migrations with the other day still stored; dropped = the maintenance job dropping that day's partitions on a database at the current schema; write = one event after another (with its delivery) meanwhile, during_max_ms its slowest"
    ));
    Ok(run)
}

/// An endpoint of `tenant` that takes its events.
async fn endpoint(db: &PgPool, tenant: &str) -> anyhow::Result<uuid::Uuid> {
    Ok(sqlx::query_scalar(
        "INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret)
         VALUES (gen_random_uuid(), $1, 'https://hooks.example.com/in',
                 ARRAY['task.completed'], '\\x00')
         RETURNING id",
    )
    .bind(tenant)
    .fetch_one(db)
    .await?)
}

/// `n` events of tenant `bulk` spread over the UTC day `days` ago (fanned out to `hook` by the
/// database), and as many attempts, then VACUUM ANALYZE, as autovacuum would have left them.
async fn fill(db: &PgPool, hook: uuid::Uuid, n: i64, days: i32) -> anyhow::Result<()> {
    let mut from = 0;
    while from < n {
        let to = (from + GENERATE_BATCH).min(n);
        let at = "(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                  - make_interval(days => $1) + g * (interval '86399 s' / $4)";
        sqlx::query(&format!(
            "INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, created_at)
             SELECT gen_random_uuid(), 'bulk', 'task.completed', gen_random_uuid(),
                    gen_random_uuid(), '{{\"status\": \"COMPLETED\"}}', {at}
             FROM generate_series($2, $3 - 1) g"
        ))
        .bind(days)
        .bind(from)
        .bind(to)
        .bind(n)
        .execute(db)
        .await?;
        sqlx::query(&format!(
            "INSERT INTO webhook_attempts (endpoint_id, event_id, attempt, status_code, outcome,
                                           duration_ms, at)
             SELECT $5, gen_random_uuid(), 1, 200, 'delivered', 12, {at}
             FROM generate_series($2, $3 - 1) g"
        ))
        .bind(days)
        .bind(from)
        .bind(to)
        .bind(n)
        .bind(hook)
        .execute(db)
        .await?;
        from = to;
    }
    sqlx::query("VACUUM ANALYZE events, webhook_deliveries, webhook_attempts")
        .execute(db)
        .await?;
    Ok(())
}

/// The statements of the retention before partitioning, until the day 10 days ago is gone:
/// how many, and the longest.
async fn delete_as_before(db: &PgPool) -> anyhow::Result<(u64, Duration)> {
    let cutoff = "(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                  - interval '9 days'";
    let statements = [
        format!(
            "DELETE FROM events WHERE id IN (
                 SELECT id FROM events WHERE created_at < {cutoff}
                 LIMIT 1000 FOR UPDATE SKIP LOCKED)"
        ),
        format!(
            "DELETE FROM webhook_attempts WHERE id IN (
                 SELECT id FROM webhook_attempts WHERE at < {cutoff} ORDER BY id LIMIT 1000)"
        ),
    ];
    let (mut n, mut longest) = (0, Duration::ZERO);
    for sql in &statements {
        loop {
            let started = Instant::now();
            let done = sqlx::query(sql).execute(db).await?.rows_affected();
            longest = longest.max(started.elapsed());
            n += 1;
            if done < 1000 {
                break;
            }
        }
    }
    Ok((n, longest))
}

/// One event after another, each in its own statement, until `stop`.
async fn write_events(db: PgPool, stop: Arc<AtomicBool>) -> anyhow::Result<Timed> {
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        sqlx::query(
            "INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data)
             VALUES (gen_random_uuid(), 'writer', 'task.completed', gen_random_uuid(),
                     gen_random_uuid(), '{}')",
        )
        .execute(&db)
        .await?;
        out.push((started, started.elapsed()));
    }
    Ok(out)
}
