//! Finding blobs by listing: the safety net under Event Grid (an event lost, a subscription
//! not set up yet) and the only way with Azurite. Each source is listed a page at a time from
//! its continuation marker: a worker claims a due source's listing (one worker lists a source
//! at a time), reads one page, and in one transaction records the page's blobs and the next
//! marker; a page that ends the pass makes the next one due after `SOURCE_POLL_INTERVAL`. A
//! worker killed mid-page lists that page again (recording a blob twice changes nothing), and
//! no listing ever reads the whole container at once. A blob still being copied into is left
//! for a later pass; one with only uncommitted blocks is not in a listing at all.

use std::time::Duration;

use shared::db;
use shared::db::source_blobs::{Finder, FoundBlob, MAX_BLOB_NAME};
use shared::db::sources::{Listed, Listing};
use shared::webhooks::WebhookKeyConfig;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use super::copy::unquoted;
use super::import::UNREACHABLE;
use super::SourcesConfig;
use crate::claim::with_db_retry;
use crate::retry::{sleep_or_stop, Backoff};
use crate::{tenant_container, Shutdown};

/// How often an idle lister looks for a source that came due (a new one, or one enabled or
/// given a new credential): one small query.
const LOOK_AGAIN: Duration = Duration::from_secs(5);

/// What listing needs.
pub struct Lister<'a> {
    pub db: &'a PgPool,
    pub cfg: &'a SourcesConfig,
    pub keys: &'a WebhookKeyConfig,
}

impl Lister<'_> {
    /// Lists a page of every due source, again while some are due (until `stop`); returns the
    /// pages read.
    pub async fn list_due(&self, stop: &CancellationToken) -> anyhow::Result<usize> {
        let mut pages = 0;
        while !stop.is_cancelled() {
            let Some(source) = db::sources::claim_listing(self.db, self.cfg.lease).await? else {
                break;
            };
            self.list_page(&source, stop).await?;
            pages += 1;
        }
        Ok(pages)
    }

    /// Lists due sources until stopped (or, draining, until none is due), then waits for the
    /// next to come due. A failure to record a page (Postgres away, a lost lock race) is waited
    /// out and the page listed again: the marker moves only with its page's blobs.
    pub async fn run(&self, shutdown: &Shutdown, drain: bool) -> anyhow::Result<()> {
        let mut failing = Backoff::new(Duration::from_millis(200), self.cfg.poll_interval);
        while !shutdown.stop.is_cancelled() {
            match self.list_due(&shutdown.stop).await {
                Ok(_) => failing.reset(),
                Err(e) => {
                    tracing::warn!(error = format!("{e:#}"), "listing sources failed; retrying");
                    failing.wait(&shutdown.stop).await;
                    continue;
                }
            }
            if drain {
                return Ok(());
            }
            sleep_or_stop(&shutdown.stop, self.next_in().await).await;
        }
        Ok(())
    }

    /// Until the next listing is due, at most a poll interval and at most [`LOOK_AGAIN`]: a
    /// source created meanwhile is due at once.
    async fn next_in(&self) -> Duration {
        let soonest = db::sources::next_listing_in(self.db).await.ok().flatten();
        soonest
            .map_or(self.cfg.poll_interval, |s| {
                Duration::from_secs_f64(s.clamp(0.0, 3600.0))
            })
            .clamp(
                Duration::from_millis(100),
                self.cfg.poll_interval.min(LOOK_AGAIN),
            )
    }

    /// Reads one page of `source` and records it with the next marker.
    async fn list_page(&self, source: &Listing, stop: &CancellationToken) -> anyhow::Result<()> {
        let stored = tenant_container::Stored {
            owner: source.id,
            url: &source.container_url,
            credential_kind: Some(&source.credential_kind),
            sealed: source.sealed_secret.as_deref(),
        };
        let page = match tenant_container::open(self.keys, stored).await {
            Ok(store) => store
                .list_page_under(
                    &source.prefix,
                    source.list_marker.clone(),
                    self.cfg.list_page,
                )
                .await
                .map_err(anyhow::Error::from),
            Err(e) => Err(e),
        };
        let (step, blobs) = match page {
            Ok(page) => {
                let blobs: Vec<FoundBlob> = page
                    .blobs
                    .into_iter()
                    .filter(|b| !b.copying && b.name.len() <= MAX_BLOB_NAME)
                    .filter_map(|b| {
                        let etag = unquoted(b.etag.as_deref()?).to_owned();
                        Some(FoundBlob {
                            name: b.name,
                            etag,
                            size: b.size.and_then(|s| i64::try_from(s).ok()),
                        })
                    })
                    .collect();
                let step = Listed::Page {
                    next: page.next,
                    interval: self.cfg.poll_interval,
                };
                (step, blobs)
            }
            Err(e) => {
                tracing::warn!(source_id = %source.id, error = format!("{e:#}"),
                    "a source's container could not be listed");
                let step = Listed::Failed {
                    code: UNREACHABLE,
                    message: format!("listing the container failed: {e:#}"),
                    retry_in: self.cfg.poll_interval,
                };
                (step, Vec::new())
            }
        };
        // Recorded while the claim is held: a Postgres busy or away for a moment (every pooled
        // connection taken, a failover) is waited out here, not by the loop, which could claim
        // the source again only once this claim's lease has run out.
        with_db_retry(stop, || self.record(source, &step, &blobs)).await?;
        Ok(())
    }

    /// Records a listed page: its blobs found, and the source's next marker and due time.
    async fn record(
        &self,
        source: &Listing,
        step: &Listed,
        blobs: &[FoundBlob],
    ) -> sqlx::Result<()> {
        let mut tx = self.db.begin().await?;
        if !blobs.is_empty() {
            // Before the first pass has ended, a source that imports only later blobs records
            // what is there as skipped.
            let existing = !source.import_existing && source.passes == 0;
            let new =
                db::source_blobs::found(&mut *tx, source.id, blobs, Finder::Listing { existing })
                    .await?;
            if new > 0 {
                tracing::info!(source_id = %source.id, new, existing, "blobs found by listing");
            }
        }
        db::sources::listed(&mut tx, source, step).await?;
        tx.commit().await
    }
}
