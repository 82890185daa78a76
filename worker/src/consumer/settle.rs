//! What becomes of a message once its task is done with, or cannot be worked on: deleted,
//! released to reappear (at once, or after a backoff), left until another consumer's lease ends,
//! or moved to `<queue>-poison`.

use std::time::Duration;

use anyhow::Context as _;
use shared::db;
use shared::domain::{TaskErrorCode, TaskStatus};
use shared::storage::{ReceivedMessage, StorageError};
use uuid::Uuid;

use crate::retry;

use super::{Consumer, Outcome};

impl Consumer {
    /// Moves a message to `<queue>-poison` (its body unchanged, so an operator can requeue it),
    /// fails its task, and deletes it from the main queue.
    pub(super) async fn poison(
        &self,
        msg: &ReceivedMessage,
        task_id: Option<Uuid>,
        code: TaskErrorCode,
        reason: &str,
    ) -> anyhow::Result<Outcome> {
        self.poison
            .send(&msg.body)
            .await
            .map_err(|e| storage_context(e, "sending to the poison queue"))?;
        if let Some(id) = task_id {
            db::tasks::fail(&self.db, id, None, code.as_str(), reason)
                .await
                .context("failing a poisoned task")?;
        }
        self.delete(&msg.id, &msg.pop_receipt).await;
        tracing::error!(task_id = ?task_id, message_id = %msg.id, dequeue_count = msg.dequeue_count,
            %code, reason, "message moved to the poison queue");
        Ok(Outcome::Poisoned { task_id, code })
    }

    /// A database failure outside the parse: a transient one leaves the message to reappear.
    pub(super) async fn db_failed(
        &self,
        msg: &ReceivedMessage,
        task_id: Uuid,
        held: Option<(i32, &str)>,
        e: sqlx::Error,
    ) -> anyhow::Result<Outcome> {
        if !db::is_unavailable(&e) {
            return Err(anyhow::Error::new(e).context("database error"));
        }
        tracing::warn!(%task_id, error = %e, "database unavailable; the message will be retried");
        let delay = self.retry_delay(msg.dequeue_count);
        match held {
            Some((attempt, receipt)) => {
                self.release(&msg.id, receipt, task_id, attempt, delay)
                    .await
            }
            None => {
                let _ = self
                    .queue
                    .update_visibility(&msg.id, &msg.pop_receipt, delay)
                    .await;
            }
        }
        Ok(Outcome::Retry {
            task_id,
            db_unavailable: true,
        })
    }

    /// Gives the task back and lets the message reappear after `delay` (0 = at once). Both are
    /// best effort: if either fails, the lease and the visibility timeout expire by themselves.
    pub(super) async fn release(
        &self,
        msg_id: &str,
        receipt: &str,
        task_id: Uuid,
        attempt: i32,
        delay: Duration,
    ) {
        if let Err(e) = db::tasks::release(&self.db, task_id, attempt).await {
            tracing::warn!(%task_id, attempt, error = %e, "could not release the task; its lease will expire");
        }
        if let Err(e) = self.queue.update_visibility(msg_id, receipt, delay).await {
            tracing::warn!(%task_id, error = %e, "could not reset the message's visibility");
        }
    }

    pub(super) async fn delete(&self, msg_id: &str, receipt: &str) {
        match self.queue.delete(msg_id, receipt).await {
            Ok(()) => {}
            // Already gone: someone else deleted it, fine.
            Err(e) if e.is_not_found() => {}
            // The outcome is recorded; a redelivery will find the task final and delete it.
            Err(e) => {
                tracing::warn!(message_id = %msg_id, error = %e, "could not delete a processed message")
            }
        }
    }

    /// Leaves a message whose task is held by another consumer to reappear once that consumer's
    /// lease (`left` of it) has run out, or after the visibility timeout if that is sooner.
    pub(super) async fn busy(
        &self,
        msg: &ReceivedMessage,
        task_id: Uuid,
        left: Duration,
    ) -> Outcome {
        let back_in = (left + BUSY_MARGIN).min(self.cfg.visibility_timeout);
        tracing::info!(%task_id, back_in_ms = back_in.as_millis() as u64,
            "task is held by another consumer; the message comes back when its lease ends");
        if let Err(e) = self
            .queue
            .update_visibility(&msg.id, &msg.pop_receipt, back_in)
            .await
        {
            tracing::warn!(%task_id, error = %e, "could not reset the message's visibility");
        }
        Outcome::Busy { task_id }
    }

    /// Backoff before a transiently failed message reappears: base · 2^(deliveries − 1), capped.
    pub(super) fn retry_delay(&self, dequeue_count: u64) -> Duration {
        let exp = dequeue_count.saturating_sub(1).min(20) as u32;
        retry::doubled(self.cfg.retry_backoff_base, self.cfg.retry_backoff_cap, exp)
    }
}

/// How long after the holder's lease ends a busy task's message comes back: the lease must have
/// expired by the Postgres clock when it is started again.
const BUSY_MARGIN: Duration = Duration::from_millis(250);

/// How much of its holder's lease a RUNNING task has left (by this host's clock), if any.
pub(super) fn lease_left(task: &db::tasks::Task) -> Option<Duration> {
    if task.status != TaskStatus::Running {
        return None;
    }
    let expires = std::time::SystemTime::from(task.lease_expires_at?);
    expires
        .duration_since(std::time::SystemTime::now())
        .ok()
        .filter(|d| !d.is_zero())
}

pub(super) fn storage_context(e: StorageError, what: &'static str) -> anyhow::Error {
    anyhow::Error::new(e).context(what)
}
