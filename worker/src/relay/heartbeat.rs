//! The heartbeat of a relay's claims. A claim is short (`RELAY_LEASE`) so that a dead relay's
//! batch is claimable again within seconds; a live relay keeps its batch by extending, every
//! third of the lease, the claims of the rows whose outcome it has not recorded yet (one
//! statement for the batch), however long their sends take.

use std::convert::Infallible;
use std::time::Duration;

use shared::db;
use sqlx::PgPool;
use uuid::Uuid;

/// Renews the claims of `ids` every third of `lease`, until the caller drops it.
pub(super) async fn keep_claimed(db: &PgPool, ids: &[Uuid], lease: Duration) -> Infallible {
    let every = (lease / 3).max(Duration::from_millis(100));
    loop {
        tokio::time::sleep(every).await;
        match db::outbox::extend_claims(db, ids, lease).await {
            Ok(n) => tracing::debug!(extended = n, "renewed the batch's outbox claims"),
            // Postgres briefly away: the claims have slack (renewed at a third of the lease);
            // if they expire, another relay may send them too, a duplicate the consumer ignores.
            Err(e) => tracing::warn!(error = %e, "could not renew the batch's outbox claims"),
        }
    }
}
