//! Blob sources (contract v1.3): files that arrive in a tenant's own Blob container imported
//! like uploads. Three parts run side by side (`--role sources` or `all`):
//! - [`listing`] lists each source's container a page at a time from its continuation marker,
//!   every `SOURCE_POLL_INTERVAL` (the safety net, and the only way with Azurite);
//! - [`events`] reads Event Grid's `BlobCreated` events from `SOURCE_EVENTS_QUEUE` (the api
//!   takes them too, posted to `/api/v1/sources/{id}/events`);
//! - [`import`] imports what either found, on the claim loop the relay shares.
//!
//! Finding and importing are apart on purpose: every finding writes the same row, keyed by
//! (source, blob name, ETag) (`db::source_blobs`), so an event delivered three times, an event
//! racing a listing or two workers listing at once make one row, and the import of that row
//! writes its file, task and outbox message in the transaction that marks it imported: one
//! task per blob version. The blob is copied into the uploads container first ([`copy`] says
//! why a copy), so the rest of the pipeline sees an upload like any other.

pub mod config;
mod copy;
pub mod events;
pub mod import;
pub mod listing;
mod metrics;

use std::sync::Arc;

use anyhow::Context as _;
use shared::storage::{BlobStore, QueueClient};
use shared::webhooks::WebhookKeyConfig;
use sqlx::PgPool;

use crate::bounds::Budget;
use crate::claim::{self, LoopConfig};
use crate::{tenant_container, Shutdown};
pub use config::SourcesConfig;

/// What the sources role needs.
#[derive(Clone)]
pub struct Sources {
    pub db: PgPool,
    pub cfg: SourcesConfig,
    pub keys: WebhookKeyConfig,
    /// The service's own uploads container, where imported blobs are copied.
    pub uploads: BlobStore,
    /// `SOURCE_EVENTS_QUEUE`, unless it is empty.
    pub events: Option<QueueClient>,
    /// The tenants' containers, opened once a minute rather than for every blob.
    pub containers: Arc<tenant_container::Containers>,
}

impl Sources {
    fn imports(&self) -> import::Imports<'_> {
        import::Imports {
            db: &self.db,
            cfg: &self.cfg,
            keys: &self.keys,
            uploads: &self.uploads,
            containers: &self.containers,
        }
    }

    fn lister(&self) -> listing::Lister<'_> {
        listing::Lister {
            db: &self.db,
            cfg: &self.cfg,
            keys: &self.keys,
        }
    }

    fn loop_config(&self) -> LoopConfig {
        LoopConfig {
            batch_size: i64::from(self.cfg.max_in_flight),
            max_held: self.cfg.max_in_flight as usize,
            concurrency: self.cfg.concurrency as usize,
            lease: self.cfg.lease,
            poll_interval: self.cfg.import_poll_interval,
        }
    }

    /// Lists, reads events and imports until stopped (or, draining, until nothing is due,
    /// waiting and importable). A part that fails ends the others, and the supervisor starts
    /// the role again.
    pub async fn run(
        &self,
        shutdown: Shutdown,
        drain: bool,
        budget: Arc<Budget>,
    ) -> anyhow::Result<()> {
        metrics::register();
        if let Some(queue) = &self.events {
            queue
                .ensure_exists()
                .await
                .context("creating SOURCE_EVENTS_QUEUE")?;
        }
        tracing::info!(events_queue = ?self.events.as_ref().map(QueueClient::name), drain,
            "Blob sources started");
        let lister = self.lister();
        let imports = self.imports();
        let loop_cfg = self.loop_config();
        let events = async {
            match &self.events {
                Some(queue) => {
                    let reader = events::EventReader {
                        db: &self.db,
                        queue,
                    };
                    reader.run(&shutdown, drain).await
                }
                None => Ok(()),
            }
        };
        // Draining, the import starts once the finding is done, and so sees all it found.
        let finding = async { tokio::try_join!(lister.run(&shutdown, drain), events) };
        if drain {
            finding.await?;
            claim::run(&imports, &loop_cfg, &shutdown, drain, &budget).await
        } else {
            let importing = claim::run(&imports, &loop_cfg, &shutdown, drain, &budget);
            tokio::try_join!(finding, importing).map(|_| ())
        }
    }
}
