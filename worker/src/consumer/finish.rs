//! The last step of processing a message: what the work on its task came to ([`Ending`]) is
//! recorded and the message settled, in one place ([`Consumer::finish`]). A new way for the work
//! to end is one more variant and one more arm here.

use shared::db;
use shared::domain::TaskErrorCode;
use shared::failure;
use shared::storage::ReceivedMessage;
use std::time::Duration;
use uuid::Uuid;

use super::{Consumer, Outcome};

/// How the work on a started task ended.
pub(super) enum Ending {
    /// Rows, sheets and `COMPLETED` committed: the message is deleted.
    Completed(u64),
    /// The file cannot be parsed: the task is to be failed with this code and message.
    Unparsable(TaskErrorCode, String),
    /// Failed already, with its report (its template rejects it): only the message is left to
    /// delete.
    Rejected(TaskErrorCode),
    /// Stopped in NEEDS_REVIEW: only the message is left to delete (the answer sends a new one).
    InReview,
    /// Our lease ran out and someone else took the task: nothing of ours was kept.
    Lost,
    /// Hard shutdown: the work was dropped; the task and the message are handed back.
    Abandoned,
    /// A failure that another try may not meet (an outage, an unexpected error).
    Transient(anyhow::Error),
}

impl Consumer {
    /// Records how the work ended and settles the message (`receipt` is its newest pop receipt).
    pub(super) async fn finish(
        &self,
        msg: &ReceivedMessage,
        receipt: &str,
        task_id: Uuid,
        attempt: i32,
        ending: Ending,
    ) -> anyhow::Result<Outcome> {
        match ending {
            Ending::Completed(rows) => {
                self.delete(&msg.id, receipt).await;
                Ok(Outcome::Completed { task_id, rows })
            }
            Ending::Rejected(code) => {
                self.delete(&msg.id, receipt).await;
                Ok(Outcome::Failed { task_id, code })
            }
            Ending::Unparsable(code, message) => {
                self.fail_task(msg, receipt, task_id, attempt, code, &message)
                    .await
            }
            Ending::InReview => {
                self.delete(&msg.id, receipt).await;
                Ok(Outcome::InReview { task_id })
            }
            Ending::Lost => Ok(Outcome::Lost { task_id }),
            Ending::Abandoned => {
                self.release(&msg.id, receipt, task_id, attempt, Duration::ZERO)
                    .await;
                tracing::info!(%task_id, attempt, "shutdown: task released, message visible again");
                Ok(Outcome::Released { task_id })
            }
            Ending::Transient(e) => Ok(self.retry(msg, receipt, task_id, attempt, &e).await),
        }
    }

    /// Fails an unparsable file's task with `code`, and deletes its message.
    async fn fail_task(
        &self,
        msg: &ReceivedMessage,
        receipt: &str,
        task_id: Uuid,
        attempt: i32,
        code: TaskErrorCode,
        message: &str,
    ) -> anyhow::Result<Outcome> {
        let failed = db::tasks::fail(&self.db, task_id, Some(attempt), code, message, None).await;
        if let Err(e) = failed {
            return self
                .db_failed(msg, task_id, Some((attempt, receipt)), e)
                .await;
        }
        tracing::warn!(%task_id, attempt, code = %code, message = %message, "task failed");
        self.delete(&msg.id, receipt).await;
        Ok(Outcome::Failed { task_id, code })
    }

    /// A transient failure: the attempt's error is recorded and the message comes back after a
    /// backoff. When Postgres or Storage is down or refuses us ([`shared::failure`]), that is no
    /// fault of the message: it is requeued without counting the delivery; otherwise it is
    /// released and the delivery counts.
    async fn retry(
        &self,
        msg: &ReceivedMessage,
        receipt: &str,
        task_id: Uuid,
        attempt: i32,
        e: &anyhow::Error,
    ) -> Outcome {
        let db_unavailable = failure::of_db(&**e) == Some(failure::Failure::Outage);
        let error = format!("{e:#}");
        tracing::warn!(%task_id, attempt, error, "transient failure; the message will be retried");
        if let Err(e) = db::tasks::record_transient_error(&self.db, task_id, attempt, &error).await
        {
            tracing::warn!(%task_id, error = %e, "could not record the failed attempt");
        }
        if failure::of(&**e).spares_the_message() {
            let delay = self.outage_delay(attempt);
            self.requeue(msg, receipt, task_id, Some(attempt), delay)
                .await;
        } else {
            let delay = self.retry_delay(msg.dequeue_count);
            self.release(&msg.id, receipt, task_id, attempt, delay)
                .await;
        }
        Outcome::Retry {
            task_id,
            db_unavailable,
        }
    }
}
