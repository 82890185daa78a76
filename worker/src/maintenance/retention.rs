//! Retention: files older than their tenant's retention (its own, `api tenants set
//! --retention`, else the RETENTION setting; neither: kept for ever) are removed with their blob
//! and everything that hangs on them, and no `file.deleted` event is written (the contract). A
//! file whose task is not final yet is left until it is ([`removal::mark_expired`]).

use shared::db::removal;
use shared::storage::BlobStore;
use sqlx::PgPool;

use super::config::LifecycleConfig;
use super::pace::{until_zero, Pace, Progress};
use super::removal::remove_marked;
use super::row_store::drop_emptied;

/// One run: marks every expired file (a batch per statement), drops the row store's months
/// that left empty ([`super::row_store`]: a month whose files all expired goes in one
/// statement per table), then removes the marked files (with those a crashed run left) one by
/// one. Stops early when the pace's budget runs out. Returns the files removed.
pub async fn run_once(
    db: &PgPool,
    blobs: &BlobStore,
    cfg: &LifecycleConfig,
    pace: &mut Pace,
) -> anyhow::Result<(u64, Progress)> {
    let secs = cfg.retention.secs();
    if until_zero(pace, |n| removal::mark_expired(db, secs, n)).await? == Progress::Stopped {
        return Ok((0, Progress::Stopped));
    }
    if pace.step(drop_emptied(db)).await?.is_none() {
        return Ok((0, Progress::Stopped));
    }
    remove_marked(db, blobs, pace, None).await
}

/// The maintenance job: a run with no budget, logged when it removed something.
pub async fn job(db: &PgPool, blobs: &BlobStore, cfg: &LifecycleConfig) -> anyhow::Result<()> {
    let mut pace = Pace::new(cfg.batch);
    let (removed, _) = run_once(db, blobs, cfg, &mut pace).await?;
    if removed > 0 {
        tracing::info!(
            files = removed,
            statements = pace.statements,
            longest_ms = pace.longest.as_millis() as u64,
            "removed files past their tenant's retention"
        );
    }
    Ok(())
}
