//! The outbox relay: moves committed `outbox_messages` to Azure Queue Storage. One short statement
//! claims a batch (`FOR UPDATE SKIP LOCKED` plus a lease, so any number of relays may run and a
//! crashed relay's batch is rescued once its lease expires), the sends happen outside any
//! transaction with bounded concurrency, and each outcome is recorded conditionally on the row
//! still being ours: `COMPLETED`, or `FAILED` with exponential backoff and jitter, or `DEAD` once
//! the attempts are spent. The loop wakes on `LISTEN outbox_messages` the moment an upload
//! commits, claims again at once while batches come back full, and otherwise polls slowly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use shared::db;
use shared::domain::{Envelope, OutboxStatus};
use shared::telemetry::propagation;
use tracing::Instrument as _;
use shared::storage::{QueueClient, StorageError};
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::config::RelayConfig;
use crate::retry::{self, sleep_or_stop, Backoff};
use crate::Shutdown;

/// Re-exported so fakes in other crates can implement [`QueueSender`].
pub use async_trait::async_trait;

/// The one I/O seam of the relay: sends one encoded message body. Implemented by
/// [`QueueClient`]; tests inject a sender that fails on demand.
#[async_trait::async_trait]
pub trait QueueSender: Send + Sync {
    async fn send(&self, body: &str) -> anyhow::Result<()>;

    /// The queue's name, for the send spans.
    fn destination(&self) -> &str {
        ""
    }
}

#[async_trait::async_trait]
impl QueueSender for QueueClient {
    async fn send(&self, body: &str) -> anyhow::Result<()> {
        let started = Instant::now();
        let sent = QueueClient::send(self, body).await;
        crate::metrics::outbox_send(started.elapsed(), sent.is_ok());
        sent.map_err(send_error)
    }

    fn destination(&self) -> &str {
        self.name()
    }
}

fn send_error(e: StorageError) -> anyhow::Error {
    anyhow::Error::new(e).context("queue send failed")
}

/// What one [`run_once`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BatchReport {
    pub claimed: usize,
    pub sent: usize,
    /// Failed sends scheduled for a retry.
    pub failed: usize,
    /// Failed sends that used up their attempts.
    pub dead: usize,
    /// Claimed but handed back unsent because of a hard shutdown.
    pub released: usize,
}

/// Claims one batch, sends it and records the outcomes. `abort` is the hard-shutdown token: when
/// it fires mid-batch, the sends still in flight are abandoned and their rows released (due at
/// once) instead of waiting for the lease to expire.
pub async fn run_once(
    db: &PgPool,
    sender: &dyn QueueSender,
    cfg: &RelayConfig,
    abort: &CancellationToken,
) -> anyhow::Result<BatchReport> {
    let batch = db::outbox::claim_batch(db, cfg.batch_size, cfg.lease)
        .await
        .context("claiming outbox messages")?;
    let mut report = BatchReport {
        claimed: batch.len(),
        ..Default::default()
    };
    if batch.is_empty() {
        return Ok(report);
    }
    tracing::debug!(claimed = batch.len(), "claimed outbox batch");

    let all_ids: Vec<Uuid> = batch.iter().map(|m| m.id).collect();
    let mut sends = futures::stream::iter(batch.into_iter().map(|m| {
        let span = send_span(&m, sender.destination());
        async move {
            let envelope = Envelope {
                message_id: m.id,
                event_type: m.event_type,
                payload: m.payload,
                created_at: m.created_at,
            };
            let outcome = sender.send(&envelope.encode(cfg.encoding)).await;
            (m.id, m.attempts, outcome)
        }
        .instrument(span)
    }))
    .buffer_unordered(cfg.concurrency.max(1) as usize);

    let mut sent = Vec::with_capacity(all_ids.len());
    let mut failures = Vec::new();
    loop {
        tokio::select! {
            biased;
            next = sends.next() => match next {
                Some((id, _, Ok(()))) => sent.push(id),
                Some((id, attempts, Err(e))) => failures.push((id, attempts, e)),
                None => break,
            },
            () = abort.cancelled() => break,
        }
    }
    drop(sends);

    if !sent.is_empty() {
        let lags = with_db_retry(abort, || db::outbox::mark_sent(db, &sent))
            .await
            .context("recording sent outbox messages")?;
        report.sent = lags.len();
        crate::metrics::outbox_lags(&lags);
    }
    for (id, attempts, err) in failures {
        let retry_in = retry::jittered(cfg.backoff_base, cfg.backoff_cap, attempts);
        let error = format!("{err:#}");
        let outcome = with_db_retry(abort, || {
            db::outbox::mark_failed(db, id, &error, retry_in, cfg.max_attempts)
        })
        .await
        .context("recording a failed send")?;
        match outcome {
            Some((OutboxStatus::Dead, attempt)) => {
                report.dead += 1;
                tracing::error!(outbox_message_id = %id, attempt, error = %error,
                    "outbox message is DEAD after its last send attempt");
            }
            Some((_, attempt)) => {
                report.failed += 1;
                tracing::warn!(outbox_message_id = %id, attempt, error = %error,
                    retry_in_ms = retry_in.as_millis() as u64, "queue send failed; will retry");
            }
            None => {}
        }
    }

    let unsent: Vec<Uuid> = all_ids
        .into_iter()
        .filter(|id| !sent.contains(id))
        .collect();
    // Only a hard shutdown leaves claimed rows without an outcome.
    if abort.is_cancelled() && !unsent.is_empty() {
        report.released = db::outbox::release(db, &unsent)
            .await
            .context("releasing unsent outbox messages")? as usize;
        tracing::info!(
            released = report.released,
            "released unsent outbox messages at shutdown"
        );
    }
    crate::metrics::outbox_batch(&report);
    Ok(report)
}

/// The PRODUCER span of one send, in the trace of the upload that wrote the message.
fn send_span(m: &db::outbox::OutboxMessage, queue: &str) -> tracing::Span {
    let task_id = m.payload.get("task_id").and_then(|v| v.as_str());
    let span = tracing::info_span!("send",
        otel.name = %format_args!("send {queue}"),
        otel.kind = "producer",
        messaging.system = propagation::MESSAGING_SYSTEM,
        messaging.operation.type = "send",
        messaging.destination.name = queue,
        messaging.message.id = %m.id,
        outbox_message_id = %m.id,
        task_id = task_id.unwrap_or_default());
    propagation::continue_trace(
        &span,
        m.payload.get("traceparent").and_then(|v| v.as_str()),
    );
    span
}

/// Records an outcome, retrying for a short while when Postgres is briefly away: a send that
/// happened but was not recorded would be sent again after the lease (a harmless duplicate, but
/// avoidable).
async fn with_db_retry<T, F, Fut>(abort: &CancellationToken, mut f: F) -> sqlx::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sqlx::Result<T>>,
{
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match f().await {
            Err(e)
                if db::is_unavailable(&e) && Instant::now() < deadline && !abort.is_cancelled() =>
            {
                tracing::warn!(error = %e, "database unavailable while recording; retrying");
                tokio::time::sleep(backoff.next_delay()).await;
            }
            other => return other,
        }
    }
}

/// The relay loop: runs until `shutdown.stop` fires (finishing the batch in hand), or, with
/// `drain`, until nothing is claimable. Transient database failures are waited out; anything
/// else ends the loop with an error (the supervisor then stops the whole process).
pub async fn run(
    db: PgPool,
    sender: Arc<dyn QueueSender>,
    cfg: RelayConfig,
    shutdown: Shutdown,
    drain: bool,
) -> anyhow::Result<()> {
    tracing::info!(batch_size = cfg.batch_size, concurrency = cfg.concurrency,
        encoding = ?cfg.encoding, drain, "outbox relay started");
    let mut listener: Option<PgListener> = None;
    let mut last_purge: Option<Instant> = None;
    let mut db_backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let stats_every = Duration::from_secs(60);
    let mut window = (Instant::now(), 0usize);

    while !shutdown.stop.is_cancelled() {
        // Listen before claiming, so a commit between the claim and the wait is not missed.
        if listener.is_none() && !drain {
            listener = connect_listener(&db).await;
        }
        let report = match run_once(&db, sender.as_ref(), &cfg, &shutdown.abort).await {
            Ok(r) => {
                db_backoff.reset();
                r
            }
            Err(e) if retry::is_db_unavailable(&e) => {
                tracing::warn!(
                    error = format!("{e:#}"),
                    "relay: database unavailable; backing off"
                );
                listener = None;
                db_backoff.wait(&shutdown.stop).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        window.1 += report.sent;
        if window.0.elapsed() >= stats_every {
            if window.1 > 0 {
                tracing::info!(
                    sent = window.1,
                    per_second = window.1 as f64 / window.0.elapsed().as_secs_f64(),
                    "relay throughput"
                );
            }
            window = (Instant::now(), 0);
        }
        if report.claimed as i64 >= cfg.batch_size {
            continue; // more is waiting: claim again at once
        }
        if last_purge.is_none_or(|t| t.elapsed() >= cfg.purge_interval) {
            last_purge = Some(Instant::now());
            if let Err(e) = purge(&db, &cfg).await {
                tracing::warn!(error = %e, "outbox retention purge failed");
            }
        }
        if drain {
            if report.claimed == 0 {
                tracing::info!("outbox drained: nothing claimable");
                return Ok(());
            }
            continue;
        }
        wait_for_work(&mut listener, &shutdown.stop, cfg.poll_interval).await;
    }
    tracing::info!("outbox relay stopped");
    Ok(())
}

/// Deletes COMPLETED messages older than the retention, in small batches.
pub async fn purge(db: &PgPool, cfg: &RelayConfig) -> sqlx::Result<u64> {
    const BATCH: i64 = 500;
    let mut total = 0;
    loop {
        let n = db::outbox::purge_completed(db, cfg.retention, BATCH).await?;
        total += n;
        if n < BATCH as u64 {
            break;
        }
    }
    if total > 0 {
        tracing::info!(
            deleted = total,
            "purged completed outbox messages past retention"
        );
    }
    Ok(total)
}

async fn connect_listener(db: &PgPool) -> Option<PgListener> {
    let mut listener = match PgListener::connect_with(db).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "cannot LISTEN for outbox inserts; polling");
            return None;
        }
    };
    match listener.listen("outbox_messages").await {
        Ok(()) => Some(listener),
        Err(e) => {
            tracing::warn!(error = %e, "cannot LISTEN for outbox inserts; polling");
            None
        }
    }
}

/// Waits for a NOTIFY, the poll interval, or shutdown. A broken listener is dropped (and
/// reconnected by the loop), never fatal: the poll covers what it misses.
async fn wait_for_work(
    listener: &mut Option<PgListener>,
    stop: &CancellationToken,
    poll: Duration,
) {
    let Some(l) = listener.as_mut() else {
        sleep_or_stop(stop, poll).await;
        return;
    };
    tokio::select! {
        () = stop.cancelled() => {}
        () = tokio::time::sleep(poll) => {}
        got = l.try_recv() => match got {
            Ok(Some(_)) => {
                // Swallow the burst of notifications that came with it: one claim serves all.
                while l.next_buffered().is_some() {}
            }
            Ok(None) | Err(_) => {
                tracing::warn!("LISTEN connection lost; reconnecting");
                *listener = None;
            }
        },
    }
}
