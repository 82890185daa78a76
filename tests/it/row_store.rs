//! The row store's monthly partitions: a populated database migrates to them with every row in
//! place and readable while the migration runs, files of a month land in its partition, and
//! retention drops a month whose files all expired, whole, while a month that still holds a
//! live file keeps its partition and loses only the expired file's rows.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::worker::WorkerEnv;
use shared::db::{self, row_store};
use sqlx::PgPool;
use uuid::{NoContext, Timestamp, Uuid};
use worker::maintenance::{retention, LifecycleConfig, Pace, Progress};

/// A UUIDv7 made at `unix_secs`, as the api makes file ids.
fn id_at(unix_secs: u64) -> Uuid {
    Uuid::new_v7(Timestamp::from_unix(NoContext, unix_secs, 0))
}

/// 2025-03-10 and 2025-04-10, UTC: two months long past.
const MARCH_2025: u64 = 1_741_564_800;
const APRIL_2025: u64 = 1_744_243_200;

/// Stores COMPLETED file `id` of `tenant`, `days` old, with `chunks` row chunks of 256 rows, two
/// error records and a rejected row.
async fn stored_file(db: &PgPool, tenant: &str, id: Uuid, days: i32, chunks: i64) {
    let mut tx = db.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO source_files (id, tenant_id, file_name, content_type, format, size_bytes,
                                   sha256, blob_name, created_at)
         VALUES ($1, $2, 'f.csv', 'text/csv', 'csv', 10, repeat('0', 64), $2 || '/' || $1,
                 now() - make_interval(days => $3))",
    )
    .bind(id)
    .bind(tenant)
    .bind(days)
    .execute(&mut *tx)
    .await
    .expect("file");
    sqlx::query(
        "INSERT INTO tasks (id, source_file_id, status, attempts, result, started_at, finished_at)
         VALUES (gen_random_uuid(), $1, 'COMPLETED', 1, '{}', now(), now())",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .expect("task");
    sqlx::query(
        "INSERT INTO parsed_row_chunks (source_file_id, sheet_index, first_row, row_count, rows)
         SELECT $1, 0, c * 256, 256,
                (SELECT json_agg(json_build_array(c * 256 + r, 'row ' || (c * 256 + r)))
                 FROM generate_series(0, 255) r)
         FROM generate_series(0, $2 - 1) c",
    )
    .bind(id)
    .bind(chunks)
    .execute(&mut *tx)
    .await
    .expect("chunks");
    sqlx::query(
        "INSERT INTO validation_errors (source_file_id, seq, sheet, row_number, field, value,
                                        code, message)
         SELECT $1, s, 0, s + 2, 'amount', 'lots', 'type-error', 'not a number'
         FROM generate_series(0, 1) s",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .expect("errors");
    sqlx::query(
        "INSERT INTO rejected_rows (source_file_id, sheet, row_number, cells)
         VALUES ($1, 0, 2, '[\"x\", \"lots\"]')",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .expect("rejected row");
    tx.commit().await.expect("commit");
}

/// The partition of `table` that holds file `id`'s rows, if it has any.
async fn partition_of(db: &PgPool, table: &str, id: Uuid) -> Option<String> {
    sqlx::query_scalar(&format!(
        "SELECT DISTINCT tableoid::regclass::text FROM {table} WHERE source_file_id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await
    .expect("partition")
}

async fn exists(db: &PgPool, relation: &str) -> bool {
    sqlx::query_scalar::<_, Option<String>>("SELECT to_regclass($1)::text")
        .bind(relation)
        .fetch_one(db)
        .await
        .expect("to_regclass")
        .is_some()
}

/// Every stored row of the three tables, as one digest.
async fn digest(db: &PgPool) -> (i64, String) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM parsed_row_chunks)
                + (SELECT count(*) FROM validation_errors) + (SELECT count(*) FROM rejected_rows),
                md5(coalesce((SELECT string_agg(concat_ws('|', source_file_id, sheet_index, first_row, rows), ','
                                                ORDER BY source_file_id, sheet_index, first_row)
                              FROM parsed_row_chunks), '')
                    || coalesce((SELECT string_agg(concat_ws('|', source_file_id, seq, message), ','
                                                   ORDER BY source_file_id, seq)
                                 FROM validation_errors), '')
                    || coalesce((SELECT string_agg(concat_ws('|', source_file_id, cells), ','
                                                   ORDER BY source_file_id, sheet, row_number)
                                 FROM rejected_rows), ''))",
    )
    .fetch_one(db)
    .await
    .expect("digest")
}

#[tokio::test]
async fn a_populated_database_migrates_to_partitions_with_every_row_in_place_and_readable() {
    let db = harness::migrations::database_before(harness::migrations::ROW_STORE_PARTITIONS).await;
    let files: Vec<Uuid> = (0..40).map(|_| Uuid::now_v7()).collect();
    for id in &files {
        stored_file(&db, "legacy-tenant", *id, 1, 8).await;
    }
    let before = digest(&db).await;
    let page_before = db::rows::page(&db, files[7], 0, Some(299), 500)
        .await
        .expect("page");

    // Readers and writers go on while the rest of the migrations run.
    let stop = Arc::new(AtomicBool::new(false));
    let (reads, writes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let reader = tokio::spawn({
        let (db, stop, reads, id) = (db.clone(), stop.clone(), reads.clone(), files[3]);
        async move {
            let mut slowest = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let rows = db::rows::page(&db, id, 0, None, 1000)
                    .await
                    .expect("a read");
                assert_eq!(rows.len(), 1000);
                slowest = slowest.max(started.elapsed());
                reads.fetch_add(1, Ordering::Relaxed);
            }
            slowest
        }
    });
    let writer = tokio::spawn({
        let (db, stop, writes) = (db.clone(), stop.clone(), writes.clone());
        async move {
            let mut written = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let id = Uuid::now_v7();
                stored_file(&db, "busy-tenant", id, 0, 1).await;
                written.push(id);
                writes.fetch_add(1, Ordering::Relaxed);
            }
            written
        }
    });
    let started = Instant::now();
    db::MIGRATOR
        .run(&db)
        .await
        .expect("the partitioning migrations");
    let took = started.elapsed();
    // At least one read and one write after the migration, too.
    let (r, w) = (
        reads.load(Ordering::Relaxed),
        writes.load(Ordering::Relaxed),
    );
    harness::worker::eventually_some(Duration::from_secs(30), "more reads and writes", || {
        let (reads, writes) = (reads.clone(), writes.clone());
        async move {
            (reads.load(Ordering::Relaxed) > r && writes.load(Ordering::Relaxed) > w).then_some(())
        }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let slowest = reader.await.expect("every read succeeded");
    let written = writer.await.expect("every write succeeded");
    eprintln!(
        "migrated in {took:?}; {} reads (slowest {slowest:?}) and {} writes meanwhile",
        reads.load(Ordering::Relaxed),
        written.len()
    );

    for table in row_store::TABLES {
        let kind: String =
            sqlx::query_scalar("SELECT relkind::text FROM pg_class WHERE oid = $1::regclass")
                .bind(table)
                .fetch_one(&db)
                .await
                .expect("relkind");
        assert_eq!(kind, "p", "{table} is partitioned");
        assert_eq!(
            partition_of(&db, table, files[0]).await.as_deref(),
            Some(format!("{table}_legacy").as_str()),
            "the rows stored before stay where they were"
        );
    }
    // Every row stored before is there, unchanged, and the files written during the migration
    // kept theirs.
    let mut after = digest(&db).await;
    for id in &written {
        let n: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM parsed_row_chunks WHERE source_file_id = $1)
                    + (SELECT count(*) FROM validation_errors WHERE source_file_id = $1)
                    + (SELECT count(*) FROM rejected_rows WHERE source_file_id = $1)",
        )
        .bind(id)
        .fetch_one(&db)
        .await
        .expect("count");
        assert_eq!(n, 4, "a chunk, two error records and a rejected row");
        after.0 -= n;
    }
    assert_eq!(after.0, before.0, "as many rows as before");
    sqlx::query("DELETE FROM source_files WHERE tenant_id = 'busy-tenant'")
        .execute(&db)
        .await
        .expect("remove the files written meanwhile");
    assert_eq!(digest(&db).await, before, "the same rows");
    assert_eq!(
        db::rows::page(&db, files[7], 0, Some(299), 500)
            .await
            .expect("page"),
        page_before
    );
    // A page reads one partition: the plan names no other.
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT * FROM parsed_row_chunks WHERE source_file_id = $1 AND sheet_index = 0",
    )
    .bind(files[7])
    .fetch_all(&db)
    .await
    .expect("plan");
    let plan = plan.join("\n");
    assert!(plan.contains("parsed_row_chunks_legacy"), "{plan}");
    assert_eq!(plan.matches(" on parsed_row_chunks_").count(), 1, "{plan}");
}

#[tokio::test]
async fn retention_drops_a_month_whose_files_all_expired_and_keeps_a_month_with_a_live_one() {
    let env = WorkerEnv::new().await;
    let months = row_store::Months::default();
    let march: Vec<Uuid> = (0..3).map(|i| id_at(MARCH_2025 + i)).collect();
    let (april_old, april_live) = (id_at(APRIL_2025), id_at(APRIL_2025 + 1));
    let now = Uuid::now_v7();
    for (id, days) in
        march
            .iter()
            .map(|id| (*id, 400))
            .chain([(april_old, 400), (april_live, 1), (now, 400)])
    {
        months.ensure(&env.db, id).await.expect("partitions");
        stored_file(&env.db, "tenant", id, days, 2).await;
    }
    for table in row_store::TABLES {
        assert_eq!(
            partition_of(&env.db, table, march[0]).await.as_deref(),
            Some(format!("{table}_2025_03").as_str())
        );
        assert_eq!(
            partition_of(&env.db, table, april_live).await.as_deref(),
            Some(format!("{table}_2025_04").as_str())
        );
    }

    let cfg: LifecycleConfig = shared::config::from_args(&["--retention", "30d"]);
    let mut pace = Pace::new(100);
    let (removed, progress) = retention::run_once(&env.db, &env.blobs, &cfg, &mut pace)
        .await
        .expect("retention runs");
    assert_eq!(progress, Progress::Done);
    assert_eq!(
        removed, 5,
        "March's three, April's old one and this month's old one"
    );

    // March went whole: its partitions are gone, with their entry.
    for table in row_store::TABLES {
        assert!(
            !exists(&env.db, &format!("{table}_2025_03")).await,
            "{table}"
        );
        assert!(
            exists(&env.db, &format!("{table}_2025_04")).await,
            "{table}"
        );
    }
    let names: Vec<String> =
        sqlx::query_scalar("SELECT name FROM row_store_partitions ORDER BY name")
            .fetch_all(&env.db)
            .await
            .expect("partitions");
    assert!(!names.contains(&"2025_03".to_owned()), "{names:?}");
    assert!(names.contains(&"2025_04".to_owned()), "{names:?}");
    // April keeps its live file's rows and lost the old file's; nothing else is left.
    let rows_of = |id: Uuid| {
        let db = env.db.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT (SELECT count(*) FROM parsed_row_chunks WHERE source_file_id = $1)
                        + (SELECT count(*) FROM validation_errors WHERE source_file_id = $1)
                        + (SELECT count(*) FROM rejected_rows WHERE source_file_id = $1)
                        + (SELECT count(*) FROM source_files WHERE id = $1)",
            )
            .bind(id)
            .fetch_one(&db)
            .await
            .expect("count")
        }
    };
    assert_eq!(rows_of(april_live).await, 2 + 2 + 1 + 1);
    for id in march.iter().chain([&april_old, &now]) {
        assert_eq!(rows_of(*id).await, 0, "{id}");
    }
    // This month is never dropped, however empty: uploads are still arriving.
    assert!(exists(&env.db, &format!("parsed_row_chunks_{}", chrono_month())).await);
}

/// This month's partition suffix, `YYYY_MM` (UTC).
fn chrono_month() -> String {
    chrono::Utc::now().format("%Y_%m").to_string()
}

/// What `file_row_usage` holds for `id`: (rows, bytes).
async fn usage_of(db: &PgPool, id: Uuid) -> Option<(i64, i64)> {
    sqlx::query_as("SELECT row_count, row_bytes FROM file_row_usage WHERE source_file_id = $1")
        .bind(id)
        .fetch_optional(db)
        .await
        .expect("usage")
}

#[tokio::test]
async fn a_parsed_file_records_its_row_store_bytes_and_its_tenant_sums_them() {
    let env = WorkerEnv::new().await;
    let mut csv = String::from("id,name,amount\n");
    for i in 0..1000 {
        csv.push_str(&format!("{i},name {i},{}.25\n", i * 3));
    }
    let a = env.create_upload_for("acme", "a.csv", csv.as_bytes()).await;
    let b = env.create_upload_for("acme", "b.csv", b"x\n1\n2\n").await;
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    let consumer = env.consumer(WorkerEnv::consumer_config());
    env.consume_until_idle(&consumer).await;

    // Recorded in the transaction that stored the rows: the chunks as stored, plus the
    // per-chunk estimate.
    let (rows, bytes) = usage_of(&env.db, a.source_file_id).await.expect("recorded");
    assert_eq!(rows, 1000);
    let (chunks, stored): (i64, i64) = sqlx::query_as(
        "SELECT count(*), sum(pg_column_size(rows))::bigint FROM parsed_row_chunks
         WHERE source_file_id = $1",
    )
    .bind(a.source_file_id)
    .fetch_one(&env.db)
    .await
    .expect("chunks");
    assert_eq!(bytes, stored + chunks * row_store::TUPLE_OVERHEAD);
    assert_eq!(
        usage_of(&env.db, b.source_file_id).await.map(|u| u.0),
        Some(2)
    );

    // The tenant's sums, and what the gauges read.
    let (b_rows, b_bytes) = usage_of(&env.db, b.source_file_id).await.expect("recorded");
    assert_eq!(
        row_store::of_tenant(&env.db, "acme").await.expect("sums"),
        (1002, bytes + b_bytes)
    );
    let usage = row_store::usage(&env.db, 20).await.expect("usage");
    assert_eq!(usage.top, vec![("acme".to_owned(), 1002, bytes + b_bytes)]);
    assert_eq!((usage.other_rows, usage.other_bytes), (0, 0));
    assert_eq!(usage.rows, 1002);
    assert!(
        usage.bytes_on_disk >= bytes,
        "on disk {} vs recorded {bytes}",
        usage.bytes_on_disk
    );

    // A deleted file gives its rows and bytes back.
    sqlx::query("DELETE FROM source_files WHERE id = $1")
        .bind(a.source_file_id)
        .execute(&env.db)
        .await
        .expect("delete");
    assert_eq!(
        row_store::of_tenant(&env.db, "acme").await.expect("sums"),
        (b_rows, b_bytes)
    );
}

#[tokio::test]
async fn files_stored_before_usage_was_recorded_are_measured_by_the_maintenance() {
    let env = WorkerEnv::new().await;
    let files: Vec<Uuid> = (0..5).map(|_| Uuid::now_v7()).collect();
    for id in &files {
        stored_file(&env.db, "old-tenant", *id, 0, 3).await;
    }
    // A file whose task is not final yet is left to the consumer.
    let pending = env
        .create_upload_for("old-tenant", "p.csv", b"a\n1\n")
        .await;
    for id in &files {
        assert_eq!(usage_of(&env.db, *id).await, None);
    }
    let backfill = worker::maintenance::row_store::Backfill::default();
    // Batches of two: three statements measure the five files.
    worker::maintenance::row_store::job(&env.db, &backfill, 2)
        .await
        .expect("the job runs");
    let (chunks_bytes, errors_bytes, rejected_bytes): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT sum(pg_column_size(rows)) + count(*) * $2 FROM parsed_row_chunks
                 WHERE source_file_id = $1)::bigint,
                (SELECT sum(pg_column_size(e.*)) FROM validation_errors e
                 WHERE source_file_id = $1)::bigint,
                (SELECT sum(pg_column_size(r.*)) FROM rejected_rows r
                 WHERE source_file_id = $1)::bigint",
    )
    .bind(files[0])
    .bind(row_store::TUPLE_OVERHEAD)
    .fetch_one(&env.db)
    .await
    .expect("sizes");
    for id in &files {
        // No parsed_sheets rows were written for these files: their row count is what the
        // sheets say, 0.
        assert_eq!(
            usage_of(&env.db, *id).await,
            Some((0, chunks_bytes + errors_bytes + rejected_bytes)),
            "{id}"
        );
    }
    assert_eq!(usage_of(&env.db, pending.source_file_id).await, None);
    // The pass is over: a file measured by hand now is not measured again.
    sqlx::query("DELETE FROM file_row_usage WHERE source_file_id = $1")
        .bind(files[0])
        .execute(&env.db)
        .await
        .expect("forget one");
    worker::maintenance::row_store::job(&env.db, &backfill, 2)
        .await
        .expect("the job runs");
    assert_eq!(usage_of(&env.db, files[0]).await, None, "the pass ended");
}

#[tokio::test]
async fn two_workers_dropping_at_once_drop_a_month_once_and_neither_fails() {
    let env = WorkerEnv::new().await;
    let months = row_store::Months::default();
    let ids: Vec<Uuid> = (0..3).map(|i| id_at(MARCH_2025 + i)).collect();
    for id in &ids {
        months.ensure(&env.db, *id).await.expect("partitions");
        stored_file(&env.db, "tenant", *id, 400, 1).await;
    }
    sqlx::query("UPDATE source_files SET deleting_at = now()")
        .execute(&env.db)
        .await
        .expect("mark");
    let (a, b) = tokio::join!(
        worker::maintenance::row_store::drop_emptied(&env.db),
        worker::maintenance::row_store::drop_emptied(&env.db)
    );
    let (a, b) = (a.expect("first"), b.expect("second"));
    assert_eq!(a + b, 1, "March dropped once ({a} + {b})");
    for table in row_store::TABLES {
        assert!(
            !exists(&env.db, &format!("{table}_2025_03")).await,
            "{table}"
        );
    }
    // Nothing left to drop, and the session lock went with its connection.
    assert_eq!(
        worker::maintenance::row_store::drop_emptied(&env.db)
            .await
            .expect("again"),
        0
    );
    let held: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .fetch_one(&env.db)
    .await
    .expect("locks");
    assert_eq!(held, 0);
}
