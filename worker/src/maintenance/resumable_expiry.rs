//! The expiry of resumable uploads: the api records their state in `resumable_uploads` and
//! stages their bytes as uncommitted blocks; an upload past its expiry (`RESUMABLE_UPLOAD_EXPIRY`
//! from its creation, or from its completion) is deleted here with what it staged, so the table
//! stays bounded and no staged block outlives the expiry by more than one maintenance interval.
//! (The storage service would drop uncommitted blocks after a week by itself; a block list that
//! is never committed never becomes a blob.) A recorded upload's blob belongs to its file and
//! stays.

use shared::db::resumable_uploads;
use shared::storage::BlobStore;
use sqlx::PgPool;

use super::pace::in_batches;

/// Deletes expired uploads, in small batches, and discards their staged blocks (best effort:
/// a block left behind is the service's to drop within a week). Returns how many went.
pub async fn purge_expired(db: &PgPool, blobs: &BlobStore) -> sqlx::Result<u64> {
    const BATCH: i64 = 100;
    let total = in_batches(BATCH, || async {
        let removed = resumable_uploads::delete_expired(db, BATCH).await?;
        for upload in removed.iter().filter(|u| !u.recorded) {
            if let Err(e) = blobs.discard_staged(&upload.blob_name).await {
                tracing::warn!(blob_name = %upload.blob_name, error = %e,
                               "could not discard the staged blocks of an expired upload");
            }
        }
        Ok(removed.len() as u64)
    })
    .await?;
    if total > 0 {
        tracing::info!(
            deleted = total,
            "deleted resumable uploads past their expiry"
        );
    }
    Ok(total)
}
