//! Finding blobs from Event Grid: `BlobCreated` events delivered to a storage queue of the
//! service's own account (`SOURCE_EVENTS_QUEUE`), one event per message. Each event of a blob
//! under a source's container and prefix is recorded as found, then its message deleted: a
//! worker killed in between leaves the message to come back, and recording it again changes
//! nothing. A message that is not an event is deleted and counted (it would come back forever);
//! one whose recording failed (Postgres down) is left to come back after its visibility timeout.
//! The queue's length is what KEDA scales the worker's sources role on.

use std::time::Duration;

use shared::blob_events::{self, BlobEvent};
use shared::db;
use shared::db::source_blobs::{Finder, FoundBlob, MAX_BLOB_NAME};
use shared::storage::QueueClient;
use sqlx::PgPool;

use tokio_util::sync::CancellationToken;

use crate::claim::with_db_retry;
use crate::retry::{sleep_or_stop, Backoff};
use crate::Shutdown;

/// How long a received message stays hidden while its events are recorded.
const VISIBILITY: Duration = Duration::from_secs(60);

/// What reading the events queue needs.
pub struct EventReader<'a> {
    pub db: &'a PgPool,
    pub queue: &'a QueueClient,
}

/// What one batch of messages came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    pub messages: usize,
    /// Events of a watched blob, recorded.
    pub recorded: usize,
    /// Events of no source, of another type, or messages that are no event.
    pub ignored: usize,
}

impl EventReader<'_> {
    /// Reads the queue until stopped (or, draining, until it is empty).
    pub async fn run(&self, shutdown: &Shutdown, drain: bool) -> anyhow::Result<()> {
        let mut idle = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
        while !shutdown.stop.is_cancelled() {
            match self.read_batch(&shutdown.abort).await {
                Ok(read) if read.messages > 0 => idle.reset(),
                Ok(_) if drain => return Ok(()),
                Ok(_) => sleep_or_stop(&shutdown.stop, idle.next_delay()).await,
                Err(e) => {
                    tracing::warn!(error = format!("{e:#}"), "reading source events failed");
                    sleep_or_stop(&shutdown.stop, idle.next_delay()).await;
                }
            }
        }
        Ok(())
    }

    /// Receives one batch of messages and records their events. Recording waits out a brief
    /// outage of Postgres (a restart, every pooled connection busy) rather than leave the
    /// message hidden for its whole visibility timeout.
    pub async fn read_batch(&self, abort: &CancellationToken) -> anyhow::Result<Read> {
        let messages = self.queue.receive(32, VISIBILITY).await?;
        let mut read = Read {
            messages: messages.len(),
            ..Read::default()
        };
        for message in messages {
            let recorded = match blob_events::parse(message.body.as_bytes()) {
                Ok(events) => with_db_retry(abort, || self.record(&events)).await,
                Err(e) => {
                    tracing::warn!(message_id = %message.id, error = %e,
                        "a message of the source events queue is not an event; deleted");
                    Ok((0, 1))
                }
            };
            match recorded {
                Ok((yes, no)) => {
                    read.recorded += yes;
                    read.ignored += no;
                    if let Err(e) = self.queue.delete(&message.id, &message.pop_receipt).await {
                        tracing::warn!(message_id = %message.id, error = %e,
                            "could not delete a source event message (it comes back, harmlessly)");
                    }
                }
                Err(e) => {
                    tracing::warn!(message_id = %message.id, error = %e,
                        "a source event could not be recorded; it comes back");
                }
            }
        }
        super::metrics::events(read.recorded, read.ignored);
        Ok(read)
    }

    /// Records the events of watched blobs: how many were, and how many were not.
    async fn record(&self, events: &[BlobEvent]) -> sqlx::Result<(usize, usize)> {
        let (mut yes, mut no) = (0, 0);
        for event in events {
            let BlobEvent::Created { url, etag, size } = event else {
                no += 1;
                continue;
            };
            let found = match blob_events::container_of(url) {
                Some(container) => match blob_events::blob_in(url, &container) {
                    Some(name) if name.len() <= MAX_BLOB_NAME => {
                        db::sources::watching(self.db, &container, &name)
                            .await?
                            .map(|source| (source, name))
                    }
                    _ => None,
                },
                None => None,
            };
            let Some((source, name)) = found else {
                no += 1;
                continue;
            };
            let blob = FoundBlob {
                name,
                etag: etag.clone(),
                size: *size,
            };
            db::source_blobs::found(self.db, source, &[blob], Finder::Event).await?;
            yes += 1;
        }
        Ok((yes, no))
    }
}
