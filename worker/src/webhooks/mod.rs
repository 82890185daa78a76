//! Webhook delivery: each event, to each endpoint that takes it, as a Standard Webhooks `POST`
//! (`webhook-id` the event id, `webhook-timestamp`, `webhook-signature` with the secret, and the
//! previous one during a rotation; to an Event Grid topic as a CloudEvent, [`cloudevents`]), on
//! the claim loop ([`crate::claim`]) with the endpoint as the
//! destination. A 2xx is delivered. Anything else, or no answer within `WEBHOOK_TIMEOUT`, is
//! retried after the next step of `WEBHOOK_RETRY_SCHEDULE` ([`schedule`]), never sooner than a
//! 429's or 503's `Retry-After`, and is dead after the last step (a replay revives it). A 410
//! disables the endpoint at once; an endpoint whose every request has failed for
//! `WEBHOOK_DISABLE_AFTER` is disabled too, and says why (the API, a metric). An endpoint that
//! times out, is unreachable or answers 5xx/429 is not tried again in the same batch: its other
//! deliveries wait for the next step, without spending an attempt. Every request is written to
//! the attempt log. The retention of events and of the attempt log (their day partitions,
//! [`crate::maintenance::event_log`]) is a job of the maintenance loop ([`crate::maintenance`]).

pub mod client;
mod cloudevents;
pub mod config;
pub mod metrics;
mod plan;
pub mod schedule;

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use shared::db::deliveries::{self, Delivery};
use shared::db::Due;
use shared::domain::EventView;
use shared::telemetry::propagation;
use shared::webhooks::{SealingKey, SigningSecret};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub use schedule::RetrySchedule;

use crate::bounds::Budget;
use crate::claim::{self, with_db_retry, LoopConfig, Report, Work};
use crate::Shutdown;
use client::{Answer, Outcome};
use config::WebhooksConfig;
use plan::Plan;

/// The delivery loop: see the module docs. Without `WEBHOOK_SECRET_KEY` every delivery fails
/// (it cannot be signed), visibly in the attempt log; the retention still runs.
pub async fn run(
    db: PgPool,
    cfg: WebhooksConfig,
    shutdown: Shutdown,
    drain: bool,
    budget: std::sync::Arc<Budget>,
) -> anyhow::Result<()> {
    let http = client::build(
        cfg.timeout,
        cfg.endpoint_concurrency as usize,
        cfg.keys.allow_private_networks,
    )
    .context("building the webhook client")?;
    tracing::info!(
        timeout_ms = cfg.timeout.as_millis() as u64,
        endpoint_concurrency = cfg.endpoint_concurrency,
        max_in_flight = cfg.max_in_flight,
        retry_span_secs = cfg.retry_schedule.span().as_secs(),
        allow_private_networks = cfg.keys.allow_private_networks,
        drain,
        "webhook delivery started"
    );
    let work = Deliveries {
        db: &db,
        http: &http,
        cfg: &cfg,
    };
    claim::run(&work, &loop_config(&cfg), &shutdown, drain, &budget).await
}

/// Claims one batch of deliveries, sends it and records it (for tests that go step by step).
pub async fn run_once(
    db: &PgPool,
    cfg: &WebhooksConfig,
    abort: &CancellationToken,
) -> anyhow::Result<Report> {
    let http = client::build(
        cfg.timeout,
        cfg.endpoint_concurrency as usize,
        cfg.keys.allow_private_networks,
    )?;
    let work = Deliveries {
        db,
        http: &http,
        cfg,
    };
    let loop_cfg = loop_config(cfg);
    claim::run_once(&work, &loop_cfg, loop_cfg.batch_size, abort).await
}

fn loop_config(cfg: &WebhooksConfig) -> LoopConfig {
    LoopConfig {
        batch_size: i64::from(cfg.max_in_flight),
        max_held: cfg.max_in_flight as usize,
        // A claim takes no more of one endpoint than it has room for, and they are sent at once.
        concurrency: cfg.endpoint_concurrency as usize,
        lease: cfg.lease,
        poll_interval: cfg.poll_interval,
    }
}

/// Webhook deliveries as a claim loop's work.
struct Deliveries<'a> {
    db: &'a PgPool,
    http: &'a reqwest::Client,
    cfg: &'a WebhooksConfig,
}

#[async_trait::async_trait]
impl Work for Deliveries<'_> {
    type Item = Delivery;
    type Sent = Answer;

    fn name(&self) -> &'static str {
        "webhooks"
    }

    fn rows(&self) -> (&'static str, &'static str) {
        ("webhook delivery", "worker")
    }

    fn db(&self) -> &PgPool {
        self.db
    }

    fn channel(&self) -> &'static str {
        "webhook_deliveries"
    }

    fn id(d: &Delivery) -> Uuid {
        d.id
    }

    fn destination(d: &Delivery) -> Uuid {
        d.endpoint_id
    }

    fn is_down(answer: &Answer) -> bool {
        answer.endpoint_down()
    }

    fn span(&self, d: &Delivery) -> tracing::Span {
        let span = tracing::info_span!("deliver",
            otel.name = "POST webhook",
            otel.kind = "client",
            http.request.method = "POST",
            webhook_id = %d.event_id,
            event_id = %d.event_id,
            webhook_endpoint_id = %d.endpoint_id,
            event_type = %d.event_type,
            attempt = d.attempts + 1);
        // The upload's trace: its deliveries are children of its task (whose span id the event
        // does not keep, so a stable stand-in made from the event id).
        if let Some(trace_id) = &d.trace_id {
            let parent = format!(
                "00-{trace_id}-{}-01",
                &d.event_id.simple().to_string()[..16]
            );
            propagation::continue_trace(&span, Some(&parent));
        }
        span
    }

    async fn claim(
        &self,
        limit: i64,
        lease: Duration,
        held: &HashMap<Uuid, usize>,
    ) -> sqlx::Result<Vec<Delivery>> {
        let (endpoints, counts): (Vec<Uuid>, Vec<i32>) = held
            .iter()
            .map(|(id, n)| (*id, i32::try_from(*n).unwrap_or(i32::MAX)))
            .unzip();
        deliveries::claim(
            self.db,
            limit,
            lease,
            i32::try_from(self.cfg.endpoint_concurrency).unwrap_or(i32::MAX),
            &endpoints,
            &counts,
        )
        .await
    }

    async fn extend(&self, ids: &[Uuid], lease: Duration) -> sqlx::Result<u64> {
        deliveries::extend_claims(self.db, ids, lease).await
    }

    async fn send(&self, d: &Delivery) -> Answer {
        let (secrets, topic_key) = match self.secrets(d) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(webhook_endpoint_id = %d.endpoint_id, error = %e,
                    "cannot sign a webhook");
                return Answer {
                    outcome: Outcome::Unreachable,
                    status: None,
                    took: Duration::ZERO,
                    retry_after: None,
                    error: Some(format!("not sent: {e:#}")),
                };
            }
        };
        let body = match &topic_key {
            Some(_) => cloudevents::body(d),
            None => match serde_json::to_vec(&EventView {
                id: d.event_id,
                event_type: d.event_type,
                timestamp: d.event_created_at,
                data: d.event_data.clone(),
            }) {
                Ok(b) => b,
                Err(e) => unreachable!("an event view serialises: {e}"),
            },
        };
        let mut headers = client::signed_headers(&secrets, &d.event_id.to_string(), &body);
        if let Some(key) = &topic_key {
            cloudevents::headers(&mut headers, key);
        }
        if d.attempts == 0 {
            metrics::first_attempt(d.event_created_at);
        }
        let answer = client::post(
            self.http,
            &d.url,
            headers,
            body,
            self.cfg.keys.allow_private_networks,
        )
        .await;
        metrics::attempt(answer.outcome, answer.took);
        answer
    }

    async fn record(
        &self,
        batch: Vec<(Delivery, Option<Answer>)>,
        abort: &CancellationToken,
    ) -> anyhow::Result<Report> {
        let Some(endpoint_id) = batch.first().map(|(d, _)| d.endpoint_id) else {
            return Ok(Report::default());
        };
        let plan = Plan::new(&batch, &self.cfg.retry_schedule, self.cfg.disable_after);
        let recorded = with_db_retry(abort, || async {
            let mut tx = self.db.begin().await?;
            let recorded = deliveries::record(
                &mut tx,
                endpoint_id,
                &plan.attempts,
                &plan.settled,
                plan.health,
            )
            .await?;
            tx.commit().await?;
            Ok(recorded)
        })
        .await
        .context("recording webhook deliveries")?;
        if recorded.disabled {
            tracing::warn!(webhook_endpoint_id = %endpoint_id, health = ?plan.health,
                "webhook endpoint disabled");
        }
        if plan.report.dead > 0 {
            tracing::warn!(webhook_endpoint_id = %endpoint_id, dead = plan.report.dead,
                "webhook deliveries dead after their last retry (a replay revives them)");
        }
        metrics::batch(&plan.report);
        Ok(plan.report)
    }

    async fn release(&self, ids: &[Uuid]) -> sqlx::Result<u64> {
        deliveries::release(self.db, ids).await
    }

    async fn due(&self) -> sqlx::Result<Due> {
        deliveries::due(self.db).await
    }
}

impl Deliveries<'_> {
    /// The secrets to sign with (the current one, and the previous one during a rotation), and
    /// an Event Grid topic's access key.
    fn secrets(&self, d: &Delivery) -> anyhow::Result<(Vec<SigningSecret>, Option<Vec<u8>>)> {
        let key: &SealingKey = self
            .cfg
            .keys
            .secret_key
            .as_ref()
            .context("WEBHOOK_SECRET_KEY is not set on the worker")?;
        let mut secrets = vec![key.open(d.endpoint_id, &d.secret)?];
        if let Some(previous) = &d.previous_secret {
            secrets.push(key.open(d.endpoint_id, previous)?);
        }
        let topic_key = d
            .event_grid_key
            .as_ref()
            .map(|sealed| key.open_bytes(d.endpoint_id, sealed))
            .transpose()?;
        Ok((secrets, topic_key))
    }
}
