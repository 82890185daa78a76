//! The queue consumer: receives parse-task messages (up to 32 at a time, processed with bounded
//! concurrency), downloads each task's file, parses it in an isolated child process and streams
//! the rows into `COPY parsed_rows` — in the one transaction that also stores the sheets and marks
//! the task `COMPLETED`, so a redelivered message can never duplicate rows. Every task change is
//! conditional (see `shared::db::tasks`), which makes duplicates no-ops. Long parses keep their
//! message invisible and their task lease alive; transient failures leave the message to
//! reappear with backoff; unparsable files fail their task at once; messages delivered too
//! often, or not valid envelopes, go to `<queue>-poison`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use shared::db;
use shared::domain::{Envelope, FileFormat};
use shared::storage::{BlobStore, QueueClient, ReceivedMessage, StorageError};
use sqlx::PgPool;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use crate::config::ConsumerConfig;
use crate::parse::isolate::{self, Isolation};
use crate::parse::{ParseEvent, ParseFailure, ParseSummary};
use crate::Shutdown;

/// Task error code: the message was delivered more than `MAX_DEQUEUE_COUNT` times.
pub const RETRIES_EXHAUSTED: &str = "retries_exhausted";
/// Task error code: the message was not a valid parse-task envelope.
pub const INVALID_MESSAGE: &str = "invalid_message";
/// Task error code: the uploaded blob or its `source_files` row is gone.
pub const SOURCE_MISSING: &str = "source_missing";

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
}

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Parsed; rows, sheets and `COMPLETED` committed; message deleted.
    Completed { task_id: Uuid, rows: u64 },
    /// The file cannot be parsed: task `FAILED` with `code`; message deleted.
    Failed { task_id: Uuid, code: String },
    /// The task was already final: message deleted, nothing else done.
    Duplicate { task_id: Uuid },
    /// Another consumer holds the task right now: message left to reappear.
    Busy { task_id: Uuid },
    /// Sent to `<queue>-poison`; the task (when known) `FAILED` with `code`.
    Poisoned { task_id: Option<Uuid>, code: String },
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
        }
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
                futures::stream::iter(messages.into_iter().map(|m| self.process_one(m, abort))),
                limit,
            ))
            .await;
        results.into_iter().collect()
    }

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
                    .poison(&msg, None, INVALID_MESSAGE, &e.to_string())
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
                    .poison(&msg, task_id, INVALID_MESSAGE, &e.to_string())
                    .await;
            }
        };
        let task_id = payload.task_id;
        let task = match db::tasks::find(&self.db, task_id).await {
            Ok(Some(t)) => t,
            Ok(None) => {
                let reason = format!("task {task_id} does not exist");
                return self.poison(&msg, None, INVALID_MESSAGE, &reason).await;
            }
            Err(e) => return self.db_failed(&msg, task_id, None, e).await,
        };
        if task.status.is_final() {
            tracing::info!(%task_id, status = ?task.status, "task already final; duplicate delivery deleted");
            self.delete(&msg.id, &msg.pop_receipt).await;
            return Ok(Outcome::Duplicate { task_id });
        }
        if msg.dequeue_count > self.cfg.max_dequeue_count {
            let reason = format!(
                "the task's message was delivered {} times without success (limit {})",
                msg.dequeue_count, self.cfg.max_dequeue_count
            );
            return self
                .poison(&msg, Some(task_id), RETRIES_EXHAUSTED, &reason)
                .await;
        }
        let started = match db::tasks::start(&self.db, task_id, self.cfg.task_lease).await {
            Ok(Some(t)) => t,
            Ok(None) => {
                // Someone else holds it (or it just became final): the message reappears after
                // its visibility timeout and is then deleted or processed.
                tracing::info!(%task_id, "task is held by another consumer; leaving the message");
                return Ok(Outcome::Busy { task_id });
            }
            Err(e) => return self.db_failed(&msg, task_id, None, e).await,
        };
        let attempt = started.attempts;
        tracing::info!(%task_id, attempt, dequeue_count = msg.dequeue_count, "task started");

        // Keep the message invisible and the task leased while we work; the newest pop
        // receipt lives in `receipt`.
        let receipt = Arc::new(Mutex::new(msg.pop_receipt.clone()));
        let lost = CancellationToken::new();
        let done = CancellationToken::new();
        let keepalive = tokio::spawn(keep_alive(
            self.clone(),
            msg.id.clone(),
            Arc::clone(&receipt),
            task_id,
            attempt,
            done.clone(),
            lost.clone(),
        ));

        let work = self.work(task_id, attempt, payload.source_file_id);
        let result = tokio::select! {
            r = work => Some(r),
            () = lost.cancelled() => None,
            () = abort.cancelled() => None,
        };
        done.cancel();
        // Waits for a renewal in flight, so the receipt we read below is the newest.
        let _ = keepalive.await;
        let receipt = current(&receipt);

        let Some(result) = result else {
            if lost.is_cancelled() {
                tracing::warn!(%task_id, attempt, "lost the task lease; work rolled back");
                return Ok(Outcome::Lost { task_id });
            }
            self.release(&msg.id, &receipt, task_id, attempt, Duration::ZERO)
                .await;
            tracing::info!(%task_id, attempt, "shutdown: task released, message visible again");
            return Ok(Outcome::Released { task_id });
        };
        match result {
            Ok(Work::Completed(rows)) => {
                self.delete(&msg.id, &receipt).await;
                Ok(Outcome::Completed { task_id, rows })
            }
            Ok(Work::Lost) => Ok(Outcome::Lost { task_id }),
            Ok(Work::Unparsable(code, message)) => {
                match db::tasks::fail(&self.db, task_id, Some(attempt), &code, &message).await {
                    Ok(_) => {
                        tracing::warn!(%task_id, attempt, code = %code, message = %message, "task failed");
                        self.delete(&msg.id, &receipt).await;
                        Ok(Outcome::Failed { task_id, code })
                    }
                    Err(e) => {
                        self.db_failed(&msg, task_id, Some((attempt, &receipt)), e)
                            .await
                    }
                }
            }
            Err(e) => {
                let db_unavailable = is_db_unavailable(&e);
                tracing::warn!(%task_id, attempt, error = format!("{e:#}"),
                    "transient failure; the message will be retried");
                let delay = self.retry_delay(msg.dequeue_count);
                self.release(&msg.id, &receipt, task_id, attempt, delay)
                    .await;
                Ok(Outcome::Retry {
                    task_id,
                    db_unavailable,
                })
            }
        }
    }

    /// Download, parse and store. `Err` means "transient, try again later".
    async fn work(
        &self,
        task_id: Uuid,
        attempt: i32,
        source_file_id: Uuid,
    ) -> anyhow::Result<Work> {
        let Some(file) = db::source_files::find(&self.db, source_file_id)
            .await
            .context("reading the source file")?
        else {
            return Ok(Work::Unparsable(
                SOURCE_MISSING.into(),
                format!("source file {source_file_id} does not exist"),
            ));
        };
        let Some(format) = FileFormat::parse(&file.format) else {
            return Ok(Work::Unparsable(
                "unsupported_format".into(),
                format!("unknown format {:?}", file.format),
            ));
        };

        let t0 = Instant::now();
        let download = TempFile::new(self.cfg.download_dir.as_deref(), task_id);
        let mut out = tokio::fs::File::create(download.path())
            .await
            .context("creating the download file")?;
        match self.blobs.download_to(&file.blob_name, &mut out).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {
                return Ok(Work::Unparsable(
                    SOURCE_MISSING.into(),
                    format!(
                        "the uploaded file {} is missing from storage",
                        file.blob_name
                    ),
                ))
            }
            Err(e) => return Err(storage_context(e, "downloading the uploaded file")),
        }
        drop(out);
        let downloaded = t0.elapsed();

        let mut tx = self
            .db
            .begin()
            .await
            .context("beginning the result transaction")?;
        let parsed = {
            let mut copy = db::rows::copy_in(&mut tx).await.context("starting COPY")?;
            let parsed = stream_rows(
                &self.isolation,
                download.path(),
                format,
                source_file_id,
                &mut copy,
            )
            .await;
            match parsed {
                Ok(Ok(summary)) => {
                    copy.finish().await.context("finishing COPY")?;
                    Ok(summary)
                }
                Ok(Err(failure)) => {
                    let _ = copy.abort("the file could not be parsed").await;
                    Err(failure)
                }
                Err(e) => {
                    let _ = copy.abort("the parse failed").await;
                    return Err(e);
                }
            }
        };
        let summary = match parsed {
            Ok(s) => s,
            Err(ParseFailure { code, message }) => {
                drop(tx);
                return Ok(Work::Unparsable(code.as_str().to_owned(), message));
            }
        };
        for sheet in &summary.sheets {
            let row = db::rows::Sheet {
                sheet_index: i32::try_from(sheet.index).unwrap_or(i32::MAX),
                name: sheet.name.clone(),
                hidden: sheet.hidden,
                row_count: i64::try_from(sheet.rows).unwrap_or(i64::MAX),
                columns: serde_json::to_value(&sheet.columns)?,
                column_types: serde_json::to_value(&sheet.column_types)?,
            };
            db::rows::insert_sheet(&mut *tx, source_file_id, &row)
                .await
                .context("storing a parsed sheet")?;
        }
        let result = result_json(&summary);
        if !db::tasks::complete(&mut *tx, task_id, attempt, &result)
            .await
            .context("completing the task")?
        {
            // Our lease ran out and another consumer took the task: keep nothing.
            tx.rollback().await.context("rolling back a lost task")?;
            return Ok(Work::Lost);
        }
        tx.commit().await.context("committing the parse result")?;
        tracing::info!(%task_id, attempt, rows = summary.rows_total, sheets = summary.sheets.len(),
            download_ms = downloaded.as_millis() as u64, total_ms = t0.elapsed().as_millis() as u64,
            "task completed");
        Ok(Work::Completed(summary.rows_total))
    }

    /// Moves a message to `<queue>-poison` (its body unchanged, so an operator can requeue it),
    /// fails its task, and deletes it from the main queue.
    async fn poison(
        &self,
        msg: &ReceivedMessage,
        task_id: Option<Uuid>,
        code: &str,
        reason: &str,
    ) -> anyhow::Result<Outcome> {
        self.poison
            .send(&msg.body)
            .await
            .map_err(|e| storage_context(e, "sending to the poison queue"))?;
        if let Some(id) = task_id {
            db::tasks::fail(&self.db, id, None, code, reason)
                .await
                .context("failing a poisoned task")?;
        }
        self.delete(&msg.id, &msg.pop_receipt).await;
        tracing::error!(task_id = ?task_id, message_id = %msg.id, dequeue_count = msg.dequeue_count,
            code, reason, "message moved to the poison queue");
        Ok(Outcome::Poisoned {
            task_id,
            code: code.to_owned(),
        })
    }

    /// A database failure outside the parse: a transient one leaves the message to reappear.
    async fn db_failed(
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
    async fn release(
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

    async fn delete(&self, msg_id: &str, receipt: &str) {
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

    /// Backoff before a transiently failed message reappears: base · 2^(deliveries − 1), capped.
    fn retry_delay(&self, dequeue_count: u64) -> Duration {
        let exp = dequeue_count.saturating_sub(1).min(20) as u32;
        self.cfg
            .retry_backoff_base
            .saturating_mul(2u32.saturating_pow(exp))
            .min(self.cfg.retry_backoff_cap)
    }
}

/// The consumer loop: receives while there are free processing slots, backs off while the queue
/// is empty (from `idle_backoff_min` doubling to `idle_backoff_max`, back to full speed at the
/// first message), and pauses receiving while Postgres is unavailable so queued messages do not
/// burn their deliveries. On `shutdown.stop` it stops receiving and lets in-flight messages
/// finish; `shutdown.abort` makes them release their work. With `drain`, it returns once
/// `upstream_done` has fired (the relay is finished, or not ours), nothing is in flight and the
/// queue is empty.
pub async fn run(
    consumer: Consumer,
    shutdown: Shutdown,
    drain: bool,
    upstream_done: CancellationToken,
) -> anyhow::Result<()> {
    let cfg = Arc::clone(&consumer.cfg);
    tracing::info!(
        queue = consumer.queue.name(),
        batch_size = cfg.batch_size,
        concurrency = cfg.concurrency,
        drain,
        "queue consumer started"
    );
    let concurrency = cfg.concurrency.max(1) as usize;
    let slots = Arc::new(Semaphore::new(concurrency));
    let tracker = TaskTracker::new();
    let db_down = Arc::new(AtomicBool::new(false));
    let mut idle = cfg.idle_backoff_min;
    let mut storage_backoff = Duration::from_millis(200);
    let mut window = (Instant::now(), 0usize);

    let result = loop {
        if shutdown.stop.is_cancelled() {
            break Ok(());
        }
        if db_down.load(Ordering::Relaxed) {
            wait_for_database(&consumer.db, &shutdown.stop).await;
            db_down.store(false, Ordering::Relaxed);
            continue;
        }
        let first = tokio::select! {
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break Ok(()),
            },
            () = shutdown.stop.cancelled() => break Ok(()),
        };
        let free = (slots.available_permits() + 1)
            .min(usize::from(cfg.batch_size))
            .max(1);
        let messages = match consumer
            .queue
            .receive(u8::try_from(free).unwrap_or(32), cfg.visibility_timeout)
            .await
        {
            Ok(m) => {
                storage_backoff = Duration::from_millis(200);
                m
            }
            Err(e) if e.is_transient() => {
                drop(first);
                tracing::warn!(error = %e, "receive failed; backing off");
                sleep_or_stop(&shutdown.stop, storage_backoff).await;
                storage_backoff = (storage_backoff * 2).min(Duration::from_secs(10));
                continue;
            }
            Err(e) => break Err(anyhow::Error::new(e).context("receiving queue messages")),
        };
        if messages.is_empty() {
            drop(first);
            if drain
                && upstream_done.is_cancelled()
                && slots.available_permits() == concurrency
                && consumer
                    .queue
                    .approximate_length()
                    .await
                    .is_ok_and(|n| n == 0)
            {
                tracing::info!("queue drained: nothing in flight and nothing queued");
                break Ok(());
            }
            sleep_or_stop(&shutdown.stop, idle).await;
            idle = (idle * 2).min(cfg.idle_backoff_max);
            continue;
        }
        idle = cfg.idle_backoff_min;
        let mut first = Some(first);
        for msg in messages {
            let permit = match first.take() {
                Some(p) => p,
                // `free` counted these permits and only this loop takes them.
                None => match Arc::clone(&slots).acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let consumer = consumer.clone();
            let abort = shutdown.abort.clone();
            let db_down = Arc::clone(&db_down);
            window.1 += 1;
            tracker.spawn(async move {
                let _permit = permit;
                let message_id = msg.id.clone();
                match consumer.process_one(msg, &abort).await {
                    Ok(Outcome::Retry {
                        db_unavailable: true,
                        ..
                    }) => db_down.store(true, Ordering::Relaxed),
                    Ok(_) => {}
                    Err(e) => {
                        if is_db_unavailable(&e) {
                            db_down.store(true, Ordering::Relaxed);
                        }
                        tracing::error!(%message_id, error = format!("{e:#}"),
                            "processing failed; the message will reappear");
                    }
                }
            });
        }
        if window.0.elapsed() >= Duration::from_secs(60) {
            tracing::info!(
                messages = window.1,
                per_second = window.1 as f64 / window.0.elapsed().as_secs_f64(),
                "consumer throughput"
            );
            window = (Instant::now(), 0);
        }
    };
    tracker.close();
    tracker.wait().await;
    tracing::info!("queue consumer stopped");
    result
}

/// Blocks until `SELECT 1` succeeds (or shutdown), with a growing pause between tries.
async fn wait_for_database(db: &PgPool, stop: &CancellationToken) {
    let mut delay = Duration::from_millis(200);
    loop {
        if stop.is_cancelled() || sqlx::query("SELECT 1").execute(db).await.is_ok() {
            return;
        }
        tracing::warn!("database unavailable; consumer paused");
        sleep_or_stop(stop, delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

async fn sleep_or_stop(stop: &CancellationToken, d: Duration) {
    tokio::select! {
        () = stop.cancelled() => {}
        () = tokio::time::sleep(d) => {}
    }
}

enum Work {
    Completed(u64),
    Unparsable(String, String),
    Lost,
}

fn current(receipt: &Mutex<String>) -> String {
    receipt
        .lock()
        .map(|r| r.clone())
        .unwrap_or_else(|p| p.into_inner().clone())
}

/// Renews the message's visibility and the task's lease at a third of the shorter of the two,
/// until `done`. Cancels `lost` when the task lease is no longer ours.
async fn keep_alive(
    consumer: Consumer,
    msg_id: String,
    receipt: Arc<Mutex<String>>,
    task_id: Uuid,
    attempt: i32,
    done: CancellationToken,
    lost: CancellationToken,
) {
    let cfg = &consumer.cfg;
    let every = (cfg.visibility_timeout.min(cfg.task_lease) / 3).max(Duration::from_millis(200));
    loop {
        tokio::select! {
            () = done.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let old = current(&receipt);
        match consumer
            .queue
            .update_visibility(&msg_id, &old, cfg.visibility_timeout)
            .await
        {
            Ok(new) => {
                if let Ok(mut r) = receipt.lock() {
                    *r = new;
                }
            }
            Err(e) => {
                tracing::warn!(%task_id, error = %e, "could not extend the message's visibility")
            }
        }
        match db::tasks::renew_lease(&consumer.db, task_id, attempt, cfg.task_lease).await {
            Ok(true) => {}
            Ok(false) => {
                lost.cancel();
                return;
            }
            // Postgres briefly away: the lease has slack (we renew at a third of it).
            Err(e) => tracing::warn!(%task_id, error = %e, "could not renew the task lease"),
        }
    }
}

/// Runs the isolated parse, turning its row events into COPY lines. The parser calls back
/// synchronously, so lines are gathered into chunks and handed through a channel to a writer
/// running alongside (in this task) that feeds COPY while the parse goes on. A failed COPY drops
/// the receiver, which makes the next callback fail and stops the parse child.
async fn stream_rows(
    isolation: &Isolation,
    path: &Path,
    format: FileFormat,
    source_file_id: Uuid,
    copy: &mut sqlx::postgres::PgCopyIn<&mut sqlx::PgConnection>,
) -> anyhow::Result<Result<ParseSummary, ParseFailure>> {
    const CHUNK: usize = 256 * 1024;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    let on_event = move |event: ParseEvent| -> anyhow::Result<()> {
        let flush = match event {
            ParseEvent::Row {
                sheet,
                index,
                values,
            } => {
                db::rows::copy_line(&mut buf, source_file_id, sheet, index, &values);
                buf.len() >= CHUNK
            }
            // Rows come before their sheet's end: nothing is left behind after the last one.
            ParseEvent::SheetEnd(_) => !buf.is_empty(),
            ParseEvent::SheetStart { .. } => false,
        };
        if flush {
            let full = std::mem::replace(&mut buf, Vec::with_capacity(CHUNK));
            tx.send(full)
                .map_err(|_| anyhow::anyhow!("the COPY into parsed_rows ended early"))?;
        }
        Ok(())
    };
    let parse = isolate::parse_isolated(isolation, path, format, on_event);
    let write = async move {
        let mut rx = rx;
        while let Some(chunk) = rx.recv().await {
            copy.send(chunk).await?;
        }
        Ok::<_, sqlx::Error>(())
    };
    let (parsed, written) = tokio::join!(parse, write);
    written.context("streaming rows into COPY")?;
    parsed
}

/// The task's result summary, as the api returns it.
fn result_json(summary: &ParseSummary) -> serde_json::Value {
    serde_json::json!({
        "rows_total": summary.rows_total,
        "sheets": summary.sheets.iter().map(|s| serde_json::json!({
            "index": s.index,
            "name": s.name,
            "rows": s.rows,
            "columns": s.columns,
        })).collect::<Vec<_>>(),
    })
}

fn storage_context(e: StorageError, what: &'static str) -> anyhow::Error {
    anyhow::Error::new(e).context(what)
}

fn is_db_unavailable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<sqlx::Error>()
            .is_some_and(db::is_unavailable)
    })
}

/// A downloaded blob, deleted when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(dir: Option<&Path>, task_id: Uuid) -> Self {
        let dir = dir
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        Self(dir.join(format!("sheetrelay-{task_id}-{}", Uuid::new_v4().simple())))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
