//! The consumer loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use shared::failure::{self, Failure};
use shared::storage::ReceivedMessage;

use crate::link::Link;
use crate::retry::Backoff;
use crate::Shutdown;

use super::drain::{DrainStep, QueueDrain};
use super::{Consumer, Outcome};

/// The consumer loop: receives while there are free processing slots, backs off while the queue
/// is empty (from `idle_backoff_min` doubling to `idle_backoff_max`, back to full speed at the
/// first message), and pauses receiving while Postgres is unavailable so queued messages do not
/// burn their deliveries. On `shutdown.stop` it stops receiving and lets in-flight messages
/// finish; `shutdown.abort` makes them release their work. With `drain`, it returns once
/// `upstream_done` has fired (the relay is finished, or not ours), nothing is in flight and the
/// queue is drained ([`QueueDrain`]: empty with nothing left in the outbox for a relay to send,
/// or only invisible messages for a whole `VISIBILITY_TIMEOUT`).
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
    let mut receiver = Receiver::new(consumer, shutdown, link);
    let shutdown = receiver.shutdown.clone();
    let mut idle = Backoff::new(cfg.idle_backoff_min, cfg.idle_backoff_max);
    let result = loop {
        if shutdown.stop.is_cancelled() {
            break Ok(());
        }
        if receiver.db_down.load(Ordering::Relaxed) {
            wait_for_database(&receiver.consumer.db, &shutdown.stop).await;
            receiver.db_down.store(false, Ordering::Relaxed);
            continue;
        }
        let first = tokio::select! {
            permit = Arc::clone(&receiver.slots).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break Ok(()),
            },
            () = shutdown.stop.cancelled() => break Ok(()),
        };
        let free = (receiver.slots.available_permits() + 1)
            .min(usize::from(cfg.batch_size))
            .max(1);
        let want = receiver.consumer.budget.reserve(free);
        if want == 0 {
            drop(first);
            tracing::info!("message budget spent: receiving nothing more");
            shutdown.stop.cancelled().await;
            break Ok(());
        }
        let messages = match receiver.receive(want).await {
            Ok(Some(messages)) => messages,
            Ok(None) => {
                drop(first);
                receiver.storage_backoff.wait(&shutdown.stop).await;
                continue;
            }
            Err(e) => break Err(e),
        };
        if messages.is_empty() {
            drop(first);
            if drain && upstream_done.is_cancelled() && receiver.drained().await {
                break Ok(());
            }
            // The relay of this process wakes it as soon as it has sent something.
            tokio::select! {
                () = idle.wait(&shutdown.stop) => {}
                () = receiver.link.wait_sent() => idle.reset(),
            }
            continue;
        }
        idle.reset();
        receiver.drain.reset();
        receiver.dispatch(first, messages).await;
        receiver.log_throughput();
    };
    receiver.tracker.close();
    receiver.tracker.wait().await;
    tracing::info!("queue consumer stopped");
    result
}

/// The state of the consumer loop between its receives.
struct Receiver {
    consumer: Consumer,
    shutdown: Shutdown,
    link: Link,
    /// One permit per message being processed, `CONSUMER_CONCURRENCY` in all.
    slots: Arc<Semaphore>,
    concurrency: usize,
    tracker: TaskTracker,
    /// Set by a message whose processing found Postgres away: receiving pauses until it is back.
    db_down: Arc<AtomicBool>,
    storage_backoff: Backoff,
    drain: QueueDrain,
    /// Since when, and how many messages taken since, for the throughput line.
    window: (Instant, usize),
}

impl Receiver {
    fn new(consumer: Consumer, shutdown: Shutdown, link: Link) -> Self {
        let concurrency = consumer.cfg.concurrency.max(1) as usize;
        let drain = QueueDrain::new(consumer.cfg.visibility_timeout);
        Self {
            consumer,
            shutdown,
            link,
            slots: Arc::new(Semaphore::new(concurrency)),
            concurrency,
            tracker: TaskTracker::new(),
            db_down: Arc::new(AtomicBool::new(false)),
            storage_backoff: Backoff::new(Duration::from_millis(200), Duration::from_secs(10)),
            drain,
            window: (Instant::now(), 0),
        }
    }

    /// Receives up to `want` messages; `None` when the queue is unavailable (the caller backs
    /// off), an error when it refuses us.
    async fn receive(&mut self, want: usize) -> anyhow::Result<Option<Vec<ReceivedMessage>>> {
        let cfg = &self.consumer.cfg;
        let received = self
            .consumer
            .queue
            .receive(u8::try_from(want).unwrap_or(32), cfg.visibility_timeout)
            .await;
        self.consumer
            .budget
            .settle(want, received.as_ref().map_or(0, Vec::len));
        match received {
            Ok(m) => {
                if self.storage_backoff.failures() > 0 {
                    tracing::info!(
                        failed_receives = self.storage_backoff.failures(),
                        "the queue is reachable again; receiving"
                    );
                }
                self.storage_backoff.reset();
                Ok(Some(m))
            }
            Err(e) if failure::storage(&e) == Failure::Outage => {
                // One line when the outage starts and one when it ends, not one per try.
                if self.storage_backoff.failures() == 0 {
                    tracing::warn!(error = %e, "queue unavailable: receive failed; backing off until it answers");
                } else {
                    tracing::debug!(error = %e, "queue unavailable: receive failed again");
                }
                Ok(None)
            }
            Err(e) => Err(anyhow::Error::new(e).context("receiving queue messages")),
        }
    }

    /// After an empty receive while draining, with the relay done: whether the queue is drained
    /// ([`QueueDrain`]). Never while a message is still being processed here.
    async fn drained(&mut self) -> bool {
        if self.slots.available_permits() != self.concurrency {
            return false;
        }
        match self.consumer.queue.approximate_length().await {
            Ok(queued) => {
                let more = queued == 0 && relay_has_more(&self.consumer.db).await;
                self.drain.step(queued, more) == DrainStep::Done
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not read the queue's length");
                false
            }
        }
    }

    /// Processes each message on a task of its own, each holding a slot (`first` is the one
    /// already taken) and counting as in hand for the relay until it is finished.
    async fn dispatch(&mut self, first: OwnedSemaphorePermit, messages: Vec<ReceivedMessage>) {
        let mut first = Some(first);
        for msg in messages {
            let permit = match first.take() {
                Some(p) => p,
                // `free` counted these permits and only this loop takes them.
                None => match Arc::clone(&self.slots).acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let consumer = self.consumer.clone();
            let abort = self.shutdown.abort.clone();
            let db_down = Arc::clone(&self.db_down);
            self.window.1 += 1;
            let taken = self.link.take();
            self.tracker.spawn(async move {
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
    }

    /// Logs the messages taken per second, once a minute.
    fn log_throughput(&mut self) {
        let (since, messages) = self.window;
        if since.elapsed() >= Duration::from_secs(60) {
            tracing::info!(
                messages,
                per_second = messages as f64 / since.elapsed().as_secs_f64(),
                "consumer throughput"
            );
            self.window = (Instant::now(), 0);
        }
    }
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
