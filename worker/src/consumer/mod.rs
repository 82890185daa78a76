//! The queue consumer: receives parse-task messages (up to 32 at a time, processed with bounded
//! concurrency), downloads each task's file, parses it in an isolated child process and streams
//! the rows into `COPY parsed_row_chunks` — in the one transaction that also stores the sheets
//! and marks the task `COMPLETED`, so a redelivered message can never duplicate rows. Every task change is
//! conditional (see `shared::db::tasks`), which makes duplicates no-ops. Long parses keep their
//! message invisible and their task lease alive; transient failures leave the message to
//! reappear with backoff; unparsable files fail their task at once; messages delivered too
//! often, or not valid envelopes, go to `<queue>-poison`.

pub mod config;
mod drain;
mod finish;
mod hooked;
mod keepalive;
mod keys;
pub mod metrics;
mod process;
mod progress;
mod review;
mod run;
mod settle;
mod store;
mod work;

pub use run::run;

use std::sync::Arc;

use anyhow::Context as _;
use shared::db::row_store::Months;
use shared::domain::TaskErrorCode;
use shared::storage::{BlobStore, QueueClient, ReceivedMessage};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::bounds::Budget;
use crate::hooks::Hooks;
use crate::parse::isolate::Isolation;
use config::ConsumerConfig;

/// Everything the consumer needs. Cheap to clone.
#[derive(Clone)]
pub struct Consumer {
    pub db: PgPool,
    pub queue: QueueClient,
    /// `<queue>-poison`.
    pub poison: QueueClient,
    pub blobs: BlobStore,
    pub isolation: Arc<Isolation>,
    pub cfg: Arc<ConsumerConfig>,
    /// How many more messages the loop may receive (`--max-messages`); unlimited by default.
    pub budget: Arc<Budget>,
    /// The months of the row store this process knows to have partitions.
    pub months: Arc<Months>,
    /// How validation hooks are called; without it a hooked template's file fails
    /// `hook_unavailable`.
    pub hooks: Option<Hooks>,
}

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Parsed; rows, sheets and `COMPLETED` committed; message deleted.
    Completed { task_id: Uuid, rows: u64 },
    /// The mapping needs a person: task `NEEDS_REVIEW` with its review; message deleted.
    InReview { task_id: Uuid },
    /// The file cannot be parsed: task `FAILED` with `code`; message deleted.
    Failed { task_id: Uuid, code: TaskErrorCode },
    /// The task was already final: message deleted, nothing else done.
    Duplicate { task_id: Uuid },
    /// The task no longer exists (its file was deleted after the message was sent): message
    /// deleted, nothing else done.
    Orphaned { task_id: Uuid },
    /// Another consumer holds the task right now: message left to reappear.
    Busy { task_id: Uuid },
    /// Sent to `<queue>-poison`; the task (when known) `FAILED` with `code`.
    Poisoned {
        task_id: Option<Uuid>,
        code: TaskErrorCode,
    },
    /// A transient failure: task released, message left to reappear after a backoff.
    Retry { task_id: Uuid, db_unavailable: bool },
    /// Our lease ran out and someone else took the task: our work was rolled back.
    Lost { task_id: Uuid },
    /// Hard shutdown: the work was abandoned, the task released, the message made visible.
    Released { task_id: Uuid },
}

impl Consumer {
    /// Builds the consumer for `queue`, its poison queue being `<queue>-poison`.
    pub fn new(
        db: PgPool,
        queue: QueueClient,
        poison: QueueClient,
        blobs: BlobStore,
        isolation: Isolation,
        cfg: ConsumerConfig,
    ) -> Self {
        Self {
            db,
            queue,
            poison,
            blobs,
            isolation: Arc::new(isolation),
            cfg: Arc::new(cfg),
            budget: Budget::unlimited(),
            months: Arc::default(),
            hooks: None,
        }
    }

    /// Calls validation hooks with `hooks`.
    pub fn with_hooks(self, hooks: Hooks) -> Self {
        Self {
            hooks: Some(hooks),
            ..self
        }
    }

    /// The consumer, its loop receiving no more than the messages of `budget`.
    pub fn with_budget(self, budget: Arc<Budget>) -> Self {
        Self { budget, ..self }
    }

    /// Receives one batch (up to `batch_size` messages) and processes all of it with bounded
    /// concurrency. Returns the outcome of each message; an empty vector means the queue had
    /// nothing visible. Tests drive the consumer with this.
    pub async fn run_once(&self, abort: &CancellationToken) -> anyhow::Result<Vec<Outcome>> {
        let messages = self
            .queue
            .receive(self.cfg.batch_size, self.cfg.visibility_timeout)
            .await
            .context("receiving queue messages")?;
        let limit = self.cfg.concurrency.max(1) as usize;
        let results: Vec<anyhow::Result<Outcome>> =
            futures::StreamExt::collect(futures::StreamExt::buffer_unordered(
                futures::stream::iter(messages.into_iter().map(|m| self.handle(m, abort))),
                limit,
            ))
            .await;
        results.into_iter().collect()
    }

    /// Processes one received message ([`Consumer::process_one`]) and records its delivery and
    /// its outcome in the metrics: the one place both the loop and [`Consumer::run_once`] go
    /// through, so every message is counted once.
    pub async fn handle(
        &self,
        msg: ReceivedMessage,
        abort: &CancellationToken,
    ) -> anyhow::Result<Outcome> {
        metrics::received(&msg);
        let outcome = self.process_one(msg, abort).await;
        metrics::outcome(&outcome);
        outcome
    }
}
