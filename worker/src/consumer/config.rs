//! The consumer's settings, flattened into `worker run`'s ([`crate::config::RunConfig`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use shared::config::{from_args, parse_duration};

/// Settings of the queue consumer.
#[derive(Debug, Clone, Args)]
pub struct ConsumerConfig {
    /// Messages received per request (1..=32, the service's limit)
    #[arg(id = "consumer_batch_size",
        value_name = "N", long = "consumer-batch-size", env = "CONSUMER_BATCH_SIZE", default_value_t = 32,
          value_parser = clap::value_parser!(u8).range(1..=32))]
    pub batch_size: u8,

    /// Messages processed at once
    #[arg(id = "consumer_concurrency",
        value_name = "N", long = "consumer-concurrency", env = "CONSUMER_CONCURRENCY", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,

    /// How long a received message stays invisible; renewed every third of the shorter of this
    /// and TASK_LEASE while it is processed, so a dead consumer's message reappears within it
    #[arg(long = "visibility-timeout", env = "VISIBILITY_TIMEOUT", value_parser = parse_duration, default_value = "6s")]
    pub visibility_timeout: Duration,

    /// How long a started task is ours (renewed while it is processed); a dead consumer's task
    /// is restartable after it. Keep it below VISIBILITY_TIMEOUT, so that the task is free by the
    /// time its message reappears
    #[arg(long = "task-lease", env = "TASK_LEASE", value_parser = parse_duration, default_value = "5s")]
    pub task_lease: Duration,

    /// A message delivered more often than this goes to `<queue>-poison`, its task FAILED
    #[arg(
        long = "max-dequeue-count",
        env = "MAX_DEQUEUE_COUNT",
        default_value_t = 5
    )]
    pub max_dequeue_count: u64,

    /// Shortest wait before polling an empty queue again
    #[arg(long = "idle-backoff-min", env = "IDLE_BACKOFF_MIN", value_parser = parse_duration, default_value = "50ms")]
    pub idle_backoff_min: Duration,

    /// Longest wait before polling an empty queue again (it bounds how soon a dead consumer's
    /// message is taken over once it is visible again)
    #[arg(long = "idle-backoff-max", env = "IDLE_BACKOFF_MAX", value_parser = parse_duration, default_value = "1s")]
    pub idle_backoff_max: Duration,

    /// After a transient failure, a message reappears after this (doubling per delivery)
    #[arg(long = "retry-backoff-base", env = "RETRY_BACKOFF_BASE", value_parser = parse_duration, default_value = "5s")]
    pub retry_backoff_base: Duration,

    /// Longest delay before a transiently failed message reappears
    #[arg(long = "retry-backoff-cap", env = "RETRY_BACKOFF_CAP", value_parser = parse_duration, default_value = "5m")]
    pub retry_backoff_cap: Duration,

    /// How often a RUNNING task's progress (rows stored, bytes read) is written to it; 0s writes
    /// none (the task shows no progress until it ends)
    #[arg(long = "progress-interval", env = "PROGRESS_INTERVAL", value_parser = parse_duration, default_value = "1s")]
    pub progress_interval: Duration,

    /// Directory for downloaded blobs (default: the system temp directory)
    #[arg(long = "download-dir", env = "DOWNLOAD_DIR")]
    pub download_dir: Option<PathBuf>,

    /// A templated upload's stored error records (and rejected rows) at most; its counts stay
    /// exact past it
    #[arg(
        long = "validation-max-errors",
        env = "VALIDATION_MAX_ERRORS",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub validation_max_errors: u32,

    /// How long a template's validation hook may go without a usable answer for a batch (down,
    /// slow, not `200`, an answer not about the batch) before the task fails `hook_unavailable`;
    /// meanwhile the batch is asked again with backoff
    #[arg(long = "hook-retry-for", env = "HOOK_RETRY_FOR", value_parser = parse_duration, default_value = "10m")]
    pub hook_retry_for: Duration,

    /// On how many rows of one file the validation hooks may write unique or primary-key values
    /// (each is checked against the whole file at its end, and held in memory until then, about
    /// 100 bytes a row); a file past it fails `too_many_key_writes`
    #[arg(
        long = "hook-max-key-writes",
        env = "HOOK_MAX_KEY_WRITES",
        default_value_t = 1_000_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub hook_max_key_writes: u64,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        from_args(&[])
    }
}
