//! Keeping a long parse's message invisible and its task leased.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use shared::db;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::Consumer;

pub(super) fn current(receipt: &Mutex<String>) -> String {
    receipt
        .lock()
        .map(|r| r.clone())
        .unwrap_or_else(|p| p.into_inner().clone())
}

/// Renews the message's visibility and the task's lease at a third of the shorter of the two,
/// until `done`. Cancels `lost` when the task lease is no longer ours.
pub(super) async fn keep_alive(
    consumer: Consumer,
    msg_id: String,
    receipt: Arc<Mutex<String>>,
    task_id: Uuid,
    attempt: i32,
    done: CancellationToken,
    lost: CancellationToken,
) {
    let cfg = &consumer.cfg;
    let every = (cfg.visibility_timeout.min(cfg.task_lease) / 3).max(Duration::from_millis(200));
    loop {
        tokio::select! {
            () = done.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let old = current(&receipt);
        match consumer
            .queue
            .update_visibility(&msg_id, &old, cfg.visibility_timeout)
            .await
        {
            Ok(new) => {
                if let Ok(mut r) = receipt.lock() {
                    *r = new;
                }
            }
            Err(e) => {
                tracing::warn!(%task_id, error = %e, "could not extend the message's visibility")
            }
        }
        match db::tasks::renew_lease(&consumer.db, task_id, attempt, cfg.task_lease).await {
            Ok(true) => super::metrics::lease_renewed(),
            Ok(false) => {
                lost.cancel();
                return;
            }
            // Postgres briefly away: the lease has slack (we renew at a third of it).
            Err(e) => tracing::warn!(%task_id, error = %e, "could not renew the task lease"),
        }
    }
}
