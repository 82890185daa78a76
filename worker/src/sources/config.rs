//! The settings of Blob sources, flattened into `worker run`'s ([`crate::config::RunConfig`]).
//! The size and quota limits are the api's (`MAX_UPLOAD_BYTES`, `STORAGE_QUOTA_BYTES`, and a
//! tenant's own quota set with `api tenants set`): a file is refused alike whichever way it
//! comes in. Credentials are opened with `WEBHOOK_SECRET_KEY` (the webhook settings).

use std::time::Duration;

use clap::Args;
use shared::config::{from_args, parse_duration};

/// Settings of Blob sources.
#[derive(Debug, Clone, Args)]
pub struct SourcesConfig {
    /// How often each source's container is listed for blobs no event announced (a pass over
    /// the container, a page at a time, then this long until the next)
    #[arg(id = "source_poll_interval", long = "source-poll-interval", env = "SOURCE_POLL_INTERVAL", value_parser = parse_duration, default_value = "60s")]
    pub poll_interval: Duration,

    /// Blobs listed per page (Blob Storage's most is 5000)
    #[arg(id = "source_list_page", long = "source-list-page", env = "SOURCE_LIST_PAGE", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=5000))]
    pub list_page: u32,

    /// The storage queue (in the service's own storage account) that Event Grid delivers
    /// `BlobCreated` events to; empty: no queue, listing (and events posted to the api) only
    #[arg(
        id = "source_events_queue",
        long = "source-events-queue",
        env = "SOURCE_EVENTS_QUEUE",
        default_value = "source-events"
    )]
    pub events_queue: String,

    /// Blobs imported at once (per worker), over all sources
    #[arg(id = "source_max_in_flight", long = "source-max-in-flight", env = "SOURCE_MAX_IN_FLIGHT", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_in_flight: u32,

    /// Blobs imported at once from one source (per worker)
    #[arg(id = "source_concurrency", long = "source-concurrency", env = "SOURCE_CONCURRENCY", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub concurrency: u32,

    /// How long a claim on a blob (or on a source's listing) lasts; renewed every third of it
    #[arg(id = "source_lease", long = "source-lease", env = "SOURCE_LEASE", value_parser = parse_duration, default_value = "60s")]
    pub lease: Duration,

    /// Fallback poll interval of the import when no NOTIFY arrives
    #[arg(id = "source_import_poll_interval", long = "source-import-poll-interval", env = "SOURCE_IMPORT_POLL_INTERVAL", value_parser = parse_duration, default_value = "5s")]
    pub import_poll_interval: Duration,

    /// The first wait before a failed import is tried again; it doubles with each failure,
    /// up to an hour
    #[arg(id = "source_retry_after", long = "source-retry-after", env = "SOURCE_RETRY_AFTER", value_parser = parse_duration, default_value = "30s")]
    pub retry_after: Duration,

    /// The largest blob imported (the api's limit for an upload); larger ones are skipped as
    /// `file_too_large`
    #[arg(id = "source_max_blob_bytes", long = "max-upload-bytes", env = "MAX_UPLOAD_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub max_blob_bytes: u64,

    /// Bytes of files one tenant may store, unless `api tenants set` gave it its own (the
    /// api's setting)
    #[arg(id = "source_storage_quota_bytes", long = "storage-quota-bytes", env = "STORAGE_QUOTA_BYTES", default_value_t = 10 * 1024 * 1024 * 1024)]
    pub storage_quota_bytes: u64,
}

impl Default for SourcesConfig {
    fn default() -> Self {
        from_args(&[])
    }
}

impl SourcesConfig {
    /// The wait before retrying after `failures` failed imports: [`Self::retry_after`] doubled
    /// each time, at most an hour.
    pub fn retry_in(&self, failures: i32) -> Duration {
        crate::retry::doubled(
            self.retry_after,
            Duration::from_secs(3600),
            u32::try_from(failures).unwrap_or(0),
        )
    }
}
