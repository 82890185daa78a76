//! Retention: files older than their tenant's retention (its own, `api tenants set
//! --retention`, else the RETENTION setting; neither: kept for ever) are removed with their blob
//! and everything that hangs on them, and no `file.deleted` event is written (the contract). A
//! file whose task is not final yet is left until it is ([`removal::mark_expired`]).

use shared::db::removal;
use shared::storage::BlobStore;
use sqlx::PgPool;

use super::{remove_marked, LifecycleConfig, Pace, Progress};

/// One run: marks a batch of expired files, removes the marked ones (first those a crashed run
/// left), and again until none is left or the pace's budget runs out. Returns the files removed.
pub async fn run_once(
    db: &PgPool,
    blobs: &BlobStore,
    cfg: &LifecycleConfig,
    pace: &mut Pace,
) -> anyhow::Result<(u64, Progress)> {
    let mut removed = 0;
    loop {
        let (n, progress) = remove_marked(db, blobs, pace, None).await?;
        removed += n;
        if progress == Progress::Stopped {
            return Ok((removed, progress));
        }
        let marking = removal::mark_expired(db, cfg.retention.secs(), pace.batch);
        match pace.step(marking).await? {
            None => return Ok((removed, Progress::Stopped)),
            Some(0) => return Ok((removed, Progress::Done)),
            Some(_) => {}
        }
    }
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
