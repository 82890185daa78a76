//! Destination delivery's metrics (names and meanings in [`shared::metrics::catalogue`]): each
//! delivery by kind and outcome, the bytes written, and the lag from the change that queued it
//! to its delivery. The disabled destinations and the backlog are gauges the exporter reads
//! ([`crate::metrics`]).

use metrics::{counter, histogram};
use shared::db::destination_deliveries::Claimed;
use shared::metrics::catalogue as names;

use super::Sent;

const KINDS: [&str; 2] = ["azure_blob", "webhook_rows"];

/// The destination series, at zero.
pub fn register() {
    for kind in KINDS {
        for outcome in ["delivered", "failed"] {
            counter!(names::DESTINATION_DELIVERIES, "kind" => kind, "outcome" => outcome)
                .increment(0);
        }
        counter!(names::DESTINATION_BYTES, "kind" => kind).increment(0);
        let _ = histogram!(names::DESTINATION_LAG, "kind" => kind);
    }
}

/// One delivery attempt.
pub fn delivery(d: &Claimed, sent: &Sent) {
    let kind = KINDS
        .into_iter()
        .find(|k| *k == d.kind)
        .unwrap_or("azure_blob");
    match &sent.result {
        Ok(done) => {
            counter!(names::DESTINATION_DELIVERIES, "kind" => kind, "outcome" => "delivered")
                .increment(1);
            counter!(names::DESTINATION_BYTES, "kind" => kind).increment(done.bytes);
            let lag = (chrono::Utc::now() - d.queued_at)
                .to_std()
                .unwrap_or_default();
            histogram!(names::DESTINATION_LAG, "kind" => kind).record(lag.as_secs_f64());
        }
        Err(_) => {
            counter!(names::DESTINATION_DELIVERIES, "kind" => kind, "outcome" => "failed")
                .increment(1);
        }
    }
    tracing::debug!(
        took_ms = sent.took.as_millis() as u64,
        "destination delivery attempt"
    );
}
