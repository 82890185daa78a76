//! The outbox relay: moves committed `outbox_messages` to Azure Queue Storage. One short statement
//! claims a batch (`FOR UPDATE SKIP LOCKED` plus a short lease, renewed by a heartbeat while the
//! batch is being sent, so any number of relays may run and a dead relay's batch is claimable
//! again within one lease), the sends happen outside any transaction with bounded concurrency,
//! and each outcome is recorded conditionally on the row still being ours: `COMPLETED`; `FAILED`
//! with a backoff that does not spend an attempt when the queue service was unavailable (an
//! outage never makes a message `DEAD`); or, when the service refused the message itself,
//! `FAILED` with exponential backoff and jitter, `DEAD` once the attempts are spent. The loop
//! wakes on `LISTEN outbox_messages` the moment an upload commits, claims again at once while
//! batches come back full, and otherwise sleeps until the next row comes due ([`idle`]).

mod heartbeat;
mod idle;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use shared::db;
use shared::domain::{Envelope, OutboxStatus};
use shared::storage::{QueueClient, StorageError};
use shared::telemetry::propagation;
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::bounds::Budget;
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

/// True when a send failed because the queue service was unavailable to us (transport errors,
/// timeouts, 408, 429, 5xx: [`StorageError::is_transient`]; no token, a missing role, no queue:
/// [`StorageError::is_access_refused`]) rather than because of the message. Such failures back
/// off without spending an attempt; only a refusal of the message itself (e.g. 413) counts.
pub fn is_unavailable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<StorageError>()
            .is_some_and(|e| e.is_transient() || e.is_access_refused())
    })
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
    /// Not sent because the queue service was unavailable: backed off, no attempt spent.
    pub deferred: usize,
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
    claim_and_send(db, sender, cfg, cfg.batch_size, abort).await
}

/// How one claimed message's send ended.
enum Sent {
    Ok,
    /// The service was unavailable (or was found so by another send of this batch, and this one
    /// was not tried): back off, no attempt spent.
    Deferred,
    /// The service refused this message: an attempt spent.
    Failed(anyhow::Error),
}

/// [`run_once`] claiming at most `limit` messages. The batch's claims are renewed every third of
/// the lease until every outcome is recorded ([`heartbeat::keep_claimed`]).
async fn claim_and_send(
    db: &PgPool,
    sender: &dyn QueueSender,
    cfg: &RelayConfig,
    limit: i64,
    abort: &CancellationToken,
) -> anyhow::Result<BatchReport> {
    let batch = db::outbox::claim_batch(db, limit, cfg.lease)
        .await
        .context("claiming outbox messages")?;
    if batch.is_empty() {
        return Ok(BatchReport::default());
    }
    tracing::debug!(claimed = batch.len(), "claimed outbox batch");
    let all_ids: Vec<Uuid> = batch.iter().map(|m| m.id).collect();
    tokio::select! {
        report = send_and_record(db, sender, cfg, batch, abort) => report,
        never = heartbeat::keep_claimed(db, &all_ids, cfg.lease) => match never {},
    }
}

async fn send_and_record(
    db: &PgPool,
    sender: &dyn QueueSender,
    cfg: &RelayConfig,
    batch: Vec<db::outbox::OutboxMessage>,
    abort: &CancellationToken,
) -> anyhow::Result<BatchReport> {
    let mut report = BatchReport {
        claimed: batch.len(),
        ..Default::default()
    };
    let all_ids: Vec<Uuid> = batch.iter().map(|m| m.id).collect();
    // Once one send finds the service unavailable, the rest of the batch is not tried: it would
    // fail the same way, each after the SDK's own retries.
    let unavailable = AtomicBool::new(false);
    let outage_error = std::sync::Mutex::new(None::<String>);
    let mut sends = futures::stream::iter(batch.into_iter().map(|m| {
        let span = send_span(&m, sender.destination());
        let (unavailable, outage_error) = (&unavailable, &outage_error);
        async move {
            let key = (m.id, m.attempts, m.deferrals);
            if unavailable.load(Ordering::Relaxed) {
                return (key, Sent::Deferred);
            }
            let envelope = Envelope {
                message_id: m.id,
                event_type: m.event_type,
                payload: m.payload,
                created_at: m.created_at,
            };
            let outcome = match sender.send(&envelope.encode(cfg.encoding)).await {
                Ok(()) => Sent::Ok,
                Err(e) if is_unavailable(&e) => {
                    unavailable.store(true, Ordering::Relaxed);
                    if let Ok(mut first) = outage_error.lock() {
                        first.get_or_insert_with(|| format!("{e:#}"));
                    }
                    Sent::Deferred
                }
                Err(e) => Sent::Failed(e),
            };
            (key, outcome)
        }
        .instrument(span)
    }))
    .buffer_unordered(cfg.concurrency.max(1) as usize);

    let mut sent = Vec::with_capacity(all_ids.len());
    let mut deferred = Vec::new();
    let mut failures = Vec::new();
    loop {
        tokio::select! {
            biased;
            next = sends.next() => match next {
                Some(((id, _, _), Sent::Ok)) => sent.push(id),
                Some(((id, _, deferrals), Sent::Deferred)) => deferred.push((id, deferrals)),
                Some(((id, attempts, _), Sent::Failed(e))) => failures.push((id, attempts, e)),
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
    if !deferred.is_empty() {
        let error = outage_error
            .lock()
            .ok()
            .and_then(|mut e| e.take())
            .unwrap_or_else(|| "the queue service is unavailable".to_owned());
        report.deferred = defer(db, cfg, &deferred, &error, abort).await? as usize;
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

    // Only a hard shutdown leaves claimed rows without an outcome.
    let unsent: Vec<Uuid> = all_ids
        .into_iter()
        .filter(|id| !sent.contains(id))
        .collect();
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

/// Backs off the messages the queue service could not take, each by its own jittered delay
/// (doubling with its deferrals, up to `RELAY_OUTAGE_BACKOFF_CAP`), in one statement.
async fn defer(
    db: &PgPool,
    cfg: &RelayConfig,
    deferred: &[(Uuid, i32)],
    error: &str,
    abort: &CancellationToken,
) -> anyhow::Result<u64> {
    let ids: Vec<Uuid> = deferred.iter().map(|(id, _)| *id).collect();
    let delays: Vec<f64> = deferred
        .iter()
        .map(|(_, n)| retry::jittered(cfg.backoff_base, cfg.outage_backoff_cap, *n).as_secs_f64())
        .collect();
    let n = with_db_retry(abort, || db::outbox::defer(db, &ids, &delays, error))
        .await
        .context("recording deferred sends")?;
    let longest = delays.iter().copied().fold(0.0, f64::max);
    tracing::warn!(
        deferred = n,
        error,
        retry_in_ms_max = (longest * 1000.0) as u64,
        "queue service unavailable; sends deferred (no attempt spent)"
    );
    Ok(n)
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
    propagation::continue_trace(&span, m.payload.get("traceparent").and_then(|v| v.as_str()));
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
/// `drain`, until nothing is claimable and no other relay holds a claim that could still expire
/// ([`idle::DrainWait`]). Transient database failures are waited out; anything else ends the loop
/// with an error (the supervisor then stops the whole process).
pub async fn run(
    db: PgPool,
    sender: Arc<dyn QueueSender>,
    cfg: RelayConfig,
    shutdown: Shutdown,
    drain: bool,
) -> anyhow::Result<()> {
    run_with_budget(db, sender, cfg, shutdown, drain, Budget::unlimited()).await
}

/// [`run`], claiming no more than the messages of `budget` (`--max-messages` with `--role
/// relay`); once they are spent it claims nothing more and waits for the supervisor's stop.
pub async fn run_with_budget(
    db: PgPool,
    sender: Arc<dyn QueueSender>,
    cfg: RelayConfig,
    shutdown: Shutdown,
    drain: bool,
    budget: Arc<Budget>,
) -> anyhow::Result<()> {
    tracing::info!(batch_size = cfg.batch_size, concurrency = cfg.concurrency,
        encoding = ?cfg.encoding, lease_ms = cfg.lease.as_millis() as u64, drain,
        "outbox relay started");
    let mut listener: Option<PgListener> = None;
    let mut last_purge: Option<Instant> = None;
    let mut db_backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let stats_every = Duration::from_secs(60);
    let mut window = (Instant::now(), 0usize);
    let mut drain_wait = idle::DrainWait::new(cfg.lease);

    while !shutdown.stop.is_cancelled() {
        // Listen before claiming, so a commit between the claim and the wait is not missed.
        if listener.is_none() && !drain {
            listener = idle::connect_listener(&db).await;
        }
        let limit = budget.reserve(usize::try_from(cfg.batch_size).unwrap_or(usize::MAX));
        if limit == 0 {
            tracing::info!("message budget spent: claiming nothing more");
            shutdown.stop.cancelled().await;
            break;
        }
        let claimed =
            claim_and_send(&db, sender.as_ref(), &cfg, limit as i64, &shutdown.abort).await;
        budget.settle(limit, claimed.as_ref().map_or(0, |r| r.claimed));
        let report = match claimed {
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
        if report.claimed >= limit {
            continue; // more is waiting: claim again at once
        }
        if last_purge.is_none_or(|t| t.elapsed() >= cfg.purge_interval) {
            last_purge = Some(Instant::now());
            if let Err(e) = purge(&db, &cfg).await {
                tracing::warn!(error = %e, "outbox retention purge failed");
            }
        }
        if drain && report.claimed > 0 {
            drain_wait.reset();
            continue;
        }
        // Nothing more to claim now: when does something come due?
        let due = match db::outbox::due(&db).await {
            Ok(d) => d,
            Err(e) if db::is_unavailable(&e) => {
                tracing::warn!(error = %e, "relay: database unavailable; backing off");
                listener = None;
                db_backoff.wait(&shutdown.stop).await;
                continue;
            }
            Err(e) => return Err(anyhow::Error::new(e).context("reading when the outbox is due")),
        };
        if drain {
            match drain_wait.step(&due) {
                idle::DrainStep::Done => return Ok(()),
                idle::DrainStep::Wait(d) => {
                    sleep_or_stop(&shutdown.stop, d).await;
                    continue;
                }
            }
        }
        let wake = idle::wake_after(&due, cfg.poll_interval);
        idle::wait_for_work(&mut listener, &shutdown.stop, wake).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn service(status: u16) -> anyhow::Error {
        send_error(StorageError::Service { status, code: None })
    }

    #[test]
    fn an_unavailable_service_is_told_from_a_refused_message() {
        assert!(is_unavailable(&send_error(StorageError::Transport(
            "connection refused".into()
        ))));
        // The service refusing us (a missing role) is no fault of the message either.
        for status in [401, 403, 408, 429, 500, 503] {
            assert!(is_unavailable(&service(status)), "{status}");
        }
        for status in [400, 404, 413] {
            assert!(!is_unavailable(&service(status)), "{status}");
        }
        assert!(!is_unavailable(&anyhow::anyhow!("anything else")));
    }
}
