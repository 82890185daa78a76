//! The retention of sent outbox messages: a `COMPLETED` row (with the small file's bytes its
//! payload may carry) is kept for `OUTBOX_RETENTION` and then deleted, a small batch per
//! statement, so the table does not grow with every upload ever relayed.

use shared::db;
use sqlx::PgPool;

use super::pace::in_batches;
use crate::relay::config::RelayConfig;

/// Deletes COMPLETED messages older than the retention, in small batches.
pub async fn purge(db: &PgPool, cfg: &RelayConfig) -> sqlx::Result<u64> {
    const BATCH: i64 = 500;
    let total = in_batches(BATCH, || {
        db::outbox::purge_completed(db, cfg.retention, BATCH)
    })
    .await?;
    if total > 0 {
        tracing::info!(
            deleted = total,
            "purged completed outbox messages past retention"
        );
    }
    Ok(total)
}
