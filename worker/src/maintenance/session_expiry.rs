//! The expiry of import sessions: a session is refused once it expires, and its row is deleted
//! a day later (the day keeps it for a support question about a token just refused), a small
//! batch per statement, so the table holds at most a day and an hour of sessions.

use std::time::Duration;

use shared::db;
use sqlx::PgPool;

use super::pace::in_batches;

/// How long an expired session's row is kept.
const KEPT_AFTER_EXPIRY: Duration = Duration::from_secs(24 * 3600);

/// Deletes the sessions that expired more than a day ago, in small batches.
pub async fn purge(db: &PgPool) -> sqlx::Result<u64> {
    const BATCH: i64 = 500;
    let total = in_batches(BATCH, || db::sessions::prune(db, KEPT_AFTER_EXPIRY, BATCH)).await?;
    if total > 0 {
        tracing::info!(
            deleted = total,
            "deleted import sessions a day past their expiry"
        );
    }
    Ok(total)
}
