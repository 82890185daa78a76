//! The end of a resumable upload: once every byte counted, its blocks are committed as the blob
//! and it is recorded exactly as a multipart upload is ([`record::record`]: source file, task and
//! outbox message in one transaction, with the tenant's quota checked there), and marked
//! recorded in that same transaction.
//!
//! The format is decided from the head kept while the bytes arrived; the size, SHA-256 and (for
//! a small file) the inline bytes are read back from the committed blob, since the bytes came
//! over many requests, perhaps to several api processes. A claim with a lease keeps two requests
//! (the last `PATCH` and a `GET`) from recording one upload twice. A failure before the commit
//! can be retried (a `GET`, or a `PATCH` of no bytes at the end); once the blob is committed, a
//! refusal (format, quota) or a failed recording ends the upload and nothing is kept.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use chrono::Utc;
use sha2::{Digest as _, Sha256};
use shared::db::resumable_uploads::{self, ResumableUpload};
use shared::db::source_files::SourceFile;
use shared::db::tasks::Task;
use shared::db::{self};
use shared::domain::{FileFormat, ParseTaskPayload};
use uuid::Uuid;

use super::{limits, record};
use crate::auth::Principal;
use crate::error::ApiError;
use crate::metered_field::Streamed;
use crate::state::AppState;

/// How long a request may take to record an upload before another may try.
const FINISH_LEASE: Duration = Duration::from_secs(600);

/// Where a complete upload stands after [`finish`].
pub(crate) enum Finished {
    Recorded(Box<(SourceFile, Task)>),
    /// Another request is recording it right now.
    InProgress,
}

/// Records the complete `upload` (or finds it recorded). See the module's comment.
pub(crate) async fn finish(
    state: &AppState,
    upload: &ResumableUpload,
) -> Result<Finished, ApiError> {
    if let Some(file_id) = upload.source_file_id {
        return recorded(state, &upload.tenant_id, file_id).await;
    }
    if !resumable_uploads::claim_finish(&state.db, upload.id, FINISH_LEASE).await? {
        return match resumable_uploads::find(&state.db, &upload.tenant_id, upload.id).await? {
            Some(ResumableUpload {
                source_file_id: Some(file_id),
                ..
            }) => recorded(state, &upload.tenant_id, file_id).await,
            _ => Ok(Finished::InProgress),
        };
    }
    match record_claimed(state, upload).await {
        Ok(recorded) => Ok(Finished::Recorded(Box::new(recorded))),
        Err(Outcome::Retry(e)) => {
            if let Err(release) = resumable_uploads::release_finish(&state.db, upload.id).await {
                tracing::warn!(upload_id = %upload.id, error = %release, "could not release a finish claim");
            }
            Err(e)
        }
        Err(Outcome::Ended(e)) => {
            end(state, upload).await;
            Err(e)
        }
    }
}

/// A failure of [`record_claimed`]: worth another try, or the end of the upload.
enum Outcome {
    Retry(ApiError),
    Ended(ApiError),
}

async fn record_claimed(
    state: &AppState,
    upload: &ResumableUpload,
) -> Result<(SourceFile, Task), Outcome> {
    // A request whose claim ran out may have recorded it after all: then only the mark is
    // missing, and recording again would clash with that file (and drop its blob).
    let earlier = db::source_files::find_for_tenant(&state.db, &upload.tenant_id, upload.id)
        .await
        .map_err(|e| Outcome::Retry(e.into()))?;
    if earlier.is_some() {
        let keep_until = Utc::now() + state.resumable.expiry;
        resumable_uploads::finish(&state.db, upload.id, upload.id, keep_until)
            .await
            .map_err(|e| Outcome::Retry(e.into()))?;
        return file_and_task(state, &upload.tenant_id, upload.id)
            .await
            .map_err(Outcome::Retry);
    }
    let format = FileFormat::detect(&upload.head, &upload.file_name).ok_or_else(|| {
        Outcome::Ended(ApiError::UnsupportedFormat(format!(
            "{:?} is not a CSV, TSV, xlsx, xlsm, xlsb, xls or ods file",
            upload.file_name
        )))
    })?;
    let block_ids = upload
        .block_ids
        .iter()
        .map(|id| Uuid::parse_str(id).map(|u| u.as_bytes().to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Outcome::Ended(ApiError::Internal(e.into())))?;
    let retry = |e| Outcome::Retry(ApiError::StorageUnavailable(e));
    state
        .blobs
        .commit_blocks(&upload.blob_name, block_ids, format.content_type())
        .await
        .map_err(retry)?;
    let streamed = match state.digests.take(upload.id, upload.upload_length) {
        // A small file must travel in its queue message, so it is read back for its bytes.
        Some(digest) if upload.upload_length > ParseTaskPayload::INLINE_MAX as i64 => Streamed {
            size: upload.upload_length.unsigned_abs(),
            sha256: format!("{:x}", digest.finalize()),
            small: None,
        },
        _ => {
            let mut digest = Digesting::default();
            state
                .blobs
                .download_to(&upload.blob_name, &mut digest)
                .await
                .map_err(retry)?;
            digest.finish()
        }
    };
    if i64::try_from(streamed.size).ok() != Some(upload.upload_length) {
        return Err(Outcome::Ended(ApiError::Internal(anyhow::anyhow!(
            "the committed blob of upload {} has {} bytes, not {}",
            upload.id,
            streamed.size,
            upload.upload_length
        ))));
    }
    let quota_bytes = limits::quota(state, &upload.tenant_id)
        .await
        .map_err(Outcome::Retry)?;
    // A CHECK keeps the three all set or all null.
    let template = match (
        &upload.template_name,
        upload.template_version,
        upload.on_invalid,
    ) {
        (Some(name), Some(version), Some(on_invalid)) => Some(record::ChosenTemplate {
            name: name.clone(),
            version,
            on_invalid,
        }),
        _ => None,
    };
    let principal = Principal {
        tenant_id: upload.tenant_id.clone(),
        subject: upload.uploaded_by.clone(),
        session: None,
        source: None,
    };
    let keep_until = Utc::now() + state.resumable.expiry;
    let stored = record::StoredFile {
        id: upload.id,
        blob_name: &upload.blob_name,
        file_name: &upload.file_name,
        format,
        streamed: &streamed,
        idempotency_key: upload.idempotency_key.as_deref(),
        template: template.as_ref(),
        metadata: upload.metadata.as_ref(),
        session: upload.session_id.zip(upload.end_user.as_ref()),
        quota_bytes,
        resumable: Some((upload.id, keep_until)),
    };
    let (file, task) = record::record(state, &principal, stored)
        .await
        .map_err(Outcome::Ended)?;
    if file.id != upload.id {
        // The idempotency key's earlier file answered: point the upload at it.
        resumable_uploads::finish(&state.db, upload.id, file.id, keep_until)
            .await
            .map_err(|e| Outcome::Retry(e.into()))?;
    }
    Ok((file, task))
}

/// The file and task a recorded upload became.
async fn recorded(state: &AppState, tenant: &str, file_id: Uuid) -> Result<Finished, ApiError> {
    Ok(Finished::Recorded(Box::new(
        file_and_task(state, tenant, file_id).await?,
    )))
}

async fn file_and_task(
    state: &AppState,
    tenant: &str,
    file_id: Uuid,
) -> Result<(SourceFile, Task), ApiError> {
    db::source_files::find_with_task(&state.db, tenant, file_id)
        .await?
        .ok_or_else(|| ApiError::NotFound("the upload's file was deleted".into()))
}

/// Forgets an upload that cannot be recorded, and drops its blocks or blob (best effort: the
/// service's garbage collection takes uncommitted blocks within a week anyway).
pub(crate) async fn end(state: &AppState, upload: &ResumableUpload) {
    state.digests.forget(upload.id);
    if let Err(e) = resumable_uploads::remove(&state.db, upload.id).await {
        tracing::warn!(upload_id = %upload.id, error = %e, "could not delete an ended upload");
    }
    discard(state, &upload.blob_name).await;
}

/// Drops the staged blocks (or the committed blob) of an upload that will not be recorded.
pub(crate) async fn discard(state: &AppState, blob_name: &str) {
    if let Err(e) = state.blobs.discard_staged(blob_name).await {
        tracing::warn!(blob_name, error = %e, "could not discard an upload's blocks");
    }
}

/// Reads a blob as it streams past: its size, SHA-256 and, while it is small enough to travel
/// in its queue message, its bytes.
struct Digesting {
    hasher: Sha256,
    size: u64,
    small: Option<BytesMut>,
}

impl Default for Digesting {
    fn default() -> Self {
        Self {
            hasher: Sha256::new(),
            size: 0,
            small: Some(BytesMut::new()),
        }
    }
}

impl Digesting {
    fn finish(self) -> Streamed {
        Streamed {
            size: self.size,
            sha256: format!("{:x}", self.hasher.finalize()),
            small: self.small.map(BytesMut::freeze),
        }
    }
}

impl tokio::io::AsyncWrite for Digesting {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        this.hasher.update(buf);
        this.size += buf.len() as u64;
        if this.size > ParseTaskPayload::INLINE_MAX as u64 {
            this.small = None;
        } else if let Some(small) = &mut this.small {
            small.extend_from_slice(buf);
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
