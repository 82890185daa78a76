//! Work that one worker at a time does: dropping partitions. Two workers detaching the same
//! partition would only wait on each other; the lock makes the second skip its turn instead.

use sqlx::{Connection as _, PgConnection, PgPool};

/// Runs `work` on a connection of its own while holding the session advisory lock `key`, and
/// returns what it returns; returns `Ok(None)` at once when another session holds the lock. A
/// connection of its own rather than the pool's: the lock ends with the session, even when this
/// future is dropped half-way (a pooled connection would keep the lock, and every later run
/// would skip its turn). `work` runs outside any transaction, as `DETACH ... CONCURRENTLY`
/// needs.
pub async fn alone<T>(
    db: &PgPool,
    key: i64,
    work: impl AsyncFnOnce(&mut PgConnection) -> sqlx::Result<T>,
) -> sqlx::Result<Option<T>> {
    let mut conn = PgConnection::connect_with(&db.connect_options()).await?;
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(key)
        .fetch_one(&mut conn)
        .await?;
    let done = if locked {
        work(&mut conn).await.map(Some)
    } else {
        Ok(None)
    };
    // Closing ends the session, and the lock with it.
    if let Err(e) = conn.close().await {
        tracing::debug!(error = %e, "closing the session-lock connection");
    }
    done
}
