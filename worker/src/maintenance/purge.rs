//! Tenant purges: `api tenants purge` records a request and revokes the tenant's keys; this job
//! removes what the tenant owns. Per open request, oldest first: revoke its keys again (a key
//! created since), mark its files, remove them ([`super::removal::remove_marked`]), then delete the rest
//! it owns ([`purges::delete_owned`]) and close the request. A file whose task a consumer holds
//! waits for its task (the consumer starts no task of a marked file), so the request stays open
//! until the next run; a crash anywhere is finished by the next run.

use shared::db::{purges, removal};
use shared::storage::BlobStore;
use sqlx::PgPool;

use super::config::LifecycleConfig;
use super::pace::{until_zero, Pace, Progress};
use super::removal::remove_marked;
use super::row_store::drop_emptied;

/// What a purge run did to one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purged {
    pub tenant_id: String,
    pub files_removed: u64,
    pub finished: bool,
}

/// One run over every open purge request. Stops early when the pace's budget runs out.
pub async fn run_once(
    db: &PgPool,
    blobs: &BlobStore,
    pace: &mut Pace,
) -> anyhow::Result<(Vec<Purged>, Progress)> {
    let mut done = Vec::new();
    let Some(tenants) = pace.step(purges::open(db)).await? else {
        return Ok((done, Progress::Stopped));
    };
    for tenant in tenants {
        let (purged, progress) = purge_one(db, blobs, pace, &tenant).await?;
        done.push(purged);
        if progress == Progress::Stopped {
            return Ok((done, progress));
        }
    }
    Ok((done, Progress::Done))
}

async fn purge_one(
    db: &PgPool,
    blobs: &BlobStore,
    pace: &mut Pace,
    tenant: &str,
) -> anyhow::Result<(Purged, Progress)> {
    let mut purged = Purged {
        tenant_id: tenant.to_owned(),
        files_removed: 0,
        finished: false,
    };
    if pace.step(purges::revoke_keys(db, tenant)).await?.is_none() {
        return Ok((purged, Progress::Stopped));
    }
    if until_zero(pace, |n| removal::mark_tenant(db, tenant, n)).await? == Progress::Stopped {
        return Ok((purged, Progress::Stopped));
    }
    // A tenant alone in old months takes those months' partitions with it whole.
    if pace.step(drop_emptied(db)).await?.is_none() {
        return Ok((purged, Progress::Stopped));
    }
    let (removed, progress) = remove_marked(db, blobs, pace, Some(tenant)).await?;
    purged.files_removed = removed;
    if progress == Progress::Stopped {
        return Ok((purged, Progress::Stopped));
    }
    match pace.step(purges::files_left(db, tenant)).await? {
        None => return Ok((purged, Progress::Stopped)),
        Some(0) => {}
        Some(left) => {
            tracing::info!(
                tenant_id = tenant,
                files_left = left,
                "tenant purge waits for files a consumer is parsing"
            );
            return Ok((purged, Progress::Done));
        }
    }
    if until_zero(pace, |n| purges::delete_owned(db, tenant, n)).await? == Progress::Stopped {
        return Ok((purged, Progress::Stopped));
    }
    let Some(finished) = pace.step(purges::finish(db, tenant)).await? else {
        return Ok((purged, Progress::Stopped));
    };
    purged.finished = finished;
    Ok((purged, Progress::Done))
}

/// The maintenance job: a run with no budget, logged per tenant it worked on.
pub async fn job(db: &PgPool, blobs: &BlobStore, cfg: &LifecycleConfig) -> anyhow::Result<()> {
    let mut pace = Pace::new(cfg.batch);
    let (purged, _) = run_once(db, blobs, &mut pace).await?;
    for p in purged {
        tracing::info!(
            tenant_id = p.tenant_id,
            files = p.files_removed,
            finished = p.finished,
            longest_ms = pace.longest.as_millis() as u64,
            "tenant purge ran"
        );
    }
    Ok(())
}
