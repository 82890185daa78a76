//! Destination delivery (contract v1.3): each finished file's rows pushed to the tenant's own
//! Blob container ([`blob`]: each sheet streamed as Parquet, CSV or NDJSON, then `manifest.json`
//! last) or to its row webhook ([`rows`]: chunk k of n, in order, signed, resumed at the first
//! chunk not acknowledged). The delivery rows are written by Postgres with the change that
//! completes the task ([`shared::db::destination_deliveries`]); this module is their work on the
//! claim loop the relay and webhooks share ([`crate::claim`]), with the destination as the
//! loop's destination. It runs with webhook delivery (`--role webhooks` or `all`), as its own
//! loop: it needs `WEBHOOK_SECRET_KEY` (which seals the destinations' credentials and secrets)
//! and the webhook settings (`WEBHOOK_RETRY_SCHEDULE`, `WEBHOOK_TIMEOUT`,
//! `WEBHOOK_ALLOW_PRIVATE_NETWORKS`), and no Azure Storage of its own. A failed delivery is
//! retried on the webhook schedule and is `DEAD` after its last step (a redelivery starts it
//! again); a destination whose every delivery failed for `DESTINATION_DISABLE_AFTER` is
//! disabled and says so (the API's `disabled_reason`, a metric). Every finished delivery writes
//! a `file.delivered` event in the transaction that records it. Pruning is the maintenance
//! loop's ([`crate::maintenance::destination_deliveries`]).

mod blob;
pub mod config;
pub mod metrics;
mod rows;
mod sheets;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use shared::db::deliveries::{Health, Settled};
use shared::db::destination_deliveries::{self, Claimed, Outcome};
use shared::db::Due;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::bounds::Budget;
use crate::claim::{self, with_db_retry, LoopConfig, Report, Work};
use crate::webhooks::config::WebhooksConfig;
use crate::webhooks::RetrySchedule;
use crate::Shutdown;
pub use config::DestinationsConfig;

/// What one delivery came to.
#[derive(Debug)]
pub struct Sent {
    result: Result<Delivered, String>,
    /// The attempt stopped because its row was queued again or removed ([`rows::Superseded`]):
    /// not a failure of the destination.
    superseded: bool,
    /// It failed after acknowledged chunks ([`rows::Progressed`]): its retry schedule starts
    /// over, as `failures` did in the row.
    progressed: bool,
    took: Duration,
}

/// A finished delivery: what it wrote.
#[derive(Debug, Default)]
pub struct Delivered {
    /// `azure_blob`: the manifest, for the `file.delivered` event.
    manifest: Option<serde_json::Value>,
    bytes: u64,
}

/// What the delivery of one kind needs beside its row.
pub(crate) struct Context<'a> {
    db: &'a PgPool,
    http: &'a reqwest::Client,
    hooks: &'a WebhooksConfig,
}

/// The delivery loop: see the module docs.
pub async fn run(
    db: PgPool,
    cfg: DestinationsConfig,
    hooks: WebhooksConfig,
    shutdown: Shutdown,
    drain: bool,
    budget: std::sync::Arc<Budget>,
) -> anyhow::Result<()> {
    let http = crate::webhooks::client::build(
        hooks.timeout,
        cfg.concurrency as usize,
        hooks.keys.allow_private_networks,
    )
    .context("building the destinations' HTTP client")?;
    metrics::register();
    tracing::info!(
        max_in_flight = cfg.max_in_flight,
        concurrency = cfg.concurrency,
        drain,
        "destination delivery started"
    );
    let work = Deliveries {
        cx: Context {
            db: &db,
            http: &http,
            hooks: &hooks,
        },
        cfg: &cfg,
    };
    claim::run(&work, &loop_config(&cfg), &shutdown, drain, &budget).await
}

/// Claims one batch of deliveries, delivers it and records it (for tests that go step by step).
pub async fn run_once(
    db: &PgPool,
    cfg: &DestinationsConfig,
    hooks: &WebhooksConfig,
    abort: &CancellationToken,
) -> anyhow::Result<Report> {
    let http = crate::webhooks::client::build(
        hooks.timeout,
        cfg.concurrency as usize,
        hooks.keys.allow_private_networks,
    )?;
    let work = Deliveries {
        cx: Context {
            db,
            http: &http,
            hooks,
        },
        cfg,
    };
    let loop_cfg = loop_config(cfg);
    claim::run_once(&work, &loop_cfg, loop_cfg.batch_size, abort).await
}

fn loop_config(cfg: &DestinationsConfig) -> LoopConfig {
    LoopConfig {
        batch_size: i64::from(cfg.max_in_flight),
        max_held: cfg.max_in_flight as usize,
        concurrency: cfg.concurrency as usize,
        lease: cfg.lease,
        poll_interval: cfg.poll_interval,
    }
}

/// Destination deliveries as a claim loop's work.
struct Deliveries<'a> {
    cx: Context<'a>,
    cfg: &'a DestinationsConfig,
}

#[async_trait::async_trait]
impl Work for Deliveries<'_> {
    type Item = Claimed;
    type Sent = Sent;

    fn name(&self) -> &'static str {
        "destinations"
    }

    fn rows(&self) -> (&'static str, &'static str) {
        ("destination delivery", "worker")
    }

    fn db(&self) -> &PgPool {
        self.cx.db
    }

    fn channel(&self) -> &'static str {
        "destination_deliveries"
    }

    fn id(d: &Claimed) -> Uuid {
        d.id
    }

    fn destination(d: &Claimed) -> Uuid {
        d.destination_id
    }

    /// Any failure: a destination's deliveries fail together (a missing container, an expired
    /// SAS, a receiver that is down), so its others wait for the next step.
    fn is_down(sent: &Sent) -> bool {
        sent.result.is_err() && !sent.superseded
    }

    fn span(&self, d: &Claimed) -> tracing::Span {
        tracing::info_span!("deliver to destination",
            destination_id = %d.destination_id,
            source_file_id = %d.source_file_id,
            kind = %d.kind,
            revision = d.revision,
            attempt = d.attempts + 1)
    }

    async fn claim(
        &self,
        limit: i64,
        lease: Duration,
        _held: &HashMap<Uuid, usize>,
    ) -> sqlx::Result<Vec<Claimed>> {
        destination_deliveries::claim(self.cx.db, limit, lease).await
    }

    async fn extend(&self, ids: &[Uuid], lease: Duration) -> sqlx::Result<u64> {
        destination_deliveries::extend_claims(self.cx.db, ids, lease).await
    }

    async fn send(&self, d: &Claimed) -> Sent {
        let started = Instant::now();
        let result = match d.kind.as_str() {
            "azure_blob" => blob::deliver(&self.cx, d).await,
            "webhook_rows" => rows::deliver(&self.cx, d).await,
            other => Err(anyhow::anyhow!("unknown destination kind {other}")),
        };
        let superseded = matches!(&result, Err(e) if e.is::<rows::Superseded>());
        let progressed = matches!(&result, Err(e) if e.is::<rows::Progressed>());
        let result = result.map_err(|e| {
            tracing::warn!(destination_id = %d.destination_id, source_file_id = %d.source_file_id,
                error = format!("{e:#}"), "destination delivery failed");
            format!("{e:#}")
        });
        let sent = Sent {
            result,
            superseded,
            progressed,
            took: started.elapsed(),
        };
        metrics::delivery(d, &sent);
        sent
    }

    async fn record(
        &self,
        batch: Vec<(Claimed, Option<Sent>)>,
        abort: &CancellationToken,
    ) -> anyhow::Result<Report> {
        let Some(destination_id) = batch.first().map(|(d, _)| d.destination_id) else {
            return Ok(Report::default());
        };
        let (outcomes, health, report) = plan(
            &batch,
            &self.cx.hooks.retry_schedule,
            self.cfg.disable_after,
        );
        let disabled = with_db_retry(abort, || async {
            let mut tx = self.cx.db.begin().await?;
            let disabled =
                destination_deliveries::record(&mut tx, destination_id, &outcomes, health).await?;
            tx.commit().await?;
            Ok(disabled)
        })
        .await
        .context("recording destination deliveries")?;
        if disabled {
            tracing::warn!(%destination_id, "destination disabled: every delivery failed for \
                DESTINATION_DISABLE_AFTER");
        }
        Ok(report)
    }

    async fn release(&self, ids: &[Uuid]) -> sqlx::Result<u64> {
        destination_deliveries::release(self.cx.db, ids).await
    }

    async fn due(&self) -> sqlx::Result<Due> {
        destination_deliveries::due(self.cx.db).await
    }
}

/// What one destination's batch writes: each delivery's outcome, the destination's health and
/// the report.
fn plan(
    batch: &[(Claimed, Option<Sent>)],
    schedule: &RetrySchedule,
    disable_after: Duration,
) -> (Vec<Outcome>, Health, Report) {
    let mut report = Report::default();
    let (mut answered, mut tried) = (false, false);
    let mut first_error: Option<(Duration, String)> = None;
    let mut outcomes = Vec::with_capacity(batch.len());
    for (d, sent) in batch {
        let settled = match sent.as_ref().map(|s| (&s.result, s.superseded)) {
            // Its row changed under it: whatever is written here is not applied.
            Some((Err(error), true)) => Settled::Deferred {
                retry_in: Duration::ZERO,
                error: error.clone(),
            },
            Some((Ok(_), _)) => {
                answered = true;
                report.sent += 1;
                Settled::Delivered
            }
            Some((Err(error), false)) => {
                tried = true;
                let failures = if sent.as_ref().is_some_and(|s| s.progressed) {
                    0
                } else {
                    d.failures
                };
                let step = schedule.after(failures + 1);
                let retry_in = step.unwrap_or_else(|| schedule.last());
                first_error.get_or_insert_with(|| (retry_in, error.clone()));
                if step.is_some() {
                    report.failed += 1;
                } else {
                    report.dead += 1;
                }
                Settled::Failed {
                    retry_in,
                    dead: step.is_none(),
                    error: error.clone(),
                }
            }
            None => {
                report.deferred += 1;
                let (retry_in, error) = first_error
                    .clone()
                    .unwrap_or_else(|| (schedule.last(), "the destination is down".to_owned()));
                Settled::Deferred { retry_in, error }
            }
        };
        let manifest = sent
            .as_ref()
            .and_then(|s| s.result.as_ref().ok())
            .and_then(|done| done.manifest.clone());
        outcomes.push(Outcome {
            id: d.id,
            revision: d.revision,
            settled,
            manifest,
        });
    }
    let health = if answered {
        Health::Answering
    } else if tried {
        Health::Failing(disable_after)
    } else {
        Health::Unknown
    };
    (outcomes, health, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(failures: i32) -> Claimed {
        Claimed {
            id: Uuid::new_v4(),
            destination_id: Uuid::nil(),
            source_file_id: Uuid::new_v4(),
            task_id: Uuid::new_v4(),
            revision: 2,
            chunks_acked: 0,
            attempts: failures,
            failures,
            queued_at: chrono::Utc::now(),
            tenant_id: "t".into(),
            kind: "azure_blob".into(),
            url: "https://a.blob.core.windows.net/c".into(),
            prefix: String::new(),
            format: Some("parquet".into()),
            chunk_size: None,
            credential_kind: Some("managed_identity".into()),
            sealed_secret: None,
        }
    }

    fn sent(result: Result<Delivered, String>) -> Option<Sent> {
        Some(Sent {
            result,
            superseded: false,
            progressed: false,
            took: Duration::from_millis(3),
        })
    }

    #[test]
    fn a_failure_is_retried_on_the_schedule_and_defers_its_untried_siblings() {
        let schedule = RetrySchedule::parse("10s,100s").expect("schedule");
        let batch = vec![
            (claimed(0), sent(Err("ContainerNotFound".into()))),
            (claimed(0), None),
            (claimed(2), sent(Err("ContainerNotFound".into()))),
        ];
        let (outcomes, health, report) = plan(&batch, &schedule, Duration::from_secs(60));
        assert_eq!(health, Health::Failing(Duration::from_secs(60)));
        assert_eq!((report.failed, report.deferred, report.dead), (1, 1, 1));
        let Settled::Failed {
            retry_in,
            dead: false,
            ..
        } = &outcomes[0].settled
        else {
            panic!("{:?}", outcomes[0]);
        };
        assert!(*retry_in >= Duration::from_secs(9) && *retry_in <= Duration::from_secs(11));
        assert_eq!(
            outcomes[1].settled,
            Settled::Deferred {
                retry_in: *retry_in,
                error: "ContainerNotFound".into()
            }
        );
        assert!(matches!(
            outcomes[2].settled,
            Settled::Failed { dead: true, .. }
        ));
        assert!(outcomes.iter().all(|o| o.revision == 2));
    }

    #[test]
    fn a_delivery_carries_its_manifest_and_makes_the_destination_answering() {
        let schedule = RetrySchedule::parse("10s").expect("schedule");
        let manifest = serde_json::json!({"sheets": []});
        let batch = vec![(
            claimed(0),
            sent(Ok(Delivered {
                manifest: Some(manifest.clone()),
                bytes: 10,
            })),
        )];
        let (outcomes, health, report) = plan(&batch, &schedule, Duration::from_secs(60));
        assert_eq!((health, report.sent), (Health::Answering, 1));
        assert_eq!(outcomes[0].settled, Settled::Delivered);
        assert_eq!(outcomes[0].manifest, Some(manifest));
    }

    #[test]
    fn a_failure_after_acknowledged_chunks_starts_the_schedule_over() {
        let schedule = RetrySchedule::parse("10s,100s").expect("schedule");
        let mut moved = sent(Err("connection refused".into()));
        if let Some(s) = moved.as_mut() {
            s.progressed = true;
        }
        // Two failures already: without the progress, this one would be the last (dead).
        let (outcomes, _, report) =
            plan(&[(claimed(2), moved)], &schedule, Duration::from_secs(60));
        assert_eq!((report.failed, report.dead), (1, 0));
        let Settled::Failed { retry_in, dead, .. } = &outcomes[0].settled else {
            panic!("{:?}", outcomes[0]);
        };
        assert!(!dead);
        assert!(
            *retry_in <= Duration::from_secs(11),
            "the first step: {retry_in:?}"
        );
    }

    #[test]
    fn a_superseded_attempt_says_nothing_about_the_destination() {
        let schedule = RetrySchedule::parse("10s").expect("schedule");
        let mut stopped = sent(Err("superseded".into()));
        if let Some(s) = stopped.as_mut() {
            s.superseded = true;
        }
        assert!(!Deliveries::is_down(stopped.as_ref().expect("sent")));
        let (outcomes, health, report) =
            plan(&[(claimed(0), stopped)], &schedule, Duration::from_secs(60));
        assert_eq!(health, Health::Unknown);
        assert_eq!((report.failed, report.dead), (0, 0));
        assert!(matches!(outcomes[0].settled, Settled::Deferred { .. }));
    }
}
