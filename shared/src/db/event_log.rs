//! The event log's day partitions. `events` and `webhook_deliveries` (the `events` log) and
//! `webhook_attempts` (the `attempts` log) are partitioned by RANGE of a time, one partition per
//! UTC day, plus `legacy` for what was written before partitioning (migrations `20261130*`,
//! which say why and how). `event_log_partitions` lists the ranges.
//!
//! Days are added ahead ([`add_days_ahead`]), and by whatever writes an event or an attempt on a
//! day that has none ([`ensure`]). A day past its log's retention is dropped whole
//! ([`expired`], [`drop_partition`]): one catalog change per table instead of a `DELETE` per
//! 1,000 rows, and no dead tuples left for VACUUM. Events are so kept at least `EVENTS_RETENTION`
//! and at most a day longer.

use std::time::Duration;

use sqlx::{PgConnection, PgExecutor};

/// The tables of each log, in the order their partitions are dropped: a day's deliveries before
/// its events, so that no delivery is ever left without its event.
fn tables(log: &str) -> &'static [&'static str] {
    match log {
        "events" => &["webhook_deliveries", "events"],
        _ => &["webhook_attempts"],
    }
}

/// Makes sure today's partitions exist (and tomorrow's within a minute of midnight): called in
/// the transaction that writes an event or attempt, before it does. Once a session has seen
/// them it costs a comparison until the day ends (the SQL function `event_log_ensure`). Postgres
/// cannot attach a partition while a statement inserting into the table runs, so this must be
/// a statement of its own.
pub async fn ensure(db: impl PgExecutor<'_>) -> sqlx::Result<()> {
    sqlx::query!(r#"SELECT event_log_ensure() AS "ensured""#)
        .fetch_one(db)
        .await?;
    Ok(())
}

/// Adds the partitions of today and the next `ahead` days that have none. Returns how many
/// days it added to either log.
pub async fn add_days_ahead(db: impl PgExecutor<'_>, ahead: i32) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) FILTER (WHERE event_log_add_day(now() + make_interval(days => n)))
               AS "added!"
           FROM generate_series(0, $1::int) n"#,
        ahead
    )
    .fetch_one(db)
    .await
}

/// A partition of a log: `log` is `events` or `attempts`, `name` a day (`2026_11_30`) or
/// `legacy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub log: String,
    pub name: String,
}

/// The partitions wholly older than their log's retention, oldest first.
pub async fn expired(
    db: impl PgExecutor<'_>,
    events_retention: Duration,
    attempts_retention: Duration,
) -> sqlx::Result<Vec<Partition>> {
    sqlx::query_as!(
        Partition,
        r#"SELECT log, name FROM event_log_partitions
           WHERE to_at <= now() - make_interval(
                     secs => CASE log WHEN 'events' THEN $1::float8 ELSE $2::float8 END)
           ORDER BY to_at, log"#,
        events_retention.as_secs_f64(),
        attempts_retention.as_secs_f64()
    )
    .fetch_all(db)
    .await
}

/// Drops partition `p` of each table of its log ([`super::partitions::detach_and_drop`]), then
/// its entry. `conn` must not be in a transaction; a crash part-way is finished by the next call.
pub async fn drop_partition(conn: &mut PgConnection, p: &Partition) -> sqlx::Result<()> {
    for table in tables(&p.log) {
        super::partitions::detach_and_drop(conn, table, &format!("{table}_{}", p.name)).await?;
    }
    sqlx::query!(
        "DELETE FROM event_log_partitions WHERE log = $1 AND name = $2",
        p.log,
        p.name
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}
