//! Processing one message: decode, take the task, download, parse and store, or poison.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use shared::db;
use shared::domain::{
    Envelope, FileFormat, OnInvalid, ParseTaskPayload, TaskErrorCode, TaskStatus,
};
use shared::storage::{ReceivedMessage, StorageError};
use shared::telemetry::propagation;
use tokio::io::AsyncWriteExt as _;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::parse::{ParseFailure, ParseSummary, TemplateJob};
use crate::retry::is_db_unavailable;

use super::keepalive::{current, keep_alive};
use super::progress::{self, Progress};
use super::settle::{is_storage_unavailable, lease_left, storage_context};
use super::store::{result_json, stream_rows, FileToParse, Report, TempFile};
use super::{Consumer, Outcome};

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

    /// [`Consumer::process_one`] for a well-formed parse-task message.
    async fn process_task(
        &self,
        msg: ReceivedMessage,
        payload: ParseTaskPayload,
        abort: &CancellationToken,
    ) -> anyhow::Result<Outcome> {
        let task_id = payload.task_id;
        let task = match db::tasks::find(&self.db, task_id).await {
            Ok(Some(t)) => t,
            Ok(None) => {
                // Its file was deleted (with the task and outbox row) after the message was
                // sent: nothing is left to do, and nothing for an operator to look at. A forged
                // id lands here too and changes nothing either.
                tracing::info!(%task_id, "the task no longer exists (its file was deleted); message deleted");
                self.delete(&msg.id, &msg.pop_receipt).await;
                return Ok(Outcome::Orphaned { task_id });
            }
            Err(e) => return self.db_failed(&msg, task_id, None, e).await,
        };
        // The task row, not the message, says which file to parse: a message naming another
        // file is forged or corrupt, and must not touch this task or that file.
        if payload.source_file_id != task.source_file_id {
            let reason = format!(
                "the message names source file {} but task {task_id} belongs to {}",
                payload.source_file_id, task.source_file_id
            );
            return self
                .poison(&msg, None, TaskErrorCode::InvalidMessage, &reason)
                .await;
        }
        // A task waiting in review is sent again by its answer's own message.
        if task.status.is_final() || task.status == TaskStatus::NeedsReview {
            tracing::info!(%task_id, status = ?task.status, "task already final or in review; duplicate delivery deleted");
            self.delete(&msg.id, &msg.pop_receipt).await;
            return Ok(Outcome::Duplicate { task_id });
        }
        // Held by a consumer whose lease is running (another copy of the message is being
        // processed, or this one reappeared while its holder works): leave it until that lease
        // runs out. Checked before the delivery count, so a live holder's task is never
        // poisoned; if the holder dies, the task is free by the time the message is back.
        if let Some(left) = lease_left(&task) {
            return Ok(self.busy(&msg, task_id, left).await);
        }
        if msg.dequeue_count > self.cfg.max_dequeue_count {
            let reason = format!(
                "the task's message was delivered {} times without success (limit {})",
                msg.dequeue_count, self.cfg.max_dequeue_count
            );
            return self
                .poison(
                    &msg,
                    Some(task_id),
                    TaskErrorCode::RetriesExhausted,
                    &reason,
                )
                .await;
        }
        let dequeue_count = i32::try_from(msg.dequeue_count).unwrap_or(i32::MAX);
        let started = match db::tasks::start(&self.db, task_id, self.cfg.task_lease, dequeue_count)
            .await
        {
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
        if task.status == TaskStatus::Running {
            // It was RUNNING when we read it and we still got it: its holder's lease had expired.
            crate::metrics::task_rescued();
        }
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

        let progress = Arc::new(Progress::default());
        let reporter = (!self.cfg.progress_interval.is_zero()).then(|| {
            tokio::spawn(progress::report(
                self.cfg.progress_interval,
                self.db.clone(),
                task_id,
                attempt,
                Arc::clone(&progress),
                done.clone(),
            ))
        });

        let work = self.work(task_id, attempt, &payload, &progress);
        let result = tokio::select! {
            r = work => Some(r),
            () = lost.cancelled() => None,
            () = abort.cancelled() => None,
        };
        done.cancel();
        if let Some(reporter) = reporter {
            let _ = reporter.await;
        }
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
            Ok(Work::InReview) => {
                self.delete(&msg.id, &receipt).await;
                Ok(Outcome::InReview { task_id })
            }
            Ok(Work::Rejected(code)) => {
                self.delete(&msg.id, &receipt).await;
                Ok(Outcome::Failed { task_id, code })
            }
            Ok(Work::Unparsable(code, message)) => {
                match db::tasks::fail(
                    &self.db,
                    task_id,
                    Some(attempt),
                    code.as_str(),
                    &message,
                    None,
                )
                .await
                {
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
                let error = format!("{e:#}");
                tracing::warn!(%task_id, attempt, error, "transient failure; the message will be retried");
                if let Err(e) =
                    db::tasks::record_transient_error(&self.db, task_id, attempt, &error).await
                {
                    tracing::warn!(%task_id, error = %e, "could not record the failed attempt");
                }
                if db_unavailable || is_storage_unavailable(&e) {
                    let delay = self.outage_delay(attempt);
                    self.requeue(&msg, &receipt, task_id, Some(attempt), delay)
                        .await;
                } else {
                    let delay = self.retry_delay(msg.dequeue_count);
                    self.release(&msg.id, &receipt, task_id, attempt, delay)
                        .await;
                }
                Ok(Outcome::Retry {
                    task_id,
                    db_unavailable,
                })
            }
        }
    }

    /// Download (unless the message carries the file), parse and store. `Err` means
    /// "transient, try again later".
    async fn work(
        &self,
        task_id: Uuid,
        attempt: i32,
        payload: &ParseTaskPayload,
        progress: &Progress,
    ) -> anyhow::Result<Work> {
        let source_file_id = payload.source_file_id;
        let Some(file) = db::source_files::find(&self.db, source_file_id)
            .await
            .context("reading the source file")?
        else {
            return Ok(Work::Unparsable(
                TaskErrorCode::SourceMissing,
                format!("source file {source_file_id} does not exist"),
            ));
        };
        let Some(format) = FileFormat::parse(&file.format) else {
            return Ok(Work::Unparsable(
                TaskErrorCode::UnsupportedFormat,
                format!("unknown format {:?}", file.format),
            ));
        };

        progress.set_size(u64::try_from(file.size_bytes).unwrap_or(0));
        let t0 = Instant::now();
        let download = TempFile::new(self.cfg.download_dir.as_deref(), task_id);
        let mut out = tokio::fs::File::create(download.path())
            .await
            .context("creating the download file")?;
        let fetched = match payload.inline_content(file.size_bytes, &file.sha256) {
            Some(bytes) => async {
                out.write_all(&bytes).await?;
                out.flush().await
            }
            .await
            .map_err(StorageError::Io),
            None => self
                .blobs
                .download_to(&file.blob_name, &mut out)
                .instrument(tracing::info_span!(
                    "download",
                    size_bytes = file.size_bytes
                ))
                .await
                .map(drop),
        };
        match fetched {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {
                return Ok(Work::Unparsable(
                    TaskErrorCode::SourceMissing,
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

        let template = db::templates::of_file(&self.db, source_file_id)
            .await
            .context("reading the upload's template")?;
        let job = match &template {
            Some(t) => Some(self.template_job(task_id, &file.tenant_id, t).await?),
            None => None,
        };

        let mut tx = self
            .db
            .begin()
            .await
            .context("beginning the result transaction")?;
        let mut report = Report::default();
        let parsed = {
            let mut copy = db::rows::copy_in(&mut tx).await.context("starting COPY")?;
            let file = FileToParse {
                path: download.path(),
                format,
                template: job.as_ref(),
            };
            let parsed = stream_rows(
                &self.isolation,
                &file,
                source_file_id,
                &mut copy,
                progress,
                &mut report,
            )
            .instrument(tracing::info_span!("parse", format = format.as_str()))
            .await;
            match parsed {
                Ok(Ok(_)) if report.review.is_some() => {
                    let _ = copy.abort("the mapping needs a review").await;
                    drop(tx);
                    let review = report.review.take();
                    return self.request_review(task_id, attempt, review).await;
                }
                Ok(Ok(summary)) if rejects_file(job.as_ref(), &summary) => {
                    let _ = copy.abort("the file was rejected by its template").await;
                    drop(tx);
                    return self
                        .reject(
                            task_id,
                            attempt,
                            source_file_id,
                            &summary,
                            template.as_ref(),
                            &report,
                        )
                        .await;
                }
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
                return Ok(Work::Unparsable(code, message));
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
        db::validation::insert(&mut tx, source_file_id, &report.errors, &report.rejected)
            .await
            .context("storing the error report")?;
        let result = result_json(&summary, template.as_ref());
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

    /// A file its template rejects as a whole: the task fails with `validation_failed` and its
    /// counts, the report is stored, no rows are; all in one transaction.
    async fn reject(
        &self,
        task_id: Uuid,
        attempt: i32,
        source_file_id: Uuid,
        summary: &ParseSummary,
        template: Option<&db::templates::FileTemplate>,
        report: &Report,
    ) -> anyhow::Result<Work> {
        let errors = summary.validation.as_ref().map_or(0, |v| v.errors_total);
        let message = format!(
            "the file has {errors} error(s) against its template and on_invalid is reject_file: \
             see the error report"
        );
        let result = result_json(summary, template);
        let mut tx = self.db.begin().await.context("beginning the rejection")?;
        db::validation::insert(&mut tx, source_file_id, &report.errors, &report.rejected)
            .await
            .context("storing the error report")?;
        let code = TaskErrorCode::ValidationFailed;
        if !db::tasks::fail(
            &mut *tx,
            task_id,
            Some(attempt),
            code.as_str(),
            &message,
            Some(&result),
        )
        .await
        .context("failing the rejected task")?
        {
            tx.rollback().await.context("rolling back a lost task")?;
            return Ok(Work::Lost);
        }
        tx.commit().await.context("committing the rejection")?;
        tracing::warn!(%task_id, attempt, code = %code, errors, "task failed: rejected by its template");
        Ok(Work::Rejected(code))
    }
}

/// Whether a parsed file is refused whole: its template says `reject_file` and it has errors.
fn rejects_file(job: Option<&TemplateJob>, summary: &ParseSummary) -> bool {
    job.is_some_and(|j| j.on_invalid == OnInvalid::RejectFile)
        && summary
            .validation
            .as_ref()
            .is_some_and(|v| v.errors_total > 0)
}

pub(super) enum Work {
    Completed(u64),
    /// Stopped in NEEDS_REVIEW: only the message is left to delete.
    InReview,
    Unparsable(TaskErrorCode, String),
    /// Failed already, with its report: only the message is left to delete.
    Rejected(TaskErrorCode),
    Lost,
}
