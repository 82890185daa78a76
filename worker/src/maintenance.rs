//! The maintenance loop: the worker's housekeeping, apart from the loops that deliver work, so
//! that a busy relay or a slow endpoint never delays a purge and a purge never delays a send. It
//! runs a list of named [`Job`]s, each every its own interval (the first run at start-up): the
//! retention of sent outbox messages where the relay runs, of events and of the webhook attempt
//! log where webhook delivery runs ([`jobs`]). A failed run is logged and tried again at the next
//! interval (an outage passes; a bad statement keeps warning). With `--drain`, each job runs once
//! and the loop ends, so a drain job still exits.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::PgPool;
use tokio::time::Instant;

use crate::config::RunConfig;
use crate::{relay, webhooks, Shutdown};

/// The shortest interval between two runs of a job, whatever its setting says: a zero interval
/// would make the loop spin.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// One housekeeping job: its name (for logs), how often it runs, and what it does with the
/// worker's pool and settings.
pub struct Job {
    name: &'static str,
    every: Duration,
    run:
        Box<dyn Fn(PgPool, Arc<RunConfig>) -> BoxFuture<'static, anyhow::Result<()>> + Send + Sync>,
}

impl Job {
    pub fn new<F, Fut>(name: &'static str, every: Duration, run: F) -> Self
    where
        F: Fn(PgPool, Arc<RunConfig>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        Self {
            name,
            every: every.max(MIN_INTERVAL),
            run: Box::new(move |db, cfg| Box::pin(run(db, cfg))),
        }
    }
}

/// The jobs of the loops `cfg`'s role runs, on their settings' intervals: none for the consumer
/// alone.
pub fn jobs(cfg: &RunConfig) -> Vec<Job> {
    let mut jobs = Vec::new();
    if cfg.role.runs_relay() {
        jobs.push(Job::new(
            "outbox retention",
            cfg.relay.purge_interval,
            |db, cfg| async move {
                relay::purge(&db, &cfg.relay)
                    .await
                    .map(drop)
                    .map_err(Into::into)
            },
        ));
    }
    if cfg.role.runs_webhooks() {
        jobs.push(Job::new(
            "events retention",
            cfg.webhooks.purge_interval,
            |db, cfg| async move { webhooks::purge(&db, &cfg.webhooks).await },
        ));
    }
    jobs
}

/// Runs `jobs` until `shutdown.stop` fires (a job in hand finishes unless `shutdown.abort`
/// fires first), or with `drain` until each has run once. A job's failure is logged, never
/// fatal.
pub async fn run(
    db: PgPool,
    cfg: Arc<RunConfig>,
    jobs: Vec<Job>,
    shutdown: Shutdown,
    drain: bool,
) -> anyhow::Result<()> {
    let names: Vec<&str> = jobs.iter().map(|j| j.name).collect();
    tracing::info!(jobs = ?names, drain, "maintenance started");
    let mut next = vec![Instant::now(); jobs.len()];
    while !shutdown.stop.is_cancelled() {
        for (job, due) in jobs.iter().zip(&mut next) {
            if shutdown.stop.is_cancelled() || Instant::now() < *due {
                continue;
            }
            *due = Instant::now() + job.every;
            tokio::select! {
                done = (job.run)(db.clone(), Arc::clone(&cfg)) => if let Err(e) = done {
                    tracing::warn!(job = job.name, error = format!("{e:#}"), "housekeeping failed");
                },
                () = shutdown.abort.cancelled() => break,
            }
        }
        if drain {
            break;
        }
        let Some(wake) = next.iter().min().copied() else {
            break;
        };
        tokio::select! {
            () = shutdown.stop.cancelled() => {}
            () = tokio::time::sleep_until(wake) => {}
        }
    }
    tracing::info!("maintenance stopped");
    Ok(())
}

/// Runs `step` (one `DELETE … LIMIT batch`) until a batch comes back short, and returns how many
/// rows it deleted in all: small batches keep each statement's locks and WAL short.
pub async fn in_batches<F, Fut>(batch: i64, mut step: F) -> sqlx::Result<u64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = sqlx::Result<u64>>,
{
    let mut total = 0;
    loop {
        let n = step().await?;
        total += n;
        if n < u64::try_from(batch).unwrap_or(0) {
            return Ok(total);
        }
    }
}
