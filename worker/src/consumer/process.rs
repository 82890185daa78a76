//! Processing one message, as a row of small steps: decode it ([`Consumer::process_one`]), take
//! its task ([`Consumer::take`]), work on it while its lease and its message's invisibility are
//! kept ([`Consumer::work_leased`]: fetch, parse into the result transaction and commit, in
//! [`super::work`]), and finish with one [`Ending`] ([`Consumer::finish`]).

use std::sync::{Arc, Mutex};

use shared::db;
use shared::domain::layout_override::LayoutOverride;
use shared::domain::{Envelope, ParseTaskPayload, TaskErrorCode, TaskStatus};
use shared::storage::ReceivedMessage;
use shared::telemetry::propagation;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::finish::Ending;
use super::keepalive::{current, keep_alive};
use super::progress::{self, Progress};
use super::settle::lease_left;
use super::{Consumer, Outcome};

/// What taking a message's task came to.
enum Taken {
    /// The task is ours, at this attempt, to be parsed with a person's layout override if it
    /// has one.
    Started(i32, Option<LayoutOverride>),
    /// Nothing to work on: the message is settled already.
    Settled(Outcome),
}

/// A started task's attempt: its message's payload, the attempt's number and the task's layout
/// override.
struct Leased<'a> {
    payload: &'a ParseTaskPayload,
    attempt: i32,
    layout: Option<&'a LayoutOverride>,
}

impl Consumer {
    /// Processes one received message to its end. An `Err` is an unexpected failure (the
    /// message is left to reappear); every expected path is an [`Outcome`].
    pub async fn process_one(
        &self,
        msg: ReceivedMessage,
        abort: &CancellationToken,
    ) -> anyhow::Result<Outcome> {
        let envelope = match Envelope::decode(&msg.body) {
            Ok(e) => e,
            Err(e) => {
                return self
                    .poison(&msg, None, TaskErrorCode::InvalidMessage, &e.to_string())
                    .await
            }
        };
        let payload = match envelope.parse_task() {
            Ok(p) => p,
            Err(e) => {
                // A payload with a readable task id still gets its task failed.
                let task_id = envelope
                    .payload
                    .get("task_id")
                    .and_then(|v| v.as_str())
                    .and_then(|s| s.parse().ok());
                return self
                    .poison(&msg, task_id, TaskErrorCode::InvalidMessage, &e.to_string())
                    .await;
            }
        };
        let span = self.process_span(&msg, &payload);
        self.process_task(msg, payload, abort)
            .instrument(span)
            .await
    }

    /// The CONSUMER span of one message, in the trace of the upload that sent it.
    fn process_span(&self, msg: &ReceivedMessage, payload: &ParseTaskPayload) -> tracing::Span {
        let queue = self.queue.name();
        let span = tracing::info_span!("process",
            otel.name = %format_args!("process {queue}"),
            otel.kind = "consumer",
            messaging.system = propagation::MESSAGING_SYSTEM,
            messaging.operation.type = "process",
            messaging.destination.name = queue,
            messaging.message.id = %msg.id,
            messaging.azure_queue_storage.dequeue_count = msg.dequeue_count,
            task_id = %payload.task_id,
            source_file_id = %payload.source_file_id);
        propagation::continue_trace(&span, payload.traceparent.as_deref());
        span
    }

    /// [`Consumer::process_one`] for a well-formed parse-task message: take, work, finish.
    async fn process_task(
        &self,
        msg: ReceivedMessage,
        payload: ParseTaskPayload,
        abort: &CancellationToken,
    ) -> anyhow::Result<Outcome> {
        let (attempt, layout) = match self.take(&msg, &payload).await? {
            Taken::Started(attempt, layout) => (attempt, layout),
            Taken::Settled(outcome) => return Ok(outcome),
        };
        let leased = Leased {
            payload: &payload,
            attempt,
            layout: layout.as_ref(),
        };
        let (ending, receipt) = self.work_leased(&msg, &leased, abort).await;
        self.finish(&msg, &receipt, payload.task_id, attempt, ending)
            .await
    }

    /// Reads the message's task and starts it, unless the message is settled without work: the
    /// task is gone, final, held by a live consumer, or the message is forged or delivered too
    /// often.
    async fn take(
        &self,
        msg: &ReceivedMessage,
        payload: &ParseTaskPayload,
    ) -> anyhow::Result<Taken> {
        let task_id = payload.task_id;
        let task = match db::tasks::find(&self.db, task_id).await {
            Ok(Some(t)) => t,
            Ok(None) => {
                // Its file was deleted (with the task and outbox row) after the message was
                // sent: nothing is left to do, and nothing for an operator to look at. A forged
                // id lands here too and changes nothing either.
                tracing::info!(%task_id, "the task no longer exists (its file was deleted); message deleted");
                self.delete(&msg.id, &msg.pop_receipt).await;
                return Ok(Taken::Settled(Outcome::Orphaned { task_id }));
            }
            Err(e) => {
                return self
                    .db_failed(msg, task_id, None, e)
                    .await
                    .map(Taken::Settled)
            }
        };
        if let Some(outcome) = self.settle_untaken(msg, payload, &task).await? {
            return Ok(Taken::Settled(outcome));
        }
        self.start(msg, &task).await
    }

    /// The checks before a task is started, in order: the message must name the task's file, the
    /// task must not be final nor held by a live consumer, and the message must not have been
    /// delivered too often. `Some` settles the message.
    async fn settle_untaken(
        &self,
        msg: &ReceivedMessage,
        payload: &ParseTaskPayload,
        task: &db::tasks::Task,
    ) -> anyhow::Result<Option<Outcome>> {
        let task_id = task.id;
        // The task row, not the message, says which file to parse: a message naming another
        // file is forged or corrupt, and must not touch this task or that file.
        if payload.source_file_id != task.source_file_id {
            let reason = format!(
                "the message names source file {} but task {task_id} belongs to {}",
                payload.source_file_id, task.source_file_id
            );
            let code = TaskErrorCode::InvalidMessage;
            return self.poison(msg, None, code, &reason).await.map(Some);
        }
        // A task waiting in review is sent again by its answer's own message.
        if task.status.is_final() || task.status == TaskStatus::NeedsReview {
            tracing::info!(%task_id, status = ?task.status, "task already final or in review; duplicate delivery deleted");
            self.delete(&msg.id, &msg.pop_receipt).await;
            return Ok(Some(Outcome::Duplicate { task_id }));
        }
        // Held by a consumer whose lease is running (another copy of the message is being
        // processed, or this one reappeared while its holder works): leave it until that lease
        // runs out. Checked before the delivery count, so a live holder's task is never
        // poisoned; if the holder dies, the task is free by the time the message is back.
        if let Some(left) = lease_left(task) {
            return Ok(Some(self.busy(msg, task_id, left).await));
        }
        if msg.dequeue_count > self.cfg.max_dequeue_count {
            let reason = format!(
                "the task's message was delivered {} times without success (limit {})",
                msg.dequeue_count, self.cfg.max_dequeue_count
            );
            let code = TaskErrorCode::RetriesExhausted;
            return self
                .poison(msg, Some(task_id), code, &reason)
                .await
                .map(Some);
        }
        Ok(None)
    }

    /// Starts the task under a fresh lease, counting this delivery as its attempt.
    async fn start(&self, msg: &ReceivedMessage, task: &db::tasks::Task) -> anyhow::Result<Taken> {
        let task_id = task.id;
        let dequeue_count = i32::try_from(msg.dequeue_count).unwrap_or(i32::MAX);
        let lease = self.cfg.task_lease;
        let started = match db::tasks::start(&self.db, task_id, lease, dequeue_count).await {
            Ok(Some(t)) => t,
            Ok(None) => {
                // Someone else holds it (or it just became final, or its file is being removed):
                // the message reappears after its visibility timeout and is then deleted or
                // processed.
                tracing::info!(%task_id, "task is held by another consumer; leaving the message");
                return Ok(Taken::Settled(Outcome::Busy { task_id }));
            }
            Err(e) => {
                return self
                    .db_failed(msg, task_id, None, e)
                    .await
                    .map(Taken::Settled)
            }
        };
        if task.status == TaskStatus::Running {
            // It was RUNNING when we read it and we still got it: its holder's lease had expired.
            super::metrics::task_rescued();
        }
        let attempt = started.attempts;
        tracing::info!(%task_id, attempt, dequeue_count = msg.dequeue_count, "task started");
        Ok(Taken::Started(
            attempt,
            started.layout_override.map(|j| j.0),
        ))
    }

    /// Works on a started task ([`Consumer::work`]) while keeping its message invisible and its
    /// lease alive, and reporting its progress. Returns how it ended and the message's newest
    /// pop receipt. The work is dropped (its transaction rolled back) when the lease is lost or
    /// at a hard shutdown.
    async fn work_leased(
        &self,
        msg: &ReceivedMessage,
        leased: &Leased<'_>,
        abort: &CancellationToken,
    ) -> (Ending, String) {
        let (payload, attempt) = (leased.payload, leased.attempt);
        let task_id = payload.task_id;
        let receipt = Arc::new(Mutex::new(msg.pop_receipt.clone()));
        let (lost, done) = (CancellationToken::new(), CancellationToken::new());
        let keepalive = tokio::spawn(keep_alive(
            self.clone(),
            msg.id.clone(),
            Arc::clone(&receipt),
            task_id,
            attempt,
            done.clone(),
            lost.clone(),
        ));
        let progress = Arc::new(Progress::default());
        let reporter = (!self.cfg.progress_interval.is_zero()).then(|| {
            let (db, progress) = (self.db.clone(), Arc::clone(&progress));
            let every = self.cfg.progress_interval;
            tokio::spawn(progress::report(
                every,
                db,
                task_id,
                attempt,
                progress,
                done.clone(),
            ))
        });
        let worked = tokio::select! {
            r = self.work(task_id, attempt, payload, leased.layout, &progress) => Some(r),
            () = lost.cancelled() => None,
            () = abort.cancelled() => None,
        };
        done.cancel();
        if let Some(reporter) = reporter {
            let _ = reporter.await;
        }
        // Waits for a renewal in flight, so the receipt read below is the newest.
        let _ = keepalive.await;
        let ending = match worked {
            Some(r) => r.unwrap_or_else(Ending::Transient),
            None if lost.is_cancelled() => {
                tracing::warn!(%task_id, attempt, "lost the task lease; work rolled back");
                Ending::Lost
            }
            None => Ending::Abandoned,
        };
        (ending, current(&receipt))
    }
}
