//! The row store's monthly partitions ([`shared::db::row_store`]). A maintenance job adds this
//! month's and the next two months' ahead, so no consumer waits on a catalog change, and
//! measures files stored before their usage was recorded. Retention and purges drop the months
//! whose files are all gone or being removed ([`drop_emptied`]), between marking files and
//! removing them one by one, so that what a whole month held costs one statement per table
//! instead of a `DELETE` per batch of rows; retention runs every `LIFECYCLE_INTERVAL` whether
//! it marked anything or not, so a month emptied by other deletions goes too.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use shared::db::row_store;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Months added ahead of the current one.
const MONTHS_AHEAD: i32 = 2;
/// Whoever holds it drops partitions; another worker's job skips its turn.
const DROP_LOCK: i64 = 0x7368_6565_7472_7331; // "sheetrs1"

/// Drops the partitions of every emptied month ([`row_store::emptied`]). Returns how many
/// months it dropped: none when another worker is at it.
pub async fn drop_emptied(db: &PgPool) -> sqlx::Result<u64> {
    if row_store::emptied(db).await?.is_empty() {
        return Ok(0);
    }
    let dropped = super::session_lock::alone(db, DROP_LOCK, drop_all).await?;
    Ok(dropped.unwrap_or(0))
}

async fn drop_all(conn: &mut PgConnection) -> sqlx::Result<u64> {
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

/// Batches of files one run of the job measures at most ([`Backfill`]).
const MEASURE_BATCHES: usize = 50;

/// How far the measuring of files stored before their usage was recorded has got: a pass over
/// the file ids, from the lowest, starts when the worker does and ends once it finds none left
/// (the consumer records every file it stores; only files stored by an older version wait).
#[derive(Debug)]
pub struct Backfill(Mutex<Option<Uuid>>);

/// The maintenance job: months ahead, and a few batches of files stored before usage was
/// recorded measured.
pub async fn job(db: &PgPool, backfill: &Backfill, batch: i64) -> anyhow::Result<()> {
    let added = row_store::add_months_ahead(db, MONTHS_AHEAD).await?;
    if added > 0 {
        tracing::info!(months = added, "row store partitions added ahead");
    }
    let mut cursor = *backfill.0.lock().unwrap_or_else(PoisonError::into_inner);
    for _ in 0..MEASURE_BATCHES {
        let Some(after) = cursor else { break };
        cursor = row_store::measure_unmeasured(db, after, batch).await?;
        if cursor.is_none() {
            tracing::info!("every stored file's row store usage is recorded");
        }
        *backfill.0.lock().unwrap_or_else(PoisonError::into_inner) = cursor;
    }
    Ok(())
}

impl Default for Backfill {
    /// A pass from the lowest id.
    fn default() -> Self {
        Self(Mutex::new(Some(Uuid::nil())))
    }
}
