//! The relay's metrics (names and meanings in [`shared::metrics::catalogue`]): its sends, their
//! durations and the commit-to-sent lag. The outbox backlog gauges are read by the exporter
//! ([`crate::metrics`]).

use std::time::Duration;

use metrics::{counter, histogram};
use shared::metrics::catalogue as names;

use crate::claim::Report;

/// Registers at zero every series whose labels are known in advance (adding 0 keeps what a
/// counter already holds when another worker starts in the same process, as in tests).
pub fn register() {
    for outcome in ["sent", "failed", "dead"] {
        counter!(names::OUTBOX_SENDS, "outcome" => outcome).increment(0);
    }
    for outcome in ["ok", "error"] {
        let _ = histogram!(names::OUTBOX_SEND_DURATION, "outcome" => outcome);
    }
    let _ = histogram!(names::OUTBOX_LAG);
}

/// One queue send of the relay.
pub fn send(took: Duration, ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    histogram!(names::OUTBOX_SEND_DURATION, "outcome" => outcome).record(took.as_secs_f64());
}

/// The commit-to-sent lags of the messages one batch recorded as sent.
pub fn lags(lags_secs: &[f64]) {
    let h = histogram!(names::OUTBOX_LAG);
    for &lag in lags_secs {
        h.record(lag.max(0.0));
    }
}

/// The outcomes of one relay batch.
pub fn batch(report: &Report) {
    for (outcome, n) in [
        ("sent", report.sent),
        ("failed", report.failed),
        ("dead", report.dead),
    ] {
        if n > 0 {
            counter!(names::OUTBOX_SENDS, "outcome" => outcome).increment(n as u64);
        }
    }
}
