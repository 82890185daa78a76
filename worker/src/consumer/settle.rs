//! What becomes of a message once its task is done with, or cannot be worked on: deleted,
//! released to reappear (at once, or after a backoff), left until another consumer's lease ends,
//! or moved to `<queue>-poison`.

use std::time::Duration;

use anyhow::Context as _;
use shared::db;
use shared::domain::{TaskErrorCode, TaskStatus};
use shared::failure::{self, Failure};
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
            db::tasks::fail(&self.db, id, None, code, reason, None)
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
        if failure::db(&e) != Failure::Outage {
            return Err(anyhow::Error::new(e).context("database error"));
        }
        tracing::warn!(%task_id, error = %e, "database unavailable; the message will be retried");
        let (attempt, receipt) = match held {
            Some((attempt, receipt)) => (Some(attempt), receipt),
            None => (None, msg.pop_receipt.as_str()),
        };
        let delay = self.outage_delay(attempt.unwrap_or(0));
        self.requeue(msg, receipt, task_id, attempt, delay).await;
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

    /// Lets a message whose work was stopped by an outage or a refusal of us (Postgres or Storage
    /// down, or refusing our credentials: [`shared::failure`]) come back after `delay` *without
    /// counting the delivery*: a fresh copy is sent, hidden for `delay`, and this one deleted, so
    /// its dequeue count starts again. Releasing it instead would poison a healthy message after `MAX_DEQUEUE_COUNT` deliveries of a long outage;
    /// only deliveries that fail because of the message (crashes, unexpected errors) count.
    /// If the copy cannot be sent, the message is released as usual (that delivery counts).
    pub(super) async fn requeue(
        &self,
        msg: &ReceivedMessage,
        receipt: &str,
        task_id: Uuid,
        attempt: Option<i32>,
        delay: Duration,
    ) {
        if let Some(attempt) = attempt {
            if let Err(e) = db::tasks::release(&self.db, task_id, attempt).await {
                tracing::warn!(%task_id, attempt, error = %e, "could not release the task; its lease will expire");
            }
        }
        match self.queue.send_hidden(&msg.body, delay).await {
            Ok(()) => {
                // If this delete fails, two copies exist; the second finds the task final or
                // leased and is deleted or left, as any duplicate delivery.
                self.delete(&msg.id, receipt).await;
            }
            Err(e) => {
                tracing::warn!(%task_id, error = %e, "could not requeue the message; releasing it");
                if let Err(e) = self.queue.update_visibility(&msg.id, receipt, delay).await {
                    tracing::warn!(%task_id, error = %e, "could not reset the message's visibility");
                }
            }
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

    /// Backoff before a message requeued by an outage reappears: growing with the task's
    /// attempts (its dequeue count starts again at each requeue), capped, with jitter so that the
    /// messages of one outage do not all come back at once.
    pub(super) fn outage_delay(&self, attempts: i32) -> Duration {
        retry::jittered(
            self.cfg.retry_backoff_base,
            self.cfg.retry_backoff_cap,
            attempts.saturating_sub(1),
        )
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
