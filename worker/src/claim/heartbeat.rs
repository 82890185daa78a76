//! The heartbeat of a claim. A claim is short (the loop's lease) so that a dead worker's rows are
//! claimable again within seconds; a live loop keeps a batch by extending, every third of the
//! lease, the claims of the rows whose outcome it has not recorded yet (one statement for the
//! batch), however long their sends take.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

/// Calls `extend` every third of `lease`, until the caller drops it.
pub(super) async fn keep_claimed<F, Fut>(name: &str, mut extend: F, lease: Duration) -> Infallible
where
    F: FnMut() -> Fut,
    Fut: Future<Output = sqlx::Result<u64>>,
{
    let every = (lease / 3).max(Duration::from_millis(100));
    loop {
        tokio::time::sleep(every).await;
        match extend().await {
            Ok(n) => tracing::debug!(work = name, extended = n, "renewed the batch's claims"),
            // Postgres briefly away: the claims have slack (renewed at a third of the lease);
            // if they expire, another worker may send them too, a duplicate the receiver ignores.
            Err(e) => tracing::warn!(work = name, error = %e, "could not renew the batch's claims"),
        }
    }
}
