//! The worker's housekeeping, in one place: a file per job and one runner ([`runner`]), as River
//! keeps its `internal/maintenance`. Where the relay runs: the retention of sent outbox messages
//! ([`outbox_retention`]), the expiry of resumable uploads ([`resumable_expiry`]) and of import
//! sessions ([`session_expiry`]), the review
//! timeout ([`review_timeout`]) and the data lifecycle: per-tenant retention ([`retention`]),
//! tenant purges ([`purge`]), the row store's monthly partitions ([`row_store`]) and the
//! orphan-blob sweep ([`orphans`]). Where webhook delivery runs: the event log's daily
//! partitions ([`event_log`]) and the pruning of finished destination deliveries
//! ([`destination_deliveries`]). Retention and purges remove files the same way ([`removal`]), at
//! a [`Pace`] of one short statement at a time.

pub mod config;
pub mod destination_deliveries;
pub mod event_log;
pub mod orphans;
pub mod outbox_retention;
pub mod pace;
pub mod purge;
pub mod removal;
pub mod resumable_expiry;
pub mod retention;
pub mod review_timeout;
pub mod row_store;
pub mod runner;
pub mod session_expiry;
mod session_lock;

use std::sync::Arc;

use shared::storage::BlobStore;

pub use config::LifecycleConfig;
pub use pace::{Pace, Progress};
pub use runner::{run, Job};

use crate::config::RunConfig;

/// The jobs of the loops `cfg`'s role runs, on their settings' intervals: none for the consumer
/// alone.
pub fn jobs(cfg: &RunConfig) -> Vec<Job> {
    let mut jobs = Vec::new();
    if cfg.role.runs_relay() {
        jobs.push(Job::new(
            "outbox retention",
            cfg.relay.purge_interval,
            |db, cfg| async move {
                outbox_retention::purge(&db, &cfg.relay)
                    .await
                    .map(drop)
                    .map_err(Into::into)
            },
        ));
        jobs.push(Job::new(
            "resumable upload expiry",
            cfg.relay.purge_interval,
            |db, cfg| async move {
                let blobs = BlobStore::new(&cfg.storage)?;
                resumable_expiry::purge_expired(&db, &blobs).await?;
                Ok(())
            },
        ));
        jobs.push(Job::new(
            "import session expiry",
            cfg.relay.purge_interval,
            |db, _| async move {
                session_expiry::purge(&db)
                    .await
                    .map(drop)
                    .map_err(Into::into)
            },
        ));
        jobs.push(Job::new(
            "review timeout",
            cfg.relay.purge_interval,
            |db, cfg| async move {
                review_timeout::expire_reviews(&db, &cfg.relay)
                    .await
                    .map(drop)
                    .map_err(Into::into)
            },
        ));
        let lifecycle = &cfg.lifecycle;
        jobs.push(Job::new(
            "retention",
            lifecycle.interval,
            |db, cfg| async move {
                let blobs = BlobStore::new(&cfg.storage)?;
                retention::job(&db, &blobs, &cfg.lifecycle).await
            },
        ));
        jobs.push(Job::new(
            "tenant purge",
            lifecycle.interval,
            |db, cfg| async move {
                let blobs = BlobStore::new(&cfg.storage)?;
                purge::job(&db, &blobs, &cfg.lifecycle).await
            },
        ));
        let backfill = Arc::new(row_store::Backfill::default());
        jobs.push(Job::new(
            "row store partitions",
            lifecycle.interval,
            move |db, cfg| {
                let backfill = Arc::clone(&backfill);
                async move { row_store::job(&db, &backfill, cfg.lifecycle.batch).await }
            },
        ));
        jobs.push(Job::new(
            "orphan blob sweep",
            lifecycle.orphan_interval,
            |db, cfg| async move {
                let blobs = BlobStore::new(&cfg.storage)?;
                orphans::job(&db, &blobs, &cfg.lifecycle).await
            },
        ));
    }
    if cfg.role.runs_webhooks() {
        jobs.push(Job::new(
            "event log partitions",
            cfg.webhooks.purge_interval,
            |db, cfg| async move {
                let w = &cfg.webhooks;
                event_log::job(&db, w.events_retention, w.attempts_retention)
                    .await
                    .map(drop)
            },
        ));
        jobs.push(Job::new(
            "destination deliveries retention",
            cfg.webhooks.purge_interval,
            |db, cfg| async move {
                destination_deliveries::purge(&db, cfg.destinations.retention)
                    .await
                    .map(drop)
                    .map_err(Into::into)
            },
        ));
    }
    jobs
}
