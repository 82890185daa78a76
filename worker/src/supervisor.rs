//! Runs the worker's loops (the relay, the consumer, webhook delivery: whichever the role names,
//! and the maintenance loop of their purges, each a [`Loop`]) under one [`Shutdown`] and one
//! `TaskTracker`. A signal (the caller's token) stops every loop; they finish in-flight work
//! within the grace period, after which the abort token makes them release what is left.
//!
//! One loop's failure never takes the others down: a loop that ends with an error (or, outside
//! `--drain`, ends at all without being asked to) is logged, counted
//! (`sheetrelay_worker_loop_restarts_total`) and started again after a backoff, while the other
//! roles go on. Parsing for every tenant must not stop because one tenant's webhook traffic
//! tripped the delivery loop. The one exception is a dependency that refuses us
//! ([`Failure::Refused`]: bad credentials, a missing role or queue): no restart can fix it, so
//! the loops are stopped and [`run`] returns the error, and the process exits non-zero for an
//! operator to see. A job replica's bounds (`--max-runtime`, `--max-messages`) stop it like a
//! signal: no new work, in-flight work finished, exit 0.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::future::BoxFuture;
use shared::failure::{self, Failure};
use shared::storage::{BlobStore, QueueClient};
use sqlx::PgPool;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::bounds::Budget;
use crate::config::RunConfig;
use crate::consumer::{self, Consumer};
use crate::hooks::Hooks;
use crate::link::Link;
use crate::metrics::Sources;
use crate::parse::isolate::Isolation;
use crate::retry::Backoff;
use crate::Shutdown;
use crate::{maintenance, relay};

/// How long loops get to release their work after the grace period before we give up on them.
const ABORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The first wait before a failed loop is started again; it doubles with each failure in a row.
const RESTART_MIN: Duration = Duration::from_secs(1);
/// The longest wait between restarts of a loop that keeps failing.
const RESTART_MAX: Duration = Duration::from_secs(60);
/// A loop that ran this long before failing starts its backoff over.
const RESTART_STABLE: Duration = Duration::from_secs(300);

/// Builds the clients from `cfg`, serves `/metrics` on `METRICS_ADDR` ([`crate::metrics`]) and
/// runs the configured loops until `signal` fires (exit 0 after a clean drain of in-flight
/// work), or with `--drain` until the work is done.
pub async fn run(cfg: RunConfig, signal: CancellationToken) -> anyhow::Result<()> {
    let limits = Limits {
        deadline: cfg.bounds.max_runtime.map(|d| Instant::now() + d),
        budget: Budget::new(cfg.bounds.max_messages),
    };
    let db = cfg.database.pool().context("invalid DATABASE_URL")?;
    // Webhook delivery alone needs no Azure Storage: no clients, no storage settings.
    let storage = if cfg.role.uses_storage() {
        Some(Storage::new(&cfg)?)
    } else {
        None
    };
    let sources = metrics_sources(&cfg, &db, storage.as_ref());
    let exporter = crate::metrics::Exporter::start(cfg.metrics_addr, sources).await?;
    if let Some(storage) = &storage {
        if !storage.wait_until_ready(&cfg, &limits, &signal).await? {
            return Ok(()); // the signal came first
        }
    }
    let exe = match &cfg.parse.parser_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("locating the worker executable")?,
    };
    let isolation = Isolation::new(exe, cfg.parse.limits.clone());
    let loops = loops(&cfg, &db, storage, isolation, &limits);
    let result = supervise(loops, cfg.drain, cfg.shutdown_grace, limits, signal).await;
    exporter.stop().await;
    result
}

/// What the gauges are read from, for the loops `cfg`'s role runs.
fn metrics_sources(cfg: &RunConfig, db: &PgPool, storage: Option<&Storage>) -> Sources {
    Sources {
        outbox: cfg.role.runs_relay().then(|| db.clone()),
        queues: storage
            .filter(|_| cfg.role.runs_consumer())
            .map(|s| (s.queue.clone(), s.poison.clone())),
        webhooks: cfg.role.runs_webhooks().then(|| db.clone()),
        row_store: cfg.role.runs_relay().then(|| db.clone()),
    }
}

/// The loops `cfg`'s role runs: the relay, the consumer, webhook delivery, and the maintenance
/// of theirs that has jobs.
fn loops(
    cfg: &RunConfig,
    db: &PgPool,
    storage: Option<Storage>,
    isolation: Isolation,
    limits: &Limits,
) -> Vec<Loop> {
    // The message budget is the consumer's when there is one (the relay of `--role all` only
    // feeds it), the relay's with `--role relay`, webhook delivery's with `--role webhooks`.
    let budget_of = |alone: bool| {
        if alone {
            Arc::clone(&limits.budget)
        } else {
            Budget::unlimited()
        }
    };
    let mut loops = Vec::new();
    // A draining consumer waits for the relay of its own process to finish first, and that
    // relay waits for the tasks the consumer has in hand.
    let relay_done = CancellationToken::new();
    let link = Link::default();
    match &storage {
        Some(storage) if cfg.role.runs_relay() => {
            let budget = budget_of(!cfg.role.runs_consumer());
            let relay = relay_loop(cfg, db, storage, budget, relay_done.clone(), link.clone());
            loops.push(relay);
        }
        _ => relay_done.cancel(),
    }
    if let (true, Some(storage)) = (cfg.role.runs_sources(), &storage) {
        let budget = budget_of(cfg.role == crate::config::Role::Sources);
        loops.push(sources_loop(cfg, db, storage, budget));
    }
    if let (true, Some(storage)) = (cfg.role.runs_consumer(), storage) {
        let consumer = Consumer::new(
            db.clone(),
            storage.queue,
            storage.poison,
            storage.blobs,
            isolation,
            cfg.consumer.clone(),
        )
        .with_budget(Arc::clone(&limits.budget));
        let consumer = match Hooks::new(
            cfg.webhooks.keys.secret_key.clone(),
            cfg.webhooks.keys.allow_private_networks,
            cfg.consumer.hook_retry_for,
        ) {
            Ok(hooks) => consumer.with_hooks(hooks),
            Err(e) => {
                tracing::error!(error = %e, "validation hooks cannot be called: no HTTP client");
                consumer
            }
        };
        let drain = cfg.drain;
        loops.push(Loop::new("consumer", move |shutdown| {
            consumer::run(
                consumer.clone(),
                shutdown,
                drain,
                relay_done.clone(),
                link.clone(),
            )
        }));
    }
    if cfg.role.runs_webhooks() {
        let budget = budget_of(cfg.role == crate::config::Role::Webhooks);
        loops.push(webhooks_loop(cfg, db, Arc::clone(&budget)));
        loops.push(destinations_loop(cfg, db, budget));
    }
    if !maintenance::jobs(cfg).is_empty() {
        let (db, cfg, drain) = (db.clone(), Arc::new(cfg.clone()), cfg.drain);
        loops.push(Loop::new("maintenance", move |shutdown| {
            let jobs = maintenance::jobs(&cfg);
            maintenance::run(db.clone(), Arc::clone(&cfg), jobs, shutdown, drain)
        }));
    }
    loops
}

/// The relay loop; `done` fires once it has finished (a drain, or a stop), for the consumer's
/// drain.
fn relay_loop(
    cfg: &RunConfig,
    db: &PgPool,
    storage: &Storage,
    budget: Arc<Budget>,
    done: CancellationToken,
    consumer: Link,
) -> Loop {
    let (db, relay_cfg, drain) = (db.clone(), cfg.relay.clone(), cfg.drain);
    let sender = Arc::new(storage.queue.clone());
    Loop::new("relay", move |shutdown| {
        let (db, sender, relay_cfg) = (db.clone(), Arc::clone(&sender), relay_cfg.clone());
        let (budget, done, consumer) = (Arc::clone(&budget), done.clone(), consumer.clone());
        async move {
            let result = relay::run_with_budget(
                db,
                sender,
                relay_cfg,
                shutdown.clone(),
                drain,
                budget,
                consumer,
            )
            .await;
            // A failed relay is started again: the consumer's drain waits for it.
            if result.is_ok() || shutdown.stop.is_cancelled() {
                done.cancel();
            }
            result
        }
    })
}

/// The webhook delivery loop.
fn webhooks_loop(cfg: &RunConfig, db: &PgPool, budget: Arc<Budget>) -> Loop {
    if cfg.webhooks.keys.secret_key.is_none() {
        tracing::warn!(
            "WEBHOOK_SECRET_KEY is not set: webhook deliveries fail until it is \
            (events are still kept, and pruned)"
        );
    }
    let (db, webhooks_cfg, drain) = (db.clone(), cfg.webhooks.clone(), cfg.drain);
    Loop::new("webhooks", move |shutdown| {
        crate::webhooks::run(
            db.clone(),
            webhooks_cfg.clone(),
            shutdown,
            drain,
            Arc::clone(&budget),
        )
    })
}

/// The destination delivery loop: beside webhook delivery, with its keys and retry schedule.
fn destinations_loop(cfg: &RunConfig, db: &PgPool, budget: Arc<Budget>) -> Loop {
    let (db, drain) = (db.clone(), cfg.drain);
    let (destinations_cfg, webhooks_cfg) = (cfg.destinations.clone(), cfg.webhooks.clone());
    Loop::new("destinations", move |shutdown| {
        crate::destinations::run(
            db.clone(),
            destinations_cfg.clone(),
            webhooks_cfg.clone(),
            shutdown,
            drain,
            Arc::clone(&budget),
        )
    })
}

/// The Blob sources loop: listing, the events queue and importing into the uploads container.
fn sources_loop(cfg: &RunConfig, db: &PgPool, storage: &Storage, budget: Arc<Budget>) -> Loop {
    let events = match cfg.sources.events_queue.as_str() {
        "" => None,
        name => match QueueClient::new(&cfg.storage, name) {
            Ok(queue) => Some(queue),
            Err(e) => {
                tracing::error!(error = %e, queue = name, "SOURCE_EVENTS_QUEUE cannot be read; \
                    sources are found by listing only");
                None
            }
        },
    };
    let sources = crate::sources::Sources {
        db: db.clone(),
        cfg: cfg.sources.clone(),
        keys: cfg.webhooks.keys.clone(),
        uploads: storage.blobs.clone(),
        events,
        containers: Arc::default(),
    };
    let drain = cfg.drain;
    Loop::new("sources", move |shutdown| {
        let (sources, budget) = (sources.clone(), Arc::clone(&budget));
        async move { sources.run(shutdown, drain, budget).await }
    })
}

/// The storage clients of the relay, the consumer and Blob sources.
struct Storage {
    queue: QueueClient,
    poison: QueueClient,
    blobs: BlobStore,
}

impl Storage {
    fn new(cfg: &RunConfig) -> anyhow::Result<Self> {
        let queue = QueueClient::new(&cfg.storage, &cfg.storage.queue_name)
            .context("configuring the queue client")?;
        let poison_name = format!("{}-poison", cfg.storage.queue_name);
        let poison = QueueClient::new(&cfg.storage, &poison_name)
            .context("configuring the poison queue client")?;
        let blobs = BlobStore::new(&cfg.storage).context("configuring the blob client")?;
        Ok(Self {
            queue,
            poison,
            blobs,
        })
    }

    /// Creates the queues (or, for Blob sources alone, reaches the uploads container), waiting
    /// for storage that is still starting (a container platform starts everything at once):
    /// transient failures are retried until the signal (`false`), anything else (bad
    /// credentials…) fails at once.
    async fn wait_until_ready(
        &self,
        cfg: &RunConfig,
        limits: &Limits,
        signal: &CancellationToken,
    ) -> anyhow::Result<bool> {
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
        loop {
            let created = if cfg.role.runs_relay() || cfg.role.runs_consumer() {
                match self.queue.ensure_exists().await {
                    Ok(()) if cfg.role.runs_consumer() => self.poison.ensure_exists().await,
                    other => other,
                }
            } else {
                // Blob sources alone use no task queue: the uploads container they copy into.
                self.blobs.ping().await
            };
            match created {
                Ok(()) => {
                    if backoff.failures() > 0 {
                        tracing::info!(
                            failed_tries = backoff.failures(),
                            "storage is reachable; starting"
                        );
                    }
                    return Ok(true);
                }
                Err(e) if limits.deadline.is_some_and(|d| Instant::now() >= d) => {
                    return Err(anyhow::Error::new(e)
                        .context("storage was unavailable for the whole --max-runtime"));
                }
                Err(e) if failure::storage(&e) == Failure::Outage && !signal.is_cancelled() => {
                    // One line when the outage starts and one when it ends, not one per try.
                    if backoff.failures() == 0 {
                        tracing::warn!(error = %e, "storage unavailable at start-up; retrying until it answers");
                    } else {
                        tracing::debug!(error = %e, "storage unavailable at start-up; retrying again");
                    }
                    backoff.wait(signal).await;
                    if signal.is_cancelled() {
                        return Ok(false);
                    }
                }
                Err(e) => return Err(anyhow::Error::new(e).context("creating the queues")),
            }
        }
    }
}

/// One loop the supervisor runs: its name (for logs and errors) and how to start it, again
/// after a failure.
pub struct Loop {
    name: &'static str,
    start: Box<dyn Fn(Shutdown) -> BoxFuture<'static, anyhow::Result<()>> + Send + Sync>,
}

impl Loop {
    pub fn new<F, Fut>(name: &'static str, start: F) -> Self
    where
        F: Fn(Shutdown) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        Self {
            name,
            start: Box::new(move |shutdown| Box::pin(start(shutdown))),
        }
    }

    /// Runs the loop until it ends as asked (a stop, or a finished drain), starting it again
    /// after each failure; see the module docs. An error only for a failure no restart fixes
    /// ([`Failure::Refused`]), or one met while stopping.
    async fn keep_running(self, shutdown: Shutdown, drain: bool) -> anyhow::Result<()> {
        let name = self.name;
        let mut backoff = Backoff::new(RESTART_MIN, RESTART_MAX);
        loop {
            let began = Instant::now();
            let result = (self.start)(shutdown.clone()).await;
            if shutdown.stop.is_cancelled() {
                return result;
            }
            let error = match result {
                Ok(()) if drain => return Ok(()),
                Ok(()) => "ended unexpectedly".to_owned(),
                Err(e) if failure::of(&*e) == Failure::Refused => {
                    tracing::error!(
                        task = name,
                        error = format!("{e:#}"),
                        "loop failed: a dependency refuses us; stopping the worker"
                    );
                    return Err(e.context(format!("the {name} loop failed")));
                }
                Err(e) => format!("{e:#}"),
            };
            if began.elapsed() >= RESTART_STABLE {
                backoff.reset();
            }
            let wait = backoff.next_delay();
            crate::metrics::loop_restarted(name, 1);
            tracing::error!(task = name, %error, restart_in_secs = wait.as_secs_f64(),
                "loop failed; starting it again (the other loops go on)");
            crate::retry::sleep_or_stop(&shutdown.stop, wait).await;
            if shutdown.stop.is_cancelled() {
                return Ok(());
            }
        }
    }
}

/// When a job replica stops by itself: `--max-runtime` (the deadline) and `--max-messages` (the
/// budget, [`Budget::spent`] once used up).
pub struct Limits {
    pub deadline: Option<Instant>,
    pub budget: Arc<Budget>,
}

/// Runs `loops` until they end; see the module docs.
pub async fn supervise(
    loops: Vec<Loop>,
    drain: bool,
    grace: Duration,
    limits: Limits,
    signal: CancellationToken,
) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    let tracker = TaskTracker::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(&'static str, anyhow::Result<()>)>();
    let mut pending = loops.len();
    for one in loops {
        let (shutdown, tx, name) = (shutdown.clone(), tx.clone(), one.name);
        crate::metrics::loop_restarted(name, 0);
        tracker.spawn(async move {
            let result = one.keep_running(shutdown, drain).await;
            let _ = tx.send((name, result));
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
                        first_error.get_or_insert(e);
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
