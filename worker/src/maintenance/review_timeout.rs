//! The review timeout: a task waiting in `NEEDS_REVIEW` for a person to confirm its mapping
//! fails once `REVIEW_TIMEOUT` has passed, so no upload waits for ever on an answer that will
//! not come.

use shared::db;
use sqlx::PgPool;

use crate::relay::config::RelayConfig;

/// Fails the tasks that waited in review past `REVIEW_TIMEOUT`, a bounded batch per run (a
/// backlog is worked off over the next runs).
pub async fn expire_reviews(db: &PgPool, cfg: &RelayConfig) -> sqlx::Result<u64> {
    const BATCH: i64 = 500;
    let n = db::tasks::expire_reviews(db, cfg.review_timeout, BATCH).await?;
    if n > 0 {
        tracing::warn!(
            expired = n,
            "tasks failed: their mapping review was not answered in time"
        );
    }
    Ok(n)
}
