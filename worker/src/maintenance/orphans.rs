//! The orphan-blob sweep: a blob no file row names is what an upload leaves when its
//! transaction failed after the blob was written. The sweep lists the container a page at a
//! time (List Blobs with a marker), asks Postgres which of the page's names a file holds, and
//! deletes the others once they are older than ORPHAN_BLOB_GRACE: a younger one may be an
//! upload whose rows are about to commit. Only committed blobs are listed: the staged blocks of
//! an upload in progress (a resumable upload's, until its last byte) are never seen, and once
//! committed their blob is younger than the grace.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use shared::db::source_files;
use shared::storage::BlobStore;
use sqlx::PgPool;

use super::config::LifecycleConfig;

/// Names per listed page (the service's maximum is 5,000).
pub const PAGE: u32 = 1000;

/// What a sweep saw and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub listed: u64,
    pub deleted: u64,
}

/// One sweep of the container, as of `now`: deletes every blob created before `now - grace`
/// that no file names. A blob whose age the listing does not give is kept.
pub async fn sweep(
    db: &PgPool,
    blobs: &BlobStore,
    grace: Duration,
    now: DateTime<Utc>,
    page_size: u32,
) -> anyhow::Result<Swept> {
    let cutoff = now - chrono::Duration::from_std(grace)?;
    let mut swept = Swept::default();
    let mut marker = None;
    loop {
        let page = blobs.list_page(marker, page_size).await?;
        swept.listed += page.blobs.len() as u64;
        let old: Vec<String> = page
            .blobs
            .into_iter()
            .filter(|b| b.created_at.is_some_and(|t| t < cutoff))
            .map(|b| b.name)
            .collect();
        if !old.is_empty() {
            let used: HashSet<String> = source_files::blobs_in_use(db, &old)
                .await?
                .into_iter()
                .collect();
            for name in old.iter().filter(|n| !used.contains(*n)) {
                blobs.delete(name).await?;
                swept.deleted += 1;
                tracing::info!(blob = name, "deleted an orphan blob (no file names it)");
            }
        }
        match page.next {
            Some(next) => marker = Some(next),
            None => return Ok(swept),
        }
    }
}

/// The maintenance job.
pub async fn job(db: &PgPool, blobs: &BlobStore, cfg: &LifecycleConfig) -> anyhow::Result<()> {
    sweep(db, blobs, cfg.orphan_grace, Utc::now(), PAGE).await?;
    Ok(())
}
