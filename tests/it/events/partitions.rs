//! The event log's day partitions: a populated database migrates to them with every event,
//! delivery and attempt in place while writers go on, what is written after lands in its day
//! with one delivery per endpoint as before, retention drops whole days (a day's deliveries
//! with its events, attempts on their own schedule), and a day that nobody added ahead is added
//! by the write that needs it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::services::fresh_database;
use shared::db::{self, event_log};
use sqlx::PgPool;
use uuid::Uuid;

const DAY: Duration = Duration::from_secs(86_400);

async fn endpoint(db: &PgPool, tenant: &str) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret)
         VALUES ($1, $2, 'https://hooks.example.com/in', ARRAY['task.completed'], '\\x00')",
    )
    .bind(id)
    .bind(tenant)
    .execute(db)
    .await
    .expect("endpoint");
    id
}

/// `n` `task.completed` events of `tenant` about file `file`, `age` old (one ms apart): the
/// database fans them out to the tenant's endpoints.
async fn events(db: &PgPool, tenant: &str, file: Uuid, n: i32, age: Duration) {
    sqlx::query(
        "INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, created_at)
         SELECT gen_random_uuid(), $1, 'task.completed', $2, gen_random_uuid(), '{}',
                clock_timestamp() - make_interval(secs => $4) + g * interval '1 ms'
         FROM generate_series(1, $3) g",
    )
    .bind(tenant)
    .bind(file)
    .bind(n)
    .bind(age.as_secs_f64())
    .execute(db)
    .await
    .expect("events");
}

/// `n` attempt-log entries of `endpoint`, `age` old.
async fn attempts(db: &PgPool, endpoint: Uuid, n: i32, age: Duration) {
    sqlx::query(
        "INSERT INTO webhook_attempts (endpoint_id, event_id, attempt, outcome, duration_ms, at)
         SELECT $1, gen_random_uuid(), 1, 'delivered', 3, now() - make_interval(secs => $3)
         FROM generate_series(1, $2)",
    )
    .bind(endpoint)
    .bind(n)
    .bind(age.as_secs_f64())
    .execute(db)
    .await
    .expect("attempts");
}

/// Every row of the three tables that a reader sees, as counts and one digest.
async fn digest(db: &PgPool) -> (i64, i64, i64, String) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries),
                (SELECT count(*) FROM webhook_attempts),
                md5(coalesce((SELECT string_agg(concat_ws('|', id, position, tenant_id, type,
                                                          source_file_id, data, created_at), ','
                                                ORDER BY id) FROM events), '')
                    || coalesce((SELECT string_agg(concat_ws('|', id, event_id, endpoint_id, status),
                                                   ',' ORDER BY id) FROM webhook_deliveries), '')
                    || coalesce((SELECT string_agg(concat_ws('|', id, endpoint_id, event_id, at),
                                                   ',' ORDER BY id) FROM webhook_attempts), ''))",
    )
    .fetch_one(db)
    .await
    .expect("digest")
}

async fn partitions_of(db: &PgPool, sql: &str) -> Vec<String> {
    sqlx::query_scalar(sql)
        .fetch_all(db)
        .await
        .expect("partitions")
}

#[tokio::test]
async fn a_populated_event_log_migrates_to_day_partitions_with_every_row_in_place() {
    let db = harness::migrations::database_before(harness::migrations::EVENT_LOG_PARTITIONS).await;
    let hook = endpoint(&db, "old").await;
    let old_file = Uuid::new_v4();
    for days in 0..5 {
        events(
            &db,
            "old",
            old_file,
            200,
            DAY * days + Duration::from_secs(60),
        )
        .await;
        attempts(&db, hook, 50, DAY * days + Duration::from_secs(60)).await;
    }
    db::events::sequence(&db).await.expect("sequence");
    let before = digest(&db).await;
    assert_eq!((before.0, before.1, before.2), (1000, 1000, 250));
    let feed_before = db::events::after(&db, "old", 0, 1000).await.expect("feed");

    // Events are written while the migrations run, and the feed is read.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = tokio::spawn({
        let (db, stop, written) = (db.clone(), stop.clone(), written.clone());
        async move {
            while !stop.load(Ordering::Relaxed) {
                events(&db, "busy", Uuid::new_v4(), 5, Duration::ZERO).await;
                written.fetch_add(5, Ordering::Relaxed);
            }
        }
    });
    let reader = tokio::spawn({
        let (db, stop) = (db.clone(), stop.clone());
        async move {
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let page = db::events::after(&db, "old", 0, 1000)
                    .await
                    .expect("a read");
                assert_eq!(page.len(), 1000);
                reads += 1;
            }
            reads
        }
    });
    let started = Instant::now();
    db::MIGRATOR
        .run(&db)
        .await
        .expect("the partitioning migrations");
    let took = started.elapsed();
    let w = written.load(Ordering::Relaxed);
    harness::worker::eventually_some(Duration::from_secs(30), "writes after", || {
        let written = written.clone();
        async move { (written.load(Ordering::Relaxed) > w).then_some(()) }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    writer.await.expect("every write succeeded");
    let reads = reader.await.expect("every read succeeded");
    eprintln!(
        "migrated in {took:?}; {reads} reads and {} events written meanwhile",
        written.load(Ordering::Relaxed)
    );

    for table in ["events", "webhook_deliveries", "webhook_attempts"] {
        let kind: String =
            sqlx::query_scalar("SELECT relkind::text FROM pg_class WHERE oid = $1::regclass")
                .bind(table)
                .fetch_one(&db)
                .await
                .expect("relkind");
        assert_eq!(kind, "p", "{table} is partitioned");
    }
    // What was there before is there, unchanged, in the legacy partitions.
    sqlx::query("DELETE FROM events WHERE tenant_id = 'busy'")
        .execute(&db)
        .await
        .expect("remove the events written meanwhile");
    assert_eq!(digest(&db).await, before, "the same rows");
    assert_eq!(
        db::events::after(&db, "old", 0, 1000).await.expect("feed"),
        feed_before
    );
    assert_eq!(
        partitions_of(&db, "SELECT DISTINCT tableoid::regclass::text FROM events").await,
        ["events_legacy"]
    );

    // A new event of the old tenant: one delivery, in the day partition of its event.
    let new_file = Uuid::new_v4();
    sqlx::query("SELECT event_log_add_day(now() + interval '3 days')")
        .execute(&db)
        .await
        .expect("a day past the legacy bound");
    sqlx::query(
        "INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, created_at)
         VALUES (gen_random_uuid(), 'old', 'task.completed', $1, gen_random_uuid(), '{}',
                 now() + interval '3 days')",
    )
    .bind(new_file)
    .execute(&db)
    .await
    .expect("an event after the bound");
    let placed: Vec<(String, String)> = sqlx::query_as(
        "SELECT e.tableoid::regclass::text, d.tableoid::regclass::text
         FROM events e JOIN webhook_deliveries d ON d.event_id = e.id
         WHERE e.source_file_id = $1",
    )
    .bind(new_file)
    .fetch_all(&db)
    .await
    .expect("placed");
    assert_eq!(
        placed.len(),
        1,
        "one delivery per endpoint, as before: {placed:?}"
    );
    assert!(placed[0].0.starts_with("events_20"), "{placed:?}");
    assert_eq!(
        placed[0].1,
        placed[0].0.replace("events_", "webhook_deliveries_")
    );
    // Attempt ids go on from the legacy ones.
    attempts(&db, hook, 1, Duration::ZERO).await;
    let (max_legacy, newest): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT max(id) FROM webhook_attempts_legacy WHERE at < now() - interval '1 s'),
                (SELECT max(id) FROM webhook_attempts)",
    )
    .fetch_one(&db)
    .await
    .expect("ids");
    assert!(newest > max_legacy, "{newest} after {max_legacy}");

    // A replay revives legacy deliveries and queues none twice.
    sqlx::query("UPDATE webhook_deliveries SET status = 'DEAD'")
        .execute(&db)
        .await
        .expect("every delivery dead");
    let queued = db::webhooks::replay(&db, "old", hook, chrono::Utc::now() - chrono::Days::new(30))
        .await
        .expect("replay")
        .expect("the endpoint");
    assert_eq!(queued, 1001);
    assert_eq!(digest(&db).await.1, 1001, "no delivery doubled");

    // Deleting a file's events takes their deliveries along, legacy or not.
    for file in [old_file, new_file] {
        sqlx::query("DELETE FROM events WHERE source_file_id = $1")
            .bind(file)
            .execute(&db)
            .await
            .expect("delete");
    }
    let left: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries)",
    )
    .fetch_one(&db)
    .await
    .expect("left");
    assert_eq!(left, (0, 0));
}

#[tokio::test]
async fn retention_drops_whole_days_with_their_deliveries_and_keeps_the_rest() {
    let db = PgPool::connect(&fresh_database().await)
        .await
        .expect("connect");
    db::MIGRATOR.run(&db).await.expect("migrations");
    let hook = endpoint(&db, "t").await;
    for days in [40, 20, 9, 8] {
        sqlx::query("SELECT event_log_add_day(now() - make_interval(days => $1))")
            .bind(days)
            .execute(&db)
            .await
            .expect("a past day");
    }
    let (old, recent) = (Uuid::new_v4(), Uuid::new_v4());
    events(&db, "t", old, 30, DAY * 9).await;
    events(&db, "t", old, 30, DAY * 8).await;
    events(&db, "t", recent, 30, Duration::from_secs(60)).await;
    attempts(&db, hook, 10, DAY * 40).await;
    attempts(&db, hook, 10, DAY * 20).await;
    attempts(&db, hook, 10, DAY * 9).await;

    let dropped = worker::maintenance::event_log::job(&db, DAY * 7, DAY * 30)
        .await
        .expect("the job");
    // Events: the days 40, 20, 9 and 8 days ago (each day is added to both logs); attempts:
    // the day 40 days ago.
    assert_eq!(dropped, 5);
    let counts: (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM events WHERE source_file_id = $1),
                (SELECT count(*) FROM events WHERE source_file_id = $2),
                (SELECT count(*) FROM webhook_deliveries),
                (SELECT count(*) FROM webhook_attempts)",
    )
    .bind(old)
    .bind(recent)
    .fetch_one(&db)
    .await
    .expect("counts");
    assert_eq!(counts, (0, 30, 30, 20));
    let left: Vec<String> = partitions_of(
        &db,
        "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent IN ('events'::regclass, 'webhook_deliveries'::regclass,
                               'webhook_attempts'::regclass)
         ORDER BY 1",
    )
    .await;
    let day = |days: u64| {
        (chrono::Utc::now() - chrono::Days::new(days))
            .format("%Y_%m_%d")
            .to_string()
    };
    for gone in [day(9), day(8)] {
        assert!(!left.contains(&format!("events_{gone}")), "{left:?}");
        assert!(
            !left.contains(&format!("webhook_deliveries_{gone}")),
            "{left:?}"
        );
        assert!(
            left.contains(&format!("webhook_attempts_{gone}")),
            "{left:?}"
        );
    }
    assert!(
        !left.contains(&format!("webhook_attempts_{}", day(40))),
        "{left:?}"
    );
    assert!(
        left.contains(&format!("webhook_attempts_{}", day(20))),
        "{left:?}"
    );
    let registered: i64 =
        sqlx::query_scalar("SELECT count(*) FROM event_log_partitions WHERE name IN ($1, $2)")
            .bind(day(9))
            .bind(day(40))
            .fetch_one(&db)
            .await
            .expect("registry");
    assert_eq!(registered, 1, "the attempts of 9 days ago only");
    // Run again: nothing more to drop, and nothing fails.
    let again = worker::maintenance::event_log::job(&db, DAY * 7, DAY * 30)
        .await
        .expect("again");
    assert_eq!(again, 0);
}

#[tokio::test]
async fn a_day_nobody_added_ahead_is_added_by_the_write_that_needs_it() {
    let db = PgPool::connect(&fresh_database().await)
        .await
        .expect("connect");
    db::MIGRATOR.run(&db).await.expect("migrations");
    // Today's partitions gone, as if no maintenance had run since yesterday.
    let today = chrono::Utc::now().format("%Y_%m_%d").to_string();
    for log in ["events", "attempts"] {
        event_log::drop_partition(
            &mut db.acquire().await.expect("connection"),
            &event_log::Partition {
                log: log.to_owned(),
                name: today.clone(),
            },
        )
        .await
        .expect("drop today");
    }
    let file = Uuid::now_v7();
    let mut tx = db.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO source_files (id, tenant_id, file_name, content_type, format, size_bytes,
                                   sha256, blob_name)
         VALUES ($1, 't', 'f.csv', 'text/csv', 'csv', 10, repeat('0', 64), 't/' || $1)",
    )
    .bind(file)
    .execute(&mut *tx)
    .await
    .expect("file");
    sqlx::query(
        "INSERT INTO tasks (id, source_file_id, status) VALUES (gen_random_uuid(), $1, 'PENDING')",
    )
    .bind(file)
    .execute(&mut *tx)
    .await
    .expect("task");
    tx.commit().await.expect("commit");

    // The task's status change writes its event: the trigger adds the day first.
    sqlx::query("UPDATE tasks SET status = 'FAILED', error_code = 'x', error_message = 'y', finished_at = now() WHERE source_file_id = $1")
        .bind(file)
        .execute(&db)
        .await
        .expect("a status change with an event");
    let placed: Vec<String> = partitions_of(
        &db,
        &format!("SELECT tableoid::regclass::text FROM events WHERE source_file_id = '{file}'"),
    )
    .await;
    assert_eq!(placed, [format!("events_{today}")]);
    // So does the attempt log's writer.
    let attempts_today: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM event_log_partitions WHERE log = 'attempts' AND name = $1",
    )
    .bind(&today)
    .fetch_one(&db)
    .await
    .expect("registry");
    assert_eq!(attempts_today, 1, "the function adds both logs' day");
}
