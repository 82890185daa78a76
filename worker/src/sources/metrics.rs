//! Blob sources' metrics (names and meanings in [`shared::metrics::catalogue`]): each import by
//! outcome with its lag from the blob's first finding, and each event read from the queue.

use metrics::{counter, histogram};
use shared::db::source_blobs::Claimed;
use shared::metrics::catalogue as names;

pub const OUTCOMES: [&str; 5] = ["imported", "skipped", "failed", "deferred", "lost"];

/// The series at zero, so that a rate over them starts from the worker's start.
pub fn register() {
    for outcome in OUTCOMES {
        counter!(names::SOURCE_BLOBS, "outcome" => outcome).increment(0);
    }
    for outcome in ["recorded", "ignored"] {
        counter!(names::SOURCE_EVENTS, "outcome" => outcome).increment(0);
    }
    let _ = histogram!(names::SOURCE_LAG);
}

/// One import of `b` came to `outcome`.
pub fn import(b: &Claimed, outcome: &'static str) {
    counter!(names::SOURCE_BLOBS, "outcome" => outcome).increment(1);
    if outcome == "imported" {
        let lag = (chrono::Utc::now() - b.found_at)
            .to_std()
            .unwrap_or_default();
        histogram!(names::SOURCE_LAG).record(lag.as_secs_f64());
    }
}

/// A batch of events read from the queue.
pub fn events(recorded: usize, ignored: usize) {
    counter!(names::SOURCE_EVENTS, "outcome" => "recorded").increment(recorded as u64);
    counter!(names::SOURCE_EVENTS, "outcome" => "ignored").increment(ignored as u64);
}
