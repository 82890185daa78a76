//! The consumer loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use shared::failure::{self, Failure};

use crate::link::Link;
use crate::retry::Backoff;
use crate::Shutdown;

use super::{Consumer, Outcome};

/// How much longer than `VISIBILITY_TIMEOUT` a draining consumer waits for invisible messages:
/// visibility is set in whole seconds, and the approximate count lags a little.
const HIDDEN_MARGIN: Duration = Duration::from_secs(2);

/// The consumer loop: receives while there are free processing slots, backs off while the queue
/// is empty (from `idle_backoff_min` doubling to `idle_backoff_max`, back to full speed at the
/// first message), and pauses receiving while Postgres is unavailable so queued messages do not
/// burn their deliveries. On `shutdown.stop` it stops receiving and lets in-flight messages
/// finish; `shutdown.abort` makes them release their work. With `drain`, it returns once
/// `upstream_done` has fired (the relay is finished, or not ours), nothing is in flight and the
/// queue is empty with nothing left in the outbox for a relay to send, or when for a whole
/// `VISIBILITY_TIMEOUT` the queue has held only invisible messages or nothing while the outbox
/// still held some (a dead consumer's message is visible again by then; what stays hidden longer
/// is renewed by a live consumer or delayed for a retry, and a job idling until then would be
/// billed for it).
/// With a message budget (`--max-messages`), it receives no more than that, then
/// waits for the supervisor's stop. `link` counts the messages being processed, for the relay
/// of the same process, and wakes an idle consumer when that relay has sent some.
pub async fn run(
    consumer: Consumer,
    shutdown: Shutdown,
    drain: bool,
    upstream_done: CancellationToken,
    link: Link,
) -> anyhow::Result<()> {
    let cfg = Arc::clone(&consumer.cfg);
    tracing::info!(
        queue = consumer.queue.name(),
        batch_size = cfg.batch_size,
        concurrency = cfg.concurrency,
        drain,
        "queue consumer started"
    );
    let concurrency = cfg.concurrency.max(1) as usize;
    let slots = Arc::new(Semaphore::new(concurrency));
    let tracker = TaskTracker::new();
    let db_down = Arc::new(AtomicBool::new(false));
    let mut idle = Backoff::new(cfg.idle_backoff_min, cfg.idle_backoff_max);
    let mut storage_backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
    let mut window = (Instant::now(), 0usize);
    // Draining, with nothing received and nothing in flight here: since when the queue has held
    // only invisible messages.
    let mut hidden_since: Option<Instant> = None;

    let result = loop {
        if shutdown.stop.is_cancelled() {
            break Ok(());
        }
        if db_down.load(Ordering::Relaxed) {
            wait_for_database(&consumer.db, &shutdown.stop).await;
            db_down.store(false, Ordering::Relaxed);
            continue;
        }
        let first = tokio::select! {
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break Ok(()),
            },
            () = shutdown.stop.cancelled() => break Ok(()),
        };
        let free = (slots.available_permits() + 1)
            .min(usize::from(cfg.batch_size))
            .max(1);
        let want = consumer.budget.reserve(free);
        if want == 0 {
            drop(first);
            tracing::info!("message budget spent: receiving nothing more");
            shutdown.stop.cancelled().await;
            break Ok(());
        }
        let received = consumer
            .queue
            .receive(u8::try_from(want).unwrap_or(32), cfg.visibility_timeout)
            .await;
        consumer
            .budget
            .settle(want, received.as_ref().map_or(0, Vec::len));
        let messages = match received {
            Ok(m) => {
                if storage_backoff.failures() > 0 {
                    tracing::info!(
                        failed_receives = storage_backoff.failures(),
                        "the queue is reachable again; receiving"
                    );
                }
                storage_backoff.reset();
                m
            }
            Err(e) if failure::storage(&e) == Failure::Outage => {
                drop(first);
                // One line when the outage starts and one when it ends, not one per try.
                if storage_backoff.failures() == 0 {
                    tracing::warn!(error = %e, "queue unavailable: receive failed; backing off until it answers");
                } else {
                    tracing::debug!(error = %e, "queue unavailable: receive failed again");
                }
                storage_backoff.wait(&shutdown.stop).await;
                continue;
            }
            Err(e) => break Err(anyhow::Error::new(e).context("receiving queue messages")),
        };
        if messages.is_empty() {
            drop(first);
            if drain && upstream_done.is_cancelled() && slots.available_permits() == concurrency {
                match consumer.queue.approximate_length().await {
                    Ok(0) if !relay_has_more(&consumer.db).await => {
                        tracing::info!("queue drained: nothing in flight and nothing queued");
                        break Ok(());
                    }
                    // Messages invisible (held by live consumers, or waiting for a retry), or
                    // none yet while the relay holds more in the outbox: a tenant at its fair
                    // share gets its next one as soon as one of its tasks finishes, often
                    // this very consumer's last. A job that left then would leave them to the
                    // scaler's next poll (30 s in deploy/); `tests/it/fairness.rs` has a job
                    // with a share of one task leave after its first without this. Waited
                    // for, a visibility timeout at most.
                    Ok(invisible) => {
                        let since = *hidden_since.get_or_insert_with(Instant::now);
                        if since.elapsed() > cfg.visibility_timeout + HIDDEN_MARGIN {
                            if invisible > 0 {
                                tracing::info!(invisible,
                                    "queue drained: the messages left stayed invisible for a whole visibility timeout (held by live consumers, or waiting for a retry); leaving them to the next execution");
                            } else {
                                tracing::info!(
                                    "queue drained: nothing arrived for a whole visibility timeout while the outbox held messages (no relay is sending them); leaving them to the next execution");
                            }
                            break Ok(());
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "could not read the queue's length"),
                }
            }
            // The relay of this process wakes it as soon as it has sent something.
            tokio::select! {
                () = idle.wait(&shutdown.stop) => {}
                () = link.wait_sent() => idle.reset(),
            }
            continue;
        }
        idle.reset();
        hidden_since = None;
        let mut first = Some(first);
        for msg in messages {
            let permit = match first.take() {
                Some(p) => p,
                // `free` counted these permits and only this loop takes them.
                None => match Arc::clone(&slots).acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let consumer = consumer.clone();
            let abort = shutdown.abort.clone();
            let db_down = Arc::clone(&db_down);
            window.1 += 1;
            let taken = link.take();
            tracker.spawn(async move {
                let _held = (permit, taken);
                let message_id = msg.id.clone();
                match consumer.handle(msg, &abort).await {
                    Ok(Outcome::Retry {
                        db_unavailable: true,
                        ..
                    }) => db_down.store(true, Ordering::Relaxed),
                    Ok(_) => {}
                    Err(e) => {
                        if failure::of_db(&*e) == Some(Failure::Outage) {
                            db_down.store(true, Ordering::Relaxed);
                        }
                        tracing::error!(%message_id, error = format!("{e:#}"),
                            "processing failed; the message will reappear");
                    }
                }
            });
        }
        if window.0.elapsed() >= Duration::from_secs(60) {
            tracing::info!(
                messages = window.1,
                per_second = window.1 as f64 / window.0.elapsed().as_secs_f64(),
                "consumer throughput"
            );
            window = (Instant::now(), 0);
        }
    };
    tracker.close();
    tracker.wait().await;
    tracing::info!("queue consumer stopped");
    result
}

/// Whether the outbox holds messages the relay has still to send (due now, or held back at a
/// tenant's share until one of its tasks finishes: `outbox_claimable`). A database error counts
/// as no: the drain then ends as it did without the check.
async fn relay_has_more(db: &PgPool) -> bool {
    match shared::db::outbox::claimable_count(db).await {
        Ok(n) => n > 0,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the outbox backlog");
            false
        }
    }
}

/// Blocks until `SELECT 1` succeeds (or shutdown), with a growing pause between tries.
async fn wait_for_database(db: &PgPool, stop: &CancellationToken) {
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        if stop.is_cancelled() || sqlx::query("SELECT 1").execute(db).await.is_ok() {
            return;
        }
        tracing::warn!("database unavailable; consumer paused");
        backoff.wait(stop).await;
    }
}
