//! The settings of the data lifecycle's jobs (tenant retention, tenant purges, the orphan-blob
//! sweep, the row store's partitions), flattened into `worker run`'s.

use std::time::Duration;

use clap::Args;
use shared::config::parse_duration;
use shared::db::limits::Retention;

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
