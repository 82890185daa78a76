//! How retention and tenant purges remove files ([`remove_marked`], over
//! [`shared::db::removal`]): mark, delete the blob, delete the rows in batches, delete the file
//! row; each statement is one short transaction of at most `LIFECYCLE_BATCH` rows, and a crash
//! between two leaves a marked file that the next run finishes.

use shared::db::{removal, source_files};
use shared::storage::BlobStore;
use sqlx::PgPool;

use super::pace::{until_zero, Pace, Progress};

/// Removes the marked files (of `tenant` only, when given) that no consumer holds: each one's
/// blob, then its rows a batch at a time, then the file row, without a `file.deleted` event.
/// Returns how many files it removed.
pub async fn remove_marked(
    db: &PgPool,
    blobs: &BlobStore,
    pace: &mut Pace,
    tenant: Option<&str>,
) -> anyhow::Result<(u64, Progress)> {
    let mut removed = 0;
    loop {
        let Some(files) = pace.step(removal::marked(db, tenant, pace.batch)).await? else {
            return Ok((removed, Progress::Stopped));
        };
        if files.is_empty() {
            return Ok((removed, Progress::Done));
        }
        for file in files {
            // The blob first: once the file row is gone, nothing would name it any more (the
            // orphan sweep would find it, a day later).
            blobs.delete(&file.blob_name).await?;
            let dependents = until_zero(pace, |n| removal::delete_dependents(db, file.id, n));
            if dependents.await? == Progress::Stopped {
                return Ok((removed, Progress::Stopped));
            }
            let deleted = async {
                let mut conn = db.acquire().await?;
                source_files::delete(
                    &mut conn,
                    &file.tenant_id,
                    file.id,
                    source_files::Announce::Silently,
                )
                .await
            };
            match pace.step(deleted).await? {
                None => return Ok((removed, Progress::Stopped)),
                Some(Some(_)) => removed += 1,
                Some(None) => {} // another worker removed it first
            }
            tracing::debug!(source_file_id = %file.id, tenant_id = %file.tenant_id, "file removed");
        }
    }
}
