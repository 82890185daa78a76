//! The consumer's metrics (names and meanings in [`shared::metrics::catalogue`]): what became of
//! each message and task, the parses, the queue wait, lease renewals and rescues. The queue
//! length gauges are read by the exporter ([`crate::metrics`]).

use std::time::Duration;

use metrics::{counter, histogram};
use shared::domain::{FileFormat, TaskErrorCode};
use shared::metrics::catalogue as names;
use shared::storage::ReceivedMessage;

use super::Outcome;

/// Every outcome label of [`Outcome`], and `error` for a message whose processing failed
/// unexpectedly.
const OUTCOMES: [&str; 11] = [
    "completed",
    "in_review",
    "failed",
    "duplicate",
    "orphaned",
    "busy",
    "poisoned",
    "retry",
    "lost",
    "released",
    "error",
];

/// Registers at zero every series whose labels are known in advance (adding 0 keeps what a
/// counter already holds when another worker starts in the same process, as in tests).
pub fn register() {
    for outcome in OUTCOMES {
        counter!(names::CONSUMER_MESSAGES, "outcome" => outcome).increment(0);
    }
    counter!(names::TASKS_FINISHED, "result" => "completed").increment(0);
    for code in TaskErrorCode::ALL {
        counter!(names::TASKS_FINISHED, "result" => code.as_str()).increment(0);
    }
    for code in [
        TaskErrorCode::RetriesExhausted,
        TaskErrorCode::InvalidMessage,
    ] {
        counter!(names::POISON_MESSAGES, "code" => code.as_str()).increment(0);
    }
    for format in FileFormat::ALL {
        let _ = histogram!(names::PARSE_DURATION, "format" => format.as_str());
        counter!(names::PARSED_ROWS, "format" => format.as_str()).increment(0);
    }
    let _ = histogram!(names::QUEUE_WAIT);
    let _ = histogram!(names::DEQUEUE_COUNT);
    counter!(names::LEASE_RENEWALS).increment(0);
    counter!(names::TASK_RESCUES).increment(0);
}

/// A message as it is received: how long it waited in the queue, how often it was delivered.
pub fn received(msg: &ReceivedMessage) {
    if let Some(waited) = msg.queue_wait() {
        histogram!(names::QUEUE_WAIT).record(waited.as_secs_f64());
    }
    histogram!(names::DEQUEUE_COUNT).record(msg.dequeue_count as f64);
}

/// What became of one message; a final task status counts its task too.
pub fn outcome(result: &anyhow::Result<Outcome>) {
    let (label, finished, poisoned) = match result {
        Ok(Outcome::Completed { .. }) => ("completed", Some("completed"), None),
        Ok(Outcome::Failed { code, .. }) => ("failed", Some(code.as_str()), None),
        Ok(Outcome::InReview { .. }) => ("in_review", None, None),
        Ok(Outcome::Duplicate { .. }) => ("duplicate", None, None),
        Ok(Outcome::Orphaned { .. }) => ("orphaned", None, None),
        Ok(Outcome::Busy { .. }) => ("busy", None, None),
        Ok(Outcome::Poisoned { task_id, code }) => (
            "poisoned",
            task_id.map(|_| code.as_str()),
            Some(code.as_str()),
        ),
        Ok(Outcome::Retry { .. }) => ("retry", None, None),
        Ok(Outcome::Lost { .. }) => ("lost", None, None),
        Ok(Outcome::Released { .. }) => ("released", None, None),
        Err(_) => ("error", None, None),
    };
    counter!(names::CONSUMER_MESSAGES, "outcome" => label).increment(1);
    if let Some(result) = finished {
        counter!(names::TASKS_FINISHED, "result" => result).increment(1);
    }
    if let Some(code) = poisoned {
        counter!(names::POISON_MESSAGES, "code" => code).increment(1);
    }
}

/// One parse that ran to its end: with `rows` when it succeeded, without when it failed with a
/// code.
pub fn parsed(format: FileFormat, took: Duration, rows: Option<u64>) {
    histogram!(names::PARSE_DURATION, "format" => format.as_str()).record(took.as_secs_f64());
    if let Some(rows) = rows {
        counter!(names::PARSED_ROWS, "format" => format.as_str()).increment(rows);
    }
}

/// A task lease extended during a long parse.
pub fn lease_renewed() {
    counter!(names::LEASE_RENEWALS).increment(1);
}

/// A task taken over from a consumer whose lease had expired.
pub fn task_rescued() {
    counter!(names::TASK_RESCUES).increment(1);
}
