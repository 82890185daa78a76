//! Webhook delivery's metrics (names and meanings in [`shared::metrics::catalogue`]): its
//! requests, their outcomes and the lag from an event's commit. The backlog gauges are read by
//! the exporter ([`crate::metrics`]).

use std::time::Duration;

use metrics::{counter, histogram};
use shared::metrics::catalogue as names;

use super::client::Outcome;
use crate::claim::Report;

/// The webhook series, at zero.
pub fn register() {
    for outcome in Outcome::ALL.iter().copied() {
        counter!(names::WEBHOOK_ATTEMPTS, "outcome" => outcome.as_str()).increment(0);
        let _ = histogram!(names::WEBHOOK_REQUEST_DURATION, "outcome" => outcome.as_str());
    }
    for outcome in WEBHOOK_DELIVERY_OUTCOMES {
        counter!(names::WEBHOOK_DELIVERIES, "outcome" => outcome).increment(0);
    }
    let _ = histogram!(names::WEBHOOK_LAG);
}

/// The outcome labels of [`names::WEBHOOK_DELIVERIES`].
const WEBHOOK_DELIVERY_OUTCOMES: [&str; 4] = ["delivered", "retry", "dead", "deferred"];

/// An event's first delivery attempt to an endpoint: the lag from its commit.
pub fn first_attempt(committed: chrono::DateTime<chrono::Utc>) {
    let lag = (chrono::Utc::now() - committed)
        .to_std()
        .unwrap_or_default();
    histogram!(names::WEBHOOK_LAG).record(lag.as_secs_f64());
}

/// One webhook request.
pub fn attempt(outcome: Outcome, took: Duration) {
    counter!(names::WEBHOOK_ATTEMPTS, "outcome" => outcome.as_str()).increment(1);
    histogram!(names::WEBHOOK_REQUEST_DURATION, "outcome" => outcome.as_str())
        .record(took.as_secs_f64());
}

/// How one endpoint's batch of deliveries was settled.
pub fn batch(report: &Report) {
    for (outcome, n) in [
        ("delivered", report.sent),
        ("retry", report.failed),
        ("dead", report.dead),
        ("deferred", report.deferred),
    ] {
        if n > 0 {
            counter!(names::WEBHOOK_DELIVERIES, "outcome" => outcome).increment(n as u64);
        }
    }
}
