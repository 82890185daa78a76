//! Recording an upload whose bytes are in Blob Storage: its source file (with its idempotency
//! key and template version), its `PENDING` task and the outbox message that will announce it,
//! in one statement (`db::uploads`), in the transaction that checks the tenant's storage quota
//! ([`super::limits`]). Either all three rows exist or none: if the statement fails or the file
//! does not fit the quota the blob is deleted (best effort; an orphaned blob is harmless, a task
//! without a file is not).
//!
//! The multipart upload calls [`record`] once its blob is written; another way of uploading
//! (resumable uploads, whose blob is written over several requests) calls it the same way, so
//! every upload is recorded, replayed, logged and counted alike.

use chrono::{DateTime, Utc};
use shared::db;
use shared::db::source_files::{NewSourceFile, SourceFile, TemplateRef};
use shared::db::tasks::Task;
use shared::db::uploads::{NewUpload, Recorded};
use shared::domain::{FileFormat, OnInvalid};
use uuid::Uuid;

use super::limits;
use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode};
use crate::metered_field::Streamed;
use crate::state::AppState;

const IDEMPOTENCY_KEY_CONSTRAINT: &str = "source_files_tenant_idempotency_key";

/// The template version an upload is checked against, with its policy.
pub(crate) struct ChosenTemplate {
    pub name: String,
    pub version: i32,
    pub on_invalid: OnInvalid,
}

/// A file whose bytes are in the blob `blob_name`, written for the source file `id`.
pub(crate) struct StoredFile<'a> {
    pub id: Uuid,
    pub blob_name: &'a str,
    pub file_name: &'a str,
    pub format: FileFormat,
    pub streamed: &'a Streamed,
    pub idempotency_key: Option<&'a str>,
    pub template: Option<&'a ChosenTemplate>,
    /// The upload's metadata (a JSON object already checked).
    pub metadata: Option<&'a serde_json::Value>,
    /// The import session it is uploaded with, and its end user.
    pub session: Option<(Uuid, &'a serde_json::Value)>,
    /// The tenant's storage quota, as [`limits::admit`] found it when the upload began.
    pub quota_bytes: u64,
    /// The resumable upload these bytes came through, marked recorded in the same transaction
    /// (kept for answers until the given time).
    pub resumable: Option<(Uuid, DateTime<Utc>)>,
}

/// The blob name of a new source file: its upload date, then its id.
pub(crate) fn blob_name(source_file_id: Uuid) -> String {
    format!("{}/{source_file_id}", Utc::now().format("%Y/%m/%d"))
}

/// Records `stored` for `principal`: the file and its task as stored. When the rows cannot be
/// written the blob is deleted; when a concurrent retry with the same key won the race, the
/// answer is that retry's (or a `409` for other bytes).
pub(crate) async fn record(
    state: &AppState,
    principal: &Principal,
    stored: StoredFile<'_>,
) -> Result<(SourceFile, Task), ApiError> {
    let StoredFile {
        id,
        blob_name,
        file_name,
        format,
        streamed,
        idempotency_key,
        template,
        metadata,
        session,
        quota_bytes: quota,
        resumable,
    } = stored;
    let new_file = NewSourceFile {
        id,
        tenant_id: &principal.tenant_id,
        uploaded_by: &principal.subject,
        file_name,
        content_type: format.content_type(),
        format,
        size_bytes: i64::try_from(streamed.size).unwrap_or(i64::MAX),
        sha256: &streamed.sha256,
        blob_name,
        idempotency_key,
        template: template.map(|t| TemplateRef {
            name: &t.name,
            version: t.version,
            on_invalid: t.on_invalid.as_str(),
        }),
        metadata,
        session,
        origin: None,
    };
    // The upload's trace continues through the relay and the consumer (see
    // shared::telemetry::propagation).
    let traceparent = shared::telemetry::propagation::current_traceparent();
    let upload = NewUpload {
        file: new_file,
        task_id: Uuid::now_v7(),
        message_id: Uuid::now_v7(),
        inline: streamed.small.as_deref(),
        traceparent: traceparent.as_deref(),
    };
    // One statement checks the quota and writes the rows (see db::uploads); a resumable upload
    // is also marked recorded, in the same transaction.
    let quota_bytes = i64::try_from(quota).unwrap_or(i64::MAX);
    let recorded = async {
        let Some((upload_id, keep_until)) = resumable else {
            let mut conn = state.db.acquire().await?;
            return db::uploads::insert(&mut conn, &upload, quota_bytes).await;
        };
        let mut tx = state.db.begin().await?;
        let recorded = db::uploads::insert(&mut tx, &upload, quota_bytes).await?;
        if matches!(recorded, Recorded::Stored(..)) {
            db::resumable_uploads::finish(&mut *tx, upload_id, id, keep_until).await?;
            tx.commit().await?;
        }
        Ok(recorded)
    }
    .await;
    let err = match recorded {
        Ok(Recorded::OverQuota { used }) => {
            discard_blob(state, blob_name).await;
            return Err(limits::quota_exceeded(quota, used));
        }
        Ok(Recorded::Stored(file, task)) => {
            tracing::info!(source_file_id = %file.id, task_id = %task.id, format = %format,
                           size_bytes = streamed.size, tenant_id = %principal.tenant_id,
                           "upload accepted");
            metrics::counter!("sheetrelay_uploads_total", "format" => format.as_str()).increment(1);
            metrics::counter!("sheetrelay_upload_bytes_total").increment(streamed.size);
            return Ok((file, task));
        }
        Err(err) => err,
    };
    discard_blob(state, blob_name).await;
    // A concurrent retry with the same key won the race: answer as it was answered.
    if is_constraint(&err, IDEMPOTENCY_KEY_CONSTRAINT) {
        if let Some(key) = idempotency_key {
            if let Some(existing) =
                db::source_files::find_by_idempotency_key(&state.db, &principal.tenant_id, key)
                    .await?
            {
                return replay(state, existing, streamed).await;
            }
        }
    }
    Err(ApiError::NotRecorded(err))
}

/// The original answer to a request that reused `file`'s key, if it sent the same bytes.
pub(crate) async fn replay(
    state: &AppState,
    file: SourceFile,
    streamed: &Streamed,
) -> Result<(SourceFile, Task), ApiError> {
    let same = u64::try_from(file.size_bytes).ok() == Some(streamed.size)
        && file.sha256 == streamed.sha256;
    if !same {
        return Err(ApiError::Conflict {
            code: ApiErrorCode::IdempotencyKeyReused,
            message: "this Idempotency-Key was used for a different file".into(),
        });
    }
    let task = db::tasks::find_by_source_file(&state.db, file.id)
        .await?
        .ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!("source file {} has no task", file.id))
        })?;
    Ok((file, task))
}

/// Deletes the blob of an upload that will not be recorded; a failure is only logged (an
/// orphaned blob is harmless).
pub(crate) async fn discard_blob(state: &AppState, blob_name: &str) {
    if let Err(e) = state.blobs.delete(blob_name).await {
        tracing::warn!(blob_name, error = %e, "could not delete the blob of a refused upload");
    }
}

fn is_constraint(err: &sqlx::Error, name: &str) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.constraint() == Some(name))
}
