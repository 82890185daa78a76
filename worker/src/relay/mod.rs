//! The outbox relay: moves committed `outbox_messages` to Azure Queue Storage, as the first user
//! of the claim loop ([`crate::claim`]: claims with `SKIP LOCKED` and a renewed lease, sends
//! outside any transaction, outcomes recorded conditionally on the row still being ours, woken
//! by `LISTEN outbox_messages`). The queue is its one destination. Each outcome is `COMPLETED`;
//! `FAILED` with a backoff that does not spend an attempt when the queue service was unavailable
//! (an outage never makes a message `DEAD`, and the rest of the batch is not tried); or, when the
//! service refused the message itself, `FAILED` with exponential backoff and jitter, `DEAD` once
//! the attempts are spent. The retention of sent messages is a job of the maintenance loop
//! ([`crate::maintenance::outbox_retention`]).

pub mod config;
pub mod metrics;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use shared::db::{self, outbox::OutboxMessage, Due};
use shared::domain::{Envelope, OutboxStatus};
use shared::failure;
use shared::storage::{QueueClient, StorageError};
use shared::telemetry::propagation;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::bounds::Budget;
use crate::claim::{self, with_db_retry, LoopConfig, Work};
use crate::link::Link;
use crate::retry;
use crate::Shutdown;
use config::RelayConfig;

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
        metrics::send(started.elapsed(), sent.is_ok());
        sent.map_err(send_error)
    }

    fn destination(&self) -> &str {
        self.name()
    }
}

fn send_error(e: StorageError) -> anyhow::Error {
    anyhow::Error::new(e).context("queue send failed")
}

/// True when a send failed for a reason that is no fault of the message: the queue service is
/// down, or it refuses us (a missing role, no token, no queue): [`failure::storage`]. Such
/// failures back off without spending an attempt; only a refusal of the message itself (e.g.
/// 413) counts.
pub fn is_unavailable(e: &anyhow::Error) -> bool {
    failure::of(&**e).spares_the_message()
}

/// What one [`run_once`] did.
pub type BatchReport = claim::Report;

/// Claims one batch, sends it and records the outcomes. `abort` is the hard-shutdown token: when
/// it fires mid-batch, the sends still in flight are abandoned and their rows released (due at
/// once) instead of waiting for the lease to expire.
pub async fn run_once(
    db: &PgPool,
    sender: &dyn QueueSender,
    cfg: &RelayConfig,
    abort: &CancellationToken,
) -> anyhow::Result<BatchReport> {
    let outbox = Outbox {
        db,
        sender,
        cfg,
        consumer: &Link::default(),
    };
    claim::run_once(&outbox, &loop_config(cfg), cfg.batch_size, abort).await
}

/// The relay loop: runs until `shutdown.stop` fires (finishing the batch in hand), or, with
/// `drain`, until nothing is claimable and no other relay holds a claim that could still expire.
/// Transient database failures are waited out; anything else ends the loop with an error (the
/// supervisor then starts it again, the other loops going on).
pub async fn run(
    db: PgPool,
    sender: Arc<dyn QueueSender>,
    cfg: RelayConfig,
    shutdown: Shutdown,
    drain: bool,
) -> anyhow::Result<()> {
    let alone = Link::default();
    run_with_budget(db, sender, cfg, shutdown, drain, Budget::unlimited(), alone).await
}

/// [`run`], claiming no more than the messages of `budget` (`--max-messages` with `--role
/// relay`); once they are spent it claims nothing more and waits for the supervisor's stop.
/// `consumer` is what the consumer of the same process has in hand: a drain waits for tasks
/// held at a tenant's share for as long as it is not empty, and it is told what the relay sends
/// ([`Link`]).
pub async fn run_with_budget(
    db: PgPool,
    sender: Arc<dyn QueueSender>,
    cfg: RelayConfig,
    shutdown: Shutdown,
    drain: bool,
    budget: Arc<Budget>,
    consumer: Link,
) -> anyhow::Result<()> {
    tracing::info!(batch_size = cfg.batch_size, concurrency = cfg.concurrency,
        encoding = ?cfg.encoding, lease_ms = cfg.lease.as_millis() as u64, drain,
        "outbox relay started");
    let outbox = Outbox {
        db: &db,
        sender: sender.as_ref(),
        cfg: &cfg,
        consumer: &consumer,
    };
    claim::run(&outbox, &loop_config(&cfg), &shutdown, drain, &budget).await
}

/// The relay's settings as a claim loop's: one destination, one batch in flight at a time.
fn loop_config(cfg: &RelayConfig) -> LoopConfig {
    LoopConfig {
        batch_size: cfg.batch_size,
        max_held: usize::try_from(cfg.batch_size).unwrap_or(usize::MAX),
        concurrency: cfg.concurrency.max(1) as usize,
        lease: cfg.lease,
        poll_interval: cfg.poll_interval,
    }
}

/// The queue: the relay's one destination.
const QUEUE: Uuid = Uuid::nil();

/// The outbox as a claim loop's work: its rows, and the queue they are sent to.
struct Outbox<'a> {
    db: &'a PgPool,
    sender: &'a dyn QueueSender,
    cfg: &'a RelayConfig,
    /// The consumer of this process, if it runs one (otherwise never in hand, and told of sends
    /// no one waits for).
    consumer: &'a Link,
}

/// How one send ended.
enum Sent {
    Ok,
    /// The service was unavailable: back off, no attempt spent.
    Unavailable(String),
    /// The service refused this message: an attempt spent.
    Failed(anyhow::Error),
}

#[async_trait::async_trait]
impl Work for Outbox<'_> {
    type Item = OutboxMessage;
    type Sent = Sent;

    fn name(&self) -> &'static str {
        "relay"
    }

    fn rows(&self) -> (&'static str, &'static str) {
        ("outbox", "relay")
    }

    fn db(&self) -> &PgPool {
        self.db
    }

    fn channel(&self) -> &'static str {
        "outbox_messages"
    }

    fn id(m: &OutboxMessage) -> Uuid {
        m.id
    }

    fn destination(_: &OutboxMessage) -> Uuid {
        QUEUE
    }

    fn is_down(sent: &Sent) -> bool {
        matches!(sent, Sent::Unavailable(_))
    }

    fn span(&self, m: &OutboxMessage) -> tracing::Span {
        send_span(m, self.sender.destination())
    }

    async fn claim(
        &self,
        limit: i64,
        lease: Duration,
        held: &HashMap<Uuid, usize>,
    ) -> sqlx::Result<Vec<OutboxMessage>> {
        if held.contains_key(&QUEUE) {
            return Ok(Vec::new()); // one batch at a time: the queue is the only destination
        }
        db::outbox::claim_batch(self.db, limit, lease, self.cfg.tenant_in_flight).await
    }

    async fn extend(&self, ids: &[Uuid], lease: Duration) -> sqlx::Result<u64> {
        db::outbox::extend_claims(self.db, ids, lease).await
    }

    async fn send(&self, m: &OutboxMessage) -> Sent {
        let envelope = Envelope {
            message_id: m.id,
            event_type: m.event_type.clone(),
            payload: m.payload.clone(),
            created_at: m.created_at,
        };
        match self.sender.send(&envelope.encode(self.cfg.encoding)).await {
            Ok(()) => Sent::Ok,
            Err(e) if is_unavailable(&e) => Sent::Unavailable(format!("{e:#}")),
            Err(e) => Sent::Failed(e),
        }
    }

    async fn record(
        &self,
        batch: Vec<(OutboxMessage, Option<Sent>)>,
        abort: &CancellationToken,
    ) -> anyhow::Result<BatchReport> {
        let mut report = BatchReport::default();
        let mut sent = Vec::new();
        let mut deferred = Vec::new();
        let mut failures = Vec::new();
        let mut outage_error = None;
        for (m, outcome) in batch {
            match outcome {
                Some(Sent::Ok) => sent.push(m.id),
                Some(Sent::Unavailable(e)) => {
                    outage_error.get_or_insert(e);
                    deferred.push((m.id, m.deferrals));
                }
                None => deferred.push((m.id, m.deferrals)),
                Some(Sent::Failed(e)) => failures.push((m.id, m.attempts, e)),
            }
        }
        if !sent.is_empty() {
            let lags = with_db_retry(abort, || db::outbox::mark_sent(self.db, &sent))
                .await
                .context("recording sent outbox messages")?;
            report.sent = lags.len();
            metrics::lags(&lags);
            self.consumer.sent();
        }
        if !deferred.is_empty() {
            let error =
                outage_error.unwrap_or_else(|| "the queue service is unavailable".to_owned());
            report.deferred = self.defer(&deferred, &error, abort).await? as usize;
        }
        for (id, attempts, err) in failures {
            let retry_in = retry::jittered(self.cfg.backoff_base, self.cfg.backoff_cap, attempts);
            let error = format!("{err:#}");
            let outcome = with_db_retry(abort, || {
                db::outbox::mark_failed(self.db, id, &error, retry_in, self.cfg.max_attempts)
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
        metrics::batch(&report);
        Ok(report)
    }

    async fn release(&self, ids: &[Uuid]) -> sqlx::Result<u64> {
        db::outbox::release(self.db, ids).await
    }

    async fn due(&self) -> sqlx::Result<Due> {
        db::outbox::due(self.db, self.cfg.tenant_in_flight).await
    }

    fn working_here(&self) -> bool {
        self.consumer.in_hand() > 0
    }
}

impl Outbox<'_> {
    /// Backs off the messages the queue service could not take, each by its own jittered delay
    /// (doubling with its deferrals, up to `RELAY_OUTAGE_BACKOFF_CAP`), in one statement.
    async fn defer(
        &self,
        deferred: &[(Uuid, i32)],
        error: &str,
        abort: &CancellationToken,
    ) -> anyhow::Result<u64> {
        let ids: Vec<Uuid> = deferred.iter().map(|(id, _)| *id).collect();
        let delays: Vec<f64> = deferred
            .iter()
            .map(|(_, n)| {
                retry::jittered(self.cfg.backoff_base, self.cfg.outage_backoff_cap, *n)
                    .as_secs_f64()
            })
            .collect();
        let n = with_db_retry(abort, || db::outbox::defer(self.db, &ids, &delays, error))
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
}

/// The PRODUCER span of one send, in the trace of the upload that wrote the message.
fn send_span(m: &OutboxMessage, queue: &str) -> tracing::Span {
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
