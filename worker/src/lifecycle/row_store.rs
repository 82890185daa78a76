//! The row store's monthly partitions ([`shared::db::row_store`]), as a maintenance job: this
//! month's and the next two months' are added ahead, so no consumer waits on a catalog change,
//! and a month whose files are all gone or being removed is dropped whole. Retention and purges
//! drop emptied months too, between marking files and removing them one by one, so that what a
//! whole month held costs one statement per table instead of a `DELETE` per batch of rows.

use std::time::Instant;

use shared::db::row_store;
use sqlx::PgPool;

/// Months added ahead of the current one.
const MONTHS_AHEAD: i32 = 2;
/// Whoever holds it drops partitions; another worker's job skips its turn.
const DROP_LOCK: i64 = 0x7368_6565_7472_7331; // "sheetrs1"

/// Drops the partitions of every emptied month ([`row_store::emptied`]). Returns how many
/// months it dropped: none when another worker is at it.
pub async fn drop_emptied(db: &PgPool) -> sqlx::Result<u64> {
    let mut conn = db.acquire().await?;
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(DROP_LOCK)
        .fetch_one(&mut *conn)
        .await?;
    if !locked {
        return Ok(0);
    }
    let dropped = drop_all(&mut conn).await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(DROP_LOCK)
        .execute(&mut *conn)
        .await;
    if unlocked.is_err() {
        // A session lock must not stay with a pooled connection.
        conn.detach();
    }
    dropped
}

async fn drop_all(conn: &mut sqlx::PgConnection) -> sqlx::Result<u64> {
    let mut dropped = 0;
    for name in row_store::emptied(&mut *conn).await? {
        let started = Instant::now();
        row_store::drop_partition(conn, &name).await?;
        dropped += 1;
        tracing::info!(
            partition = name,
            took_ms = started.elapsed().as_millis() as u64,
            "row store partition dropped: every file of its month was removed"
        );
    }
    Ok(dropped)
}

/// The maintenance job: months ahead, then emptied months dropped.
pub async fn job(db: &PgPool) -> anyhow::Result<()> {
    let added = row_store::add_months_ahead(db, MONTHS_AHEAD).await?;
    if added > 0 {
        tracing::info!(months = added, "row store partitions added ahead");
    }
    drop_emptied(db).await?;
    Ok(())
}
