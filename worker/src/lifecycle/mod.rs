//! The data lifecycle, as jobs of the maintenance loop: per-tenant retention ([`retention`]),
//! tenant purges ([`purge`]), the orphan-blob sweep ([`orphans`]), the row store's monthly
//! partitions ([`row_store`]) and the event log's daily ones ([`event_log`]). Retention and purges
//! remove files the same way ([`remove_marked`], over [`shared::db::removal`]): mark, delete
//! the blob, delete the rows in batches, delete the file row; each statement is one short
//! transaction of at most [`LifecycleConfig::batch`] rows, and a crash between two leaves a
//! marked file that the next run finishes.

pub mod event_log;
pub mod orphans;
pub mod purge;
pub mod retention;
pub mod row_store;
mod session_lock;

use std::future::Future;
use std::time::{Duration, Instant};

use clap::Args;
use shared::config::parse_duration;
use shared::db::limits::Retention;
use shared::db::{removal, source_files};
use shared::storage::BlobStore;
use sqlx::PgPool;

/// Settings of retention, tenant purges and the orphan-blob sweep.
#[derive(Debug, Clone, Args)]
pub struct LifecycleConfig {
    /// How long a tenant's files are kept, unless `api tenants set --retention` gave it its own:
    /// a duration of at least 1h, or none (kept for ever)
    #[arg(
        id = "tenant_retention",
        long = "retention",
        env = "RETENTION",
        default_value = "none"
    )]
    pub retention: Retention,

    /// How often retention and tenant purges run
    #[arg(long = "lifecycle-interval", env = "LIFECYCLE_INTERVAL", value_parser = parse_duration, default_value = "1m")]
    pub interval: Duration,

    /// Rows one statement of retention or a purge deletes at most (a row-chunk row holds up to
    /// 256 parsed rows), and files one statement marks
    #[arg(value_name = "N", long = "lifecycle-batch", env = "LIFECYCLE_BATCH", default_value_t = 200,
          value_parser = clap::value_parser!(i64).range(1..=10_000))]
    pub batch: i64,

    /// A blob with no file is deleted once it is older than this (younger: an upload in flight)
    #[arg(long = "orphan-blob-grace", env = "ORPHAN_BLOB_GRACE", value_parser = parse_duration, default_value = "24h")]
    pub orphan_grace: Duration,

    /// How often the orphan-blob sweep lists the container
    #[arg(long = "orphan-sweep-interval", env = "ORPHAN_SWEEP_INTERVAL", value_parser = parse_duration, default_value = "1h")]
    pub orphan_interval: Duration,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        shared::config::from_args(&[])
    }
}

/// How a lifecycle run goes: the rows one statement may delete, how many statements the run may
/// still make (unlimited in the worker; a test stops a run mid-way with it, as a crash would),
/// and what its statements took (the purge benchmark reports the longest).
#[derive(Debug, Clone)]
pub struct Pace {
    pub batch: i64,
    left: Option<u64>,
    pub statements: u64,
    pub longest: Duration,
}

impl Pace {
    pub fn new(batch: i64) -> Self {
        Self {
            batch,
            left: None,
            statements: 0,
            longest: Duration::ZERO,
        }
    }

    /// A pace that stops the run after `statements` statements.
    pub fn with_budget(batch: i64, statements: u64) -> Self {
        Self {
            left: Some(statements),
            ..Self::new(batch)
        }
    }

    /// Runs one statement (one transaction), timed; `None`, without running it, once the budget
    /// is spent.
    pub async fn step<T>(
        &mut self,
        statement: impl Future<Output = sqlx::Result<T>>,
    ) -> sqlx::Result<Option<T>> {
        if let Some(left) = &mut self.left {
            if *left == 0 {
                return Ok(None);
            }
            *left -= 1;
        }
        let started = Instant::now();
        let out = statement.await?;
        self.statements += 1;
        self.longest = self.longest.max(started.elapsed());
        Ok(Some(out))
    }
}

/// How far a run got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Everything it could do now is done.
    Done,
    /// The pace's budget ran out first.
    Stopped,
}

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

/// Runs `step` (one bounded statement) until it returns 0 or the pace's budget runs out.
async fn until_zero<F, Fut>(pace: &mut Pace, mut step: F) -> sqlx::Result<Progress>
where
    F: FnMut(i64) -> Fut,
    Fut: Future<Output = sqlx::Result<u64>>,
{
    loop {
        match pace.step(step(pace.batch)).await? {
            None => return Ok(Progress::Stopped),
            Some(0) => return Ok(Progress::Done),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_pace_runs_statements_until_its_budget_is_spent_and_then_none() {
        let ran = AtomicUsize::new(0);
        let statement = || async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, sqlx::Error>(7)
        };
        let mut pace = Pace::with_budget(10, 2);
        assert_eq!(pace.step(statement()).await.expect("ok"), Some(7));
        assert_eq!(pace.step(statement()).await.expect("ok"), Some(7));
        assert_eq!(pace.step(statement()).await.expect("ok"), None);
        assert_eq!(ran.load(Ordering::SeqCst), 2, "the third was never run");
        assert_eq!(pace.statements, 2);

        let mut unlimited = Pace::new(10);
        for _ in 0..100 {
            assert!(unlimited.step(statement()).await.expect("ok").is_some());
        }
        assert_eq!(unlimited.statements, 100);
    }
}
