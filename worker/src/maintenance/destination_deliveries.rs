//! The retention of finished destination deliveries: a `DELIVERED` or `DEAD` row is listed for
//! `DESTINATION_DELIVERIES_RETENTION` after it last changed, then deleted, a small batch per
//! statement, so the table holds what is in flight and recent history only. (Rows still to be
//! delivered go with their file or their destination.)

use std::time::Duration;

use shared::db;
use sqlx::PgPool;

use super::pace::in_batches;

/// Deletes finished deliveries older than `retention`, in small batches.
pub async fn purge(db: &PgPool, retention: Duration) -> sqlx::Result<u64> {
    const BATCH: i64 = 500;
    let total = in_batches(BATCH, || {
        db::destination_deliveries::prune(db, retention, BATCH)
    })
    .await?;
    if total > 0 {
        tracing::info!(
            deleted = total,
            "pruned finished destination deliveries past retention"
        );
    }
    Ok(total)
}
