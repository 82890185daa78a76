//! The event log's day partitions ([`shared::db::event_log`]): a maintenance job adds today's and
//! the next two days' ahead, so that writing an event never waits on a catalog change, and drops
//! the days past retention (`EVENTS_RETENTION` for events and their deliveries,
//! `WEBHOOK_ATTEMPTS_RETENTION` for the attempt log), each in one statement per table instead of
//! a `DELETE` per 1,000 rows.

use std::time::{Duration, Instant};

use shared::db::event_log;
use sqlx::{PgConnection, PgPool};

/// Days added ahead of the current one.
const DAYS_AHEAD: i32 = 2;
/// Whoever holds it drops the event log's partitions; another worker's job skips its turn.
const DROP_LOCK: i64 = 0x7368_6565_7472_7332; // "sheetrs2"

/// The maintenance job: days ahead, then the days past retention dropped. Returns how many
/// partitions it dropped (none when another worker is at it).
pub async fn job(
    db: &PgPool,
    events_retention: Duration,
    attempts_retention: Duration,
) -> anyhow::Result<usize> {
    let added = event_log::add_days_ahead(db, DAYS_AHEAD).await?;
    if added > 0 {
        tracing::info!(days = added, "event log partitions added ahead");
    }
    if event_log::expired(db, events_retention, attempts_retention)
        .await?
        .is_empty()
    {
        return Ok(0);
    }
    let drop_all = async |conn: &mut PgConnection| -> sqlx::Result<usize> {
        let expired = event_log::expired(&mut *conn, events_retention, attempts_retention).await?;
        for p in &expired {
            let started = Instant::now();
            event_log::drop_partition(conn, p).await?;
            tracing::info!(
                log = p.log,
                partition = p.name,
                took_ms = started.elapsed().as_millis() as u64,
                "event log partition dropped: past its retention"
            );
        }
        Ok(expired.len())
    };
    let dropped = super::session_lock::alone(db, DROP_LOCK, drop_all).await?;
    Ok(dropped.unwrap_or(0))
}
