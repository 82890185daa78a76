//! Webhook delivery: each event, to each endpoint that takes it, as a Standard Webhooks `POST`
//! (`webhook-id` the event id, `webhook-timestamp`, `webhook-signature` with the secret, and the
//! previous one during a rotation), on the claim loop ([`crate::claim`]) with the endpoint as the
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
pub mod config;
pub mod metrics;
pub mod schedule;

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use shared::db::deliveries::{self, Attempt, Delivery, Health, Settled};
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
        let secrets = match self.secrets(d) {
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
        let body = match serde_json::to_vec(&EventView {
            id: d.event_id,
            event_type: d.event_type,
            timestamp: d.event_created_at,
            data: d.event_data.clone(),
        }) {
            Ok(b) => b,
            Err(e) => unreachable!("an event view serialises: {e}"),
        };
        let headers = client::signed_headers(&secrets, &d.event_id.to_string(), &body);
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
    /// The secrets to sign with: the current one, and the previous one during a rotation.
    fn secrets(&self, d: &Delivery) -> anyhow::Result<Vec<SigningSecret>> {
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
        Ok(secrets)
    }
}

/// What one endpoint's batch writes: the attempt log, each delivery's new state, the endpoint's
/// health, and the report.
struct Plan {
    attempts: Vec<Attempt>,
    settled: Vec<(Uuid, Settled)>,
    health: Health,
    report: Report,
}

impl Plan {
    fn new(
        batch: &[(Delivery, Option<Answer>)],
        schedule: &RetrySchedule,
        disable_after: Duration,
    ) -> Self {
        let mut plan = Plan {
            attempts: Vec::new(),
            settled: Vec::new(),
            health: Health::Unknown,
            report: Report::default(),
        };
        // The retry of the request that found the endpoint down: what its untried siblings wait.
        let mut down: Option<(Duration, String)> = None;
        let mut answered = false;
        let mut gone = false;
        for (d, answer) in batch {
            let Some(a) = answer else { continue };
            plan.attempts.push(Attempt {
                event_id: d.event_id,
                attempt: d.attempts + 1,
                status_code: a.status.map(i32::from),
                outcome: a.outcome.as_str(),
                duration_ms: i32::try_from(a.took.as_millis()).unwrap_or(i32::MAX),
                error: a.error.clone(),
            });
            let error = a.error.clone().unwrap_or_default();
            let settled = match a.outcome {
                Outcome::Delivered => {
                    answered = true;
                    plan.report.sent += 1;
                    Settled::Delivered
                }
                outcome => {
                    gone |= outcome == Outcome::Gone;
                    let failures = d.failures + 1;
                    let step = schedule.after(failures);
                    let retry_in = step
                        .unwrap_or_else(|| schedule.last())
                        .max(a.retry_after.unwrap_or(Duration::ZERO));
                    if a.endpoint_down() && down.is_none() {
                        down = Some((retry_in, error.clone()));
                    }
                    if step.is_some() {
                        plan.report.failed += 1;
                    } else {
                        plan.report.dead += 1;
                    }
                    Settled::Failed {
                        retry_in,
                        dead: step.is_none(),
                        error,
                    }
                }
            };
            plan.settled.push((d.id, settled));
        }
        for (d, answer) in batch {
            if answer.is_none() {
                let (retry_in, error) = down
                    .clone()
                    .unwrap_or_else(|| (schedule.last(), "the endpoint is down".to_owned()));
                plan.report.deferred += 1;
                plan.settled
                    .push((d.id, Settled::Deferred { retry_in, error }));
            }
        }
        plan.health = if gone {
            Health::Gone
        } else if answered {
            Health::Answering
        } else if plan.attempts.is_empty() {
            Health::Unknown
        } else {
            Health::Failing(disable_after)
        };
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn delivery(failures: i32) -> Delivery {
        Delivery {
            id: Uuid::new_v4(),
            event_id: Uuid::new_v4(),
            endpoint_id: Uuid::nil(),
            attempts: failures,
            failures,
            deferrals: 0,
            url: "https://example.com/".into(),
            secret: Vec::new(),
            previous_secret: None,
            event_type: shared::domain::event::EventType::TaskCompleted,
            event_data: serde_json::json!({}),
            event_created_at: Utc::now(),
            trace_id: None,
        }
    }

    fn answer(outcome: Outcome, status: Option<u16>, retry_after: Option<u64>) -> Answer {
        Answer {
            outcome,
            status,
            took: Duration::from_millis(5),
            retry_after: retry_after.map(Duration::from_secs),
            error: (outcome != Outcome::Delivered).then(|| "no".to_owned()),
        }
    }

    fn schedule() -> RetrySchedule {
        RetrySchedule::parse("10s,100s").expect("schedule")
    }

    #[test]
    fn a_down_endpoint_defers_its_untried_deliveries_to_the_next_step() {
        let batch = vec![
            (delivery(0), Some(answer(Outcome::Timeout, None, None))),
            (delivery(0), None),
            (delivery(3), None),
        ];
        let plan = Plan::new(&batch, &schedule(), Duration::from_secs(3600));
        assert_eq!(plan.attempts.len(), 1, "only the request made is logged");
        assert_eq!(plan.attempts[0].attempt, 1);
        assert_eq!(plan.attempts[0].outcome, "timeout");
        let Settled::Failed {
            retry_in,
            dead: false,
            ..
        } = &plan.settled[0].1
        else {
            panic!("{:?}", plan.settled[0]);
        };
        for (_, s) in &plan.settled[1..] {
            assert_eq!(
                s,
                &Settled::Deferred {
                    retry_in: *retry_in,
                    error: "no".into()
                }
            );
        }
        assert_eq!(plan.health, Health::Failing(Duration::from_secs(3600)));
        assert_eq!(
            (plan.report.failed, plan.report.deferred, plan.report.dead),
            (1, 2, 0)
        );
    }

    #[test]
    fn retry_after_is_honoured_and_the_last_failure_is_dead() {
        let batch = vec![
            (
                delivery(0),
                Some(answer(Outcome::Failed, Some(503), Some(500))),
            ),
            (delivery(1), Some(answer(Outcome::Failed, Some(400), None))),
            (delivery(2), Some(answer(Outcome::Failed, Some(400), None))),
            (
                delivery(0),
                Some(answer(Outcome::Delivered, Some(204), None)),
            ),
        ];
        let plan = Plan::new(&batch, &schedule(), Duration::from_secs(3600));
        let retry = |i: usize| match &plan.settled[i].1 {
            Settled::Failed { retry_in, dead, .. } => (*retry_in, *dead),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            retry(0),
            (Duration::from_secs(500), false),
            "Retry-After beats 10s"
        );
        assert!(retry(1).0 >= Duration::from_secs(90) && !retry(1).1);
        assert!(retry(2).1, "past the last step: dead");
        assert_eq!(plan.settled[3].1, Settled::Delivered);
        assert_eq!(plan.health, Health::Answering);
        assert_eq!(
            (plan.report.sent, plan.report.failed, plan.report.dead),
            (1, 2, 1)
        );
    }

    #[test]
    fn a_410_makes_the_endpoint_gone() {
        let batch = vec![(delivery(0), Some(answer(Outcome::Gone, Some(410), None)))];
        let plan = Plan::new(&batch, &schedule(), Duration::from_secs(3600));
        assert_eq!(plan.health, Health::Gone);
    }
}
