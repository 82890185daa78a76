//! The worker's metrics (names, labels and meanings in [`shared::metrics::catalogue`]): what the
//! relay, the consumer and webhook delivery record as they work, the gauges read in the
//! background (the outbox backlog, the queue lengths, the webhook backlog), and the `/metrics` listener on `METRICS_ADDR`
//! ([`shared::metrics::serve`], as the api serves its own). Series with a known, bounded set of
//! labels are registered at zero when the worker starts, so they exist before their first event
//! (an alert on `increase(…) > 0` then sees that event too).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use anyhow::Context as _;
use metrics::{counter, gauge};
use shared::db;
use shared::domain::OutboxStatus;
use shared::metrics::catalogue as names;
use shared::storage::QueueClient;
use sqlx::PgPool;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Where `/metrics` listens when `METRICS_ADDR` is unset: beside the api's 9090, so that both
/// run on one host with their defaults.
pub const DEFAULT_METRICS_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9091));

/// How often the gauges are read: one small query (the outbox backlog, through its partial
/// indexes) and two queue-properties requests each time.
pub const GAUGES_EVERY: Duration = Duration::from_secs(15);

/// The statuses of the outbox backlog gauges.
const BACKLOG: [OutboxStatus; 4] = [
    OutboxStatus::Pending,
    OutboxStatus::Processing,
    OutboxStatus::Failed,
    OutboxStatus::Dead,
];

/// What the gauges are read from: the outbox when this process relays, the queues when it
/// consumes, the webhook deliveries when it delivers them.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub outbox: Option<PgPool>,
    /// The task queue and its `-poison` companion.
    pub queues: Option<(QueueClient, QueueClient)>,
    pub webhooks: Option<PgPool>,
    /// The row store's size and each tenant's share (where the relay, and its maintenance, run).
    pub row_store: Option<PgPool>,
}

/// The `/metrics` listener and the gauge reader, stopped by [`Exporter::stop`] (or on drop).
#[derive(Debug)]
pub struct Exporter {
    stop: CancellationToken,
    server: Option<JoinHandle<anyhow::Result<()>>>,
    gauges: Option<JoinHandle<()>>,
    /// Where `/metrics` is served (the bound port when `METRICS_ADDR` asked for port 0, or when
    /// the default was taken).
    pub addr: SocketAddr,
}

impl Exporter {
    /// Registers the series of the loops in `sources`, listens on `addr` (`METRICS_ADDR`; unset:
    /// [`DEFAULT_METRICS_ADDR`] or, when that is taken, a free port) and starts serving and
    /// reading the gauges. Fails when a given `addr` cannot be bound.
    pub async fn start(addr: Option<SocketAddr>, sources: Sources) -> anyhow::Result<Self> {
        shared::metrics::handle();
        if sources.outbox.is_some() {
            crate::relay::metrics::register();
        }
        if sources.queues.is_some() {
            crate::consumer::metrics::register();
        }
        if sources.webhooks.is_some() {
            crate::webhooks::metrics::register();
        }
        let listener = shared::metrics::listener::bind(addr, DEFAULT_METRICS_ADDR).await?;
        let addr = listener.local_addr().context("metrics listener address")?;
        tracing::info!(metrics_addr = %addr, "serving /metrics");
        let stop = CancellationToken::new();
        let server = tokio::spawn(shared::metrics::serve(listener, stop.clone()));
        let gauges = tokio::spawn(read_gauges(sources, stop.clone()));
        Ok(Self {
            stop,
            server: Some(server),
            gauges: Some(gauges),
            addr,
        })
    }

    /// Stops serving (a scrape in progress finishes) and reading gauges.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(gauges) = self.gauges.take() {
            let _ = gauges.await;
        }
        if let Some(server) = self.server.take() {
            match server.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = format!("{e:#}"), "metrics listener failed"),
                Err(e) => tracing::warn!(error = %e, "metrics listener panicked"),
            }
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Tenants with a series of their own in the per-tenant row store gauges; the rest are summed
/// under `other`. A bounded label set: Prometheus keeps every series it ever saw.
const TOP_TENANTS: i64 = 20;

/// Reads the gauges at once, then every [`GAUGES_EVERY`], until `stop`.
async fn read_gauges(sources: Sources, stop: CancellationToken) {
    let mut shown = std::collections::HashSet::new();
    loop {
        if let Some(db) = &sources.row_store {
            match db::row_store::usage(db, TOP_TENANTS).await {
                Ok(usage) => row_store_gauges(&usage, &mut shown),
                Err(e) => tracing::debug!(error = %e, "could not read the row store's usage"),
            }
        }
        if let Some(db) = &sources.webhooks {
            match db::deliveries::backlog(db).await {
                Ok(b) => {
                    gauge!(names::WEBHOOK_OLDEST_UNDELIVERED).set(b.oldest_undelivered_secs);
                    gauge!(names::WEBHOOK_ENDPOINTS_DISABLED, "reason" => "gone")
                        .set(b.disabled_gone as f64);
                    gauge!(names::WEBHOOK_ENDPOINTS_DISABLED, "reason" => "failing")
                        .set(b.disabled_failing as f64);
                }
                Err(e) => tracing::debug!(error = %e, "could not read the webhook backlog"),
            }
            match db::destination_deliveries::backlog(db).await {
                Ok(b) => {
                    gauge!(names::DESTINATION_OLDEST_WAITING).set(b.oldest_waiting_secs);
                    gauge!(names::DESTINATIONS_DISABLED).set(b.disabled_failing as f64);
                }
                Err(e) => tracing::debug!(error = %e, "could not read the destinations' backlog"),
            }
        }
        if let Some(db) = &sources.outbox {
            match db::outbox::backlog(db).await {
                Ok(rows) => {
                    for status in BACKLOG {
                        let row = rows.iter().find(|r| r.status == status);
                        let label = status_label(status);
                        let count = row.map_or(0, |r| r.count);
                        let age = row.map_or(0.0, |r| r.oldest_age_secs.max(0.0));
                        gauge!(names::OUTBOX_MESSAGES, "status" => label).set(count as f64);
                        gauge!(names::OUTBOX_OLDEST_AGE, "status" => label).set(age);
                    }
                }
                Err(e) => tracing::debug!(error = %e, "could not read the outbox backlog"),
            }
            match db::tasks::oldest_queued_secs(db).await {
                Ok(secs) => gauge!(names::TASKS_OLDEST_QUEUED).set(secs),
                Err(e) => tracing::debug!(error = %e, "could not read the queued tasks' age"),
            }
        }
        if let Some((queue, poison)) = &sources.queues {
            for (label, q) in [("tasks", queue), ("poison", poison)] {
                match q.approximate_length().await {
                    Ok(n) => gauge!(names::QUEUE_MESSAGES, "queue" => label).set(n as f64),
                    Err(e) => {
                        tracing::debug!(queue = q.name(), error = %e, "could not read a queue's length")
                    }
                }
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(GAUGES_EVERY) => {}
        }
    }
}

/// Sets the row store gauges; tenants shown before and no longer among the top read 0 (they
/// are counted in `other` now).
fn row_store_gauges(usage: &db::row_store::Usage, shown: &mut std::collections::HashSet<String>) {
    gauge!(names::ROW_STORE_BYTES).set(usage.bytes_on_disk as f64);
    gauge!(names::ROW_STORE_ROWS).set(usage.rows as f64);
    let per_row = if usage.rows > 0 {
        usage.bytes_on_disk as f64 / usage.rows as f64
    } else {
        0.0
    };
    gauge!(names::ROW_STORE_BYTES_PER_ROW).set(per_row);
    let mut now = std::collections::HashSet::new();
    let others = ("other".to_owned(), usage.other_rows, usage.other_bytes);
    for (tenant, rows, bytes) in usage.top.iter().chain([&others]) {
        gauge!(names::TENANT_ROW_STORE_BYTES, "tenant_id" => tenant.clone()).set(*bytes as f64);
        gauge!(names::TENANT_ROW_STORE_ROWS, "tenant_id" => tenant.clone()).set(*rows as f64);
        now.insert(tenant.clone());
    }
    for gone in shown.difference(&now) {
        gauge!(names::TENANT_ROW_STORE_BYTES, "tenant_id" => gone.clone()).set(0.0);
        gauge!(names::TENANT_ROW_STORE_ROWS, "tenant_id" => gone.clone()).set(0.0);
    }
    shown.extend(now);
}

fn status_label(status: OutboxStatus) -> &'static str {
    match status {
        OutboxStatus::Pending => "PENDING",
        OutboxStatus::Processing => "PROCESSING",
        OutboxStatus::Completed => "COMPLETED",
        OutboxStatus::Failed => "FAILED",
        OutboxStatus::Dead => "DEAD",
    }
}

/// A loop that failed, started again by the supervisor (`by` 0 registers the series).
pub fn loop_restarted(name: &'static str, by: u64) {
    counter!(names::LOOP_RESTARTS, "loop" => name).increment(by);
}
