//! Runs the relay and the consumer under one [`Shutdown`] and one `TaskTracker`. A signal (the
//! caller's token) stops both loops; they finish in-flight work within the grace period, after
//! which the abort token makes them release what is left. If one loop ends with an error — or,
//! outside `--drain`, ends at all without being asked to — the other is stopped the same way and
//! [`run`] returns an error, so the process exits non-zero instead of running half-alive. A job
//! replica's bounds (`--max-runtime`, `--max-messages`) stop it like a signal: no new work,
//! in-flight work finished, exit 0.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use shared::storage::{BlobStore, QueueClient};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::bounds::Budget;
use crate::config::{RelayConfig, RunConfig};
use crate::consumer::{self, Consumer};
use crate::parse::isolate::Isolation;
use crate::relay::{self, QueueSender};
use crate::retry::Backoff;
use crate::Shutdown;

/// How long loops get to release their work after the grace period before we give up on them.
const ABORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Builds the clients from `cfg`, serves `/metrics` on `METRICS_ADDR` ([`crate::metrics`]) and
/// runs the configured loops until `signal` fires (exit 0 after a clean drain of in-flight
/// work), or with `--drain` until the work is done.
pub async fn run(cfg: RunConfig, signal: CancellationToken) -> anyhow::Result<()> {
    let limits = Limits {
        deadline: cfg.bounds.max_runtime.map(|d| Instant::now() + d),
        budget: Budget::new(cfg.bounds.max_messages),
    };
    let db = cfg.database.pool().context("invalid DATABASE_URL")?;
    let queue = QueueClient::new(&cfg.storage, &cfg.storage.queue_name)
        .context("configuring the queue client")?;
    let poison_name = format!("{}-poison", cfg.storage.queue_name);
    let poison = QueueClient::new(&cfg.storage, &poison_name)
        .context("configuring the poison queue client")?;
    let blobs = BlobStore::new(&cfg.storage).context("configuring the blob client")?;
    let sources = crate::metrics::Sources {
        outbox: cfg.role.runs_relay().then(|| db.clone()),
        queues: cfg
            .role
            .runs_consumer()
            .then(|| (queue.clone(), poison.clone())),
    };
    let exporter = crate::metrics::Exporter::start(cfg.metrics_addr, sources).await?;
    // Storage may still be starting (a container platform starts everything at once): retry
    // transient failures until the signal, fail fast on anything else (bad credentials…).
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        let created = match queue.ensure_exists().await {
            Ok(()) if cfg.role.runs_consumer() => poison.ensure_exists().await,
            other => other,
        };
        match created {
            Ok(()) => {
                if backoff.failures() > 0 {
                    tracing::info!(
                        failed_tries = backoff.failures(),
                        "storage is reachable; starting"
                    );
                }
                break;
            }
            Err(e) if limits.deadline.is_some_and(|d| Instant::now() >= d) => {
                return Err(anyhow::Error::new(e)
                    .context("storage was unavailable for the whole --max-runtime"));
            }
            Err(e) if e.is_transient() && !signal.is_cancelled() => {
                // One line when the outage starts and one when it ends, not one per try.
                if backoff.failures() == 0 {
                    tracing::warn!(error = %e, "storage unavailable at start-up; retrying until it answers");
                } else {
                    tracing::debug!(error = %e, "storage unavailable at start-up; retrying again");
                }
                backoff.wait(&signal).await;
                if signal.is_cancelled() {
                    return Ok(());
                }
            }
            Err(e) => return Err(anyhow::Error::new(e).context("creating the queues")),
        }
    }
    let exe = match &cfg.parse.parser_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("locating the worker executable")?,
    };
    let isolation = Isolation::new(exe, cfg.parse.limits.clone());

    // The message budget is the consumer's when there is one (the relay of `--role all` only
    // feeds it), and the relay's with `--role relay`.
    let relay = cfg.role.runs_relay().then(|| RelayLoop {
        db: db.clone(),
        sender: Arc::new(queue.clone()),
        cfg: cfg.relay.clone(),
        budget: if cfg.role.runs_consumer() {
            Budget::unlimited()
        } else {
            Arc::clone(&limits.budget)
        },
    });
    let consumer = cfg.role.runs_consumer().then(|| {
        Consumer::new(
            db.clone(),
            queue.clone(),
            poison,
            blobs,
            isolation,
            cfg.consumer.clone(),
        )
        .with_budget(Arc::clone(&limits.budget))
    });
    let result = supervise(
        relay,
        consumer,
        cfg.drain,
        cfg.shutdown_grace,
        limits,
        signal,
    )
    .await;
    exporter.stop().await;
    result
}

/// What the relay loop runs with: its database, where it sends, its settings and how many
/// messages it may claim.
pub struct RelayLoop {
    pub db: sqlx::PgPool,
    pub sender: Arc<dyn QueueSender>,
    pub cfg: RelayConfig,
    pub budget: Arc<Budget>,
}

/// When a job replica stops by itself: `--max-runtime` (the deadline) and `--max-messages` (the
/// budget, [`Budget::spent`] once used up).
pub struct Limits {
    pub deadline: Option<Instant>,
    pub budget: Arc<Budget>,
}

/// Runs the given loops (either may be absent) until they end; see the module docs.
pub async fn supervise(
    relay: Option<RelayLoop>,
    consumer: Option<Consumer>,
    drain: bool,
    grace: Duration,
    limits: Limits,
    signal: CancellationToken,
) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    let tracker = TaskTracker::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(&'static str, anyhow::Result<()>)>();
    let relay_done = CancellationToken::new();
    let mut pending = 0;

    if let Some(RelayLoop {
        db,
        sender,
        cfg,
        budget,
    }) = relay
    {
        pending += 1;
        let (shutdown, tx, done) = (shutdown.clone(), tx.clone(), relay_done.clone());
        tracker.spawn(async move {
            let result = relay::run_with_budget(db, sender, cfg, shutdown, drain, budget).await;
            done.cancel();
            let _ = tx.send(("relay", result));
        });
    } else {
        relay_done.cancel();
    }
    if let Some(consumer) = consumer {
        pending += 1;
        let (shutdown, tx, done) = (shutdown.clone(), tx.clone(), relay_done.clone());
        tracker.spawn(async move {
            let result = consumer::run(consumer, shutdown, drain, done).await;
            let _ = tx.send(("consumer", result));
        });
    }
    tracker.close();
    drop(tx);

    let mut first_error: Option<anyhow::Error> = None;
    let mut grace_ends: Option<Instant> = None;
    let mut abort_ends: Option<Instant> = None;
    let begin_stop = |grace_ends: &mut Option<Instant>| {
        if grace_ends.is_none() {
            shutdown.stop.cancel();
            *grace_ends = Some(Instant::now() + grace);
        }
    };
    while pending > 0 {
        let deadline = abort_ends.or(grace_ends);
        tokio::select! {
            () = signal.cancelled(), if grace_ends.is_none() => {
                tracing::info!(grace_secs = grace.as_secs_f64(), "stopping: finishing in-flight work");
                begin_stop(&mut grace_ends);
            }
            () = sleep_until_opt(limits.deadline), if grace_ends.is_none() => {
                tracing::info!(grace_secs = grace.as_secs_f64(),
                    "max runtime reached: taking no new work, finishing in-flight work");
                begin_stop(&mut grace_ends);
            }
            () = limits.budget.spent().cancelled(), if grace_ends.is_none() => {
                tracing::info!(grace_secs = grace.as_secs_f64(),
                    "max messages taken: taking no new work, finishing in-flight work");
                begin_stop(&mut grace_ends);
            }
            Some((name, result)) = rx.recv() => {
                pending -= 1;
                match result {
                    Err(e) => {
                        tracing::error!(task = name, error = format!("{e:#}"), "loop failed; stopping the worker");
                        first_error.get_or_insert(e.context(format!("the {name} loop failed")));
                        begin_stop(&mut grace_ends);
                    }
                    Ok(()) if !drain && !shutdown.stop.is_cancelled() => {
                        tracing::error!(task = name, "loop ended unexpectedly; stopping the worker");
                        first_error.get_or_insert(anyhow::anyhow!("the {name} loop ended unexpectedly"));
                        begin_stop(&mut grace_ends);
                    }
                    Ok(()) => tracing::info!(task = name, "loop finished"),
                }
            }
            () = sleep_until_opt(deadline) => {
                if abort_ends.is_none() {
                    tracing::warn!("grace period over: releasing in-flight work");
                    shutdown.abort.cancel();
                    abort_ends = Some(Instant::now() + ABORT_TIMEOUT);
                } else {
                    return Err(first_error.unwrap_or_else(|| {
                        anyhow::anyhow!("loops did not stop within the grace period")
                    }));
                }
            }
        }
    }
    tracker.wait().await;
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
