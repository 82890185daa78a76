//! The work on a started task, as steps: fetch the file ([`Consumer::fetch`]: its row, its
//! format, its bytes), parse it into the result transaction ([`Consumer::parse_into`]: rows
//! through `COPY`), and commit the result ([`Consumer::commit`]: sheets, error report, the task
//! `COMPLETED`) or the rejection ([`Consumer::reject`]). Each step either hands the next what it
//! needs or ends the work with an [`Ending`].

use std::ops::ControlFlow::{self, Break, Continue};
use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;
use shared::db;
use shared::domain::{FileFormat, OnInvalid, ParseTaskPayload, TaskErrorCode};
use shared::storage::StorageError;
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use tempfile::TempPath;
use tokio::io::AsyncWriteExt as _;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::parse::{LayoutOverride, ParseSummary, TemplateJob};

use super::finish::Ending;
use super::progress::Progress;
use super::settle::storage_context;
use super::store::{stream_rows, task_result, FileToParse, Report};
use super::Consumer;

/// A task's file, downloaded.
pub(super) struct Fetched {
    pub source_file_id: Uuid,
    /// Whose file it is: a remembered mapping is the tenant's own.
    pub tenant_id: String,
    pub format: FileFormat,
    /// The application's context of the upload, for validation hooks.
    pub metadata: Option<serde_json::Value>,
    pub end_user: Option<serde_json::Value>,
    /// Deleted when dropped.
    pub download: TempPath,
    /// When the fetch began, and how long the download took: for the completion log.
    started: Instant,
    downloaded: std::time::Duration,
}

/// The file's template, as stored and as the parse child takes it.
pub(super) struct Template {
    pub stored: Option<db::templates::FileTemplate>,
    pub job: Option<TemplateJob>,
}

/// What parsing into the transaction came to.
pub(super) enum Parsed {
    /// The rows are in the (uncommitted) transaction.
    Rows(Transaction<'static, Postgres>, ParseSummary, Report),
    /// The file's template refuses it whole: its valid rows are in the transaction, kept
    /// unserved for the corrections that may complete it.
    Rejected(Transaction<'static, Postgres>, ParseSummary, Report),
    /// The mapping needs a person: no rows kept.
    NeedsReview(Option<shared::domain::review::Review>),
}

impl Consumer {
    /// Download (unless the message carries the file), parse and store. `Err` means
    /// "transient, try again later".
    pub(super) async fn work(
        &self,
        task_id: Uuid,
        attempt: i32,
        payload: &ParseTaskPayload,
        layout: Option<&LayoutOverride>,
        progress: &Progress,
    ) -> anyhow::Result<Ending> {
        let fetched = match self.fetch(task_id, payload, progress).await? {
            Continue(f) => f,
            Break(ending) => return Ok(ending),
        };
        let template = self.template(task_id, &fetched).await?;
        let parsed = if template.job.as_ref().is_some_and(|j| j.hooked) {
            self.parse_hooked(task_id, &fetched, &template, layout, progress)
                .await?
        } else {
            self.parse_into(&fetched, &template, layout, progress)
                .await?
        };
        match parsed {
            Continue(Parsed::NeedsReview(review)) => {
                self.request_review(task_id, attempt, review).await
            }
            Continue(Parsed::Rows(tx, summary, mut report)) => {
                let done = (tx, &summary, &mut report, &template);
                self.commit(task_id, attempt, &fetched, done).await
            }
            Continue(Parsed::Rejected(tx, summary, mut report)) => {
                let id = fetched.source_file_id;
                let stored = template.stored.as_ref();
                self.reject(task_id, attempt, id, (tx, &summary, stored, &mut report))
                    .await
            }
            Break(ending) => Ok(ending),
        }
    }

    /// The task's file: its row, its format and its bytes (from the message when it carries them,
    /// else from the blob store), in a temporary file. A missing row or blob, or an unknown
    /// format, ends the work: the file cannot be parsed.
    async fn fetch(
        &self,
        task_id: Uuid,
        payload: &ParseTaskPayload,
        progress: &Progress,
    ) -> anyhow::Result<ControlFlow<Ending, Fetched>> {
        let source_file_id = payload.source_file_id;
        let Some(file) = db::source_files::find(&self.db, source_file_id)
            .await
            .context("reading the source file")?
        else {
            let message = format!("source file {source_file_id} does not exist");
            return Ok(Break(Ending::Unparsable(
                TaskErrorCode::SourceMissing,
                message,
            )));
        };
        let format = file.format;
        progress.set_size(u64::try_from(file.size_bytes).unwrap_or(0));
        let started = Instant::now();
        let download = download_file(self.cfg.download_dir.as_deref(), task_id)
            .context("creating the download file")?;
        let mut out = tokio::fs::File::create(&download)
            .await
            .context("opening the download file")?;
        match self.download(payload, &file, &mut out).await {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {
                let message = format!(
                    "the uploaded file {} is missing from storage",
                    file.blob_name
                );
                return Ok(Break(Ending::Unparsable(
                    TaskErrorCode::SourceMissing,
                    message,
                )));
            }
            Err(e) => return Err(storage_context(e, "downloading the uploaded file")),
        }
        Ok(Continue(Fetched {
            source_file_id,
            tenant_id: file.tenant_id.clone(),
            format,
            metadata: file.metadata.clone(),
            end_user: file.end_user.clone(),
            download,
            started,
            downloaded: started.elapsed(),
        }))
    }

    /// Writes the file's bytes to `out`: those the message carries, else the blob's.
    async fn download(
        &self,
        payload: &ParseTaskPayload,
        file: &db::source_files::SourceFile,
        out: &mut tokio::fs::File,
    ) -> Result<(), StorageError> {
        match payload.inline_content(file.size_bytes, &file.sha256) {
            Some(bytes) => async {
                out.write_all(&bytes).await?;
                out.flush().await
            }
            .await
            .map_err(StorageError::Io),
            None => self
                .blobs
                .download_to(&file.blob_name, out)
                .instrument(tracing::info_span!(
                    "download",
                    size_bytes = file.size_bytes
                ))
                .await
                .map(drop),
        }
    }

    /// The upload's template, if it has one, with the mappings its review gave
    /// ([`Consumer::template_job`]).
    async fn template(&self, task_id: Uuid, fetched: &Fetched) -> anyhow::Result<Template> {
        let stored = db::templates::of_file(&self.db, fetched.source_file_id)
            .await
            .context("reading the upload's template")?;
        let job = match &stored {
            Some(t) => Some(self.template_job(task_id, &fetched.tenant_id, t).await?),
            None => None,
        };
        Ok(Template { stored, job })
    }

    /// Parses the file in the isolated child, streaming its rows into `COPY` in a new
    /// transaction. A file that cannot be parsed ends the work; so does any other failure, as
    /// an `Err` (the transaction is rolled back either way).
    async fn parse_into(
        &self,
        fetched: &Fetched,
        template: &Template,
        layout: Option<&LayoutOverride>,
        progress: &Progress,
    ) -> anyhow::Result<ControlFlow<Ending, Parsed>> {
        let mut tx = self.begin_result(fetched.source_file_id).await?;
        let mut report = Report::default();
        let mut copy = db::rows::copy_in(&mut tx).await.context("starting COPY")?;
        let file = FileToParse {
            path: &fetched.download,
            format: fetched.format,
            template: template.job.as_ref(),
            layout,
        };
        let id = fetched.source_file_id;
        let parsed = stream_rows(&self.isolation, &file, id, &mut copy, progress, &mut report)
            .instrument(tracing::info_span!(
                "parse",
                format = fetched.format.as_str()
            ))
            .await;
        match parsed {
            Ok(Ok(_)) if report.review.is_some() => {
                let _ = copy.abort("the mapping needs a review").await;
                Ok(Continue(Parsed::NeedsReview(report.review.take())))
            }
            Ok(Ok(summary)) if rejects_file(template.job.as_ref(), &summary) => {
                copy.finish().await.context("finishing COPY")?;
                Ok(Continue(Parsed::Rejected(tx, summary, report)))
            }
            Ok(Ok(summary)) => {
                copy.finish().await.context("finishing COPY")?;
                Ok(Continue(Parsed::Rows(tx, summary, report)))
            }
            Ok(Err(failure)) => {
                let _ = copy.abort("the file could not be parsed").await;
                Ok(Break(Ending::Unparsable(failure.code, failure.message)))
            }
            Err(e) => {
                let _ = copy.abort("the parse failed").await;
                Err(e)
            }
        }
    }

    /// The transaction a file's result is written in, its month's row store partition there.
    pub(super) async fn begin_result(
        &self,
        source_file_id: Uuid,
    ) -> anyhow::Result<Transaction<'static, Postgres>> {
        // The maintenance adds months ahead; this covers a worker run without it.
        self.months
            .ensure(&self.db, source_file_id)
            .await
            .context("adding the row store's partitions for the file's month")?;
        self.db
            .begin()
            .await
            .context("beginning the result transaction")
    }

    /// Stores the sheets and the error report beside the rows and completes the task, all in
    /// the one transaction: `Lost` (nothing kept) when another consumer has the task by now.
    async fn commit(
        &self,
        task_id: Uuid,
        attempt: i32,
        fetched: &Fetched,
        (mut tx, summary, report, template): (
            Transaction<'static, Postgres>,
            &ParseSummary,
            &mut Report,
            &Template,
        ),
    ) -> anyhow::Result<Ending> {
        let source_file_id = fetched.source_file_id;
        store_beside_rows(&mut tx, source_file_id, summary, report).await?;
        let result = task_result(summary, template.stored.as_ref());
        if !db::tasks::complete(&mut *tx, task_id, attempt, &result)
            .await
            .context("completing the task")?
        {
            // Our lease ran out and another consumer took the task: keep nothing.
            tx.rollback().await.context("rolling back a lost task")?;
            return Ok(Ending::Lost);
        }
        record_usage(&mut tx, source_file_id, summary).await?;
        tx.commit().await.context("committing the parse result")?;
        tracing::info!(%task_id, attempt, rows = summary.rows_total, sheets = summary.sheets.len(),
            download_ms = fetched.downloaded.as_millis() as u64,
            total_ms = fetched.started.elapsed().as_millis() as u64, "task completed");
        Ok(Ending::Completed(summary.rows_total))
    }

    /// A file its template rejects as a whole: the task fails with `validation_failed` and its
    /// counts, the report is stored, no rows are; all in one transaction.
    async fn reject(
        &self,
        task_id: Uuid,
        attempt: i32,
        source_file_id: Uuid,
        (mut tx, summary, template, report): (
            Transaction<'static, Postgres>,
            &ParseSummary,
            Option<&db::templates::FileTemplate>,
            &mut Report,
        ),
    ) -> anyhow::Result<Ending> {
        let errors = summary.validation.as_ref().map_or(0, |v| v.errors_total);
        let message = format!(
            "the file has {errors} error(s) against its template and on_invalid is reject_file: \
             see the error report"
        );
        let result = task_result(summary, template);
        store_beside_rows(&mut tx, source_file_id, summary, report).await?;
        let code = TaskErrorCode::ValidationFailed;
        if !db::tasks::fail(
            &mut *tx,
            task_id,
            Some(attempt),
            code,
            &message,
            Some(&result),
        )
        .await
        .context("failing the rejected task")?
        {
            tx.rollback().await.context("rolling back a lost task")?;
            return Ok(Ending::Lost);
        }
        record_usage(&mut tx, source_file_id, summary).await?;
        tx.commit().await.context("committing the rejection")?;
        tracing::warn!(%task_id, attempt, code = %code, errors, "task failed: rejected by its template");
        Ok(Ending::Rejected(code))
    }
}

/// Stores, in the transaction that holds the rows, the sheets, the error report and the key
/// index (their usage is recorded by [`record_usage`], once the task is final).
async fn store_beside_rows(
    tx: &mut Transaction<'static, Postgres>,
    source_file_id: Uuid,
    summary: &ParseSummary,
    report: &mut Report,
) -> anyhow::Result<()> {
    for sheet in &summary.sheets {
        let row = db::rows::Sheet {
            sheet_index: i32::try_from(sheet.index).unwrap_or(i32::MAX),
            name: sheet.name.clone(),
            hidden: sheet.hidden,
            row_count: i64::try_from(sheet.rows).unwrap_or(i64::MAX),
            columns: Json(sheet.columns.clone()),
            column_types: Json(sheet.column_types.clone()),
        };
        db::rows::insert_sheet(&mut **tx, source_file_id, &row)
            .await
            .context("storing a parsed sheet")?;
    }
    db::validation::insert(tx, source_file_id, &report.errors, &report.rejected)
        .await
        .context("storing the error report")?;
    std::mem::take(&mut report.keys)
        .store(tx, source_file_id)
        .await?;
    Ok(())
}

/// Records what the file's rows take, last before the commit: it locks a shard of the tenant's
/// row sums until then, which the tenant's other files finishing at the same moment may want.
/// Before the task's update and its triggers, the lock was held through them as well: with 8 of
/// one tenant's small files finishing at once, the insert into the sums took 0.67 ms a file in
/// the side by side bench (`tests/bench/side_by_side/uploads.sh`, `STATEMENTS=1`), 0.17 to
/// 0.27 ms after.
async fn record_usage(
    tx: &mut Transaction<'static, Postgres>,
    source_file_id: Uuid,
    summary: &ParseSummary,
) -> anyhow::Result<()> {
    let rows = i64::try_from(summary.rows_total).unwrap_or(i64::MAX);
    db::row_store::record_usage(&mut **tx, source_file_id, rows)
        .await
        .context("recording the rows' usage")
}

/// Whether a parsed file is refused whole: its template says `reject_file` and it has errors.
pub(super) fn rejects_file(job: Option<&TemplateJob>, summary: &ParseSummary) -> bool {
    job.is_some_and(|j| j.on_invalid == OnInvalid::RejectFile)
        && summary
            .validation
            .as_ref()
            .is_some_and(|v| v.errors_total > 0)
}

/// A new, empty file for a task's download, named for the task, in `dir` (else the system's
/// temporary directory); deleted when its path is dropped.
fn download_file(dir: Option<&Path>, task_id: Uuid) -> std::io::Result<TempPath> {
    let prefix = format!("sheetrelay-{task_id}-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    let file = match dir {
        Some(dir) => builder.tempfile_in(dir),
        None => builder.tempfile(),
    }?;
    Ok(file.into_temp_path())
}
