//! The worker's command line: every setting is an environment variable and a flag, documented by
//! `worker --help` / `worker run --help`. Shared sections (database, storage, telemetry) are
//! flattened from `shared`, and so are the parse limits from [`ParseLimits`]. Each default is
//! written once, in its `#[arg]`; the `Default` impls tests build these structs from are those
//! defaults ([`shared::config::from_args`]). Durations are humantime strings (`250ms`, `25s`,
//! `5m`, `7d`).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use shared::config::{from_args, parse_duration, DatabaseConfig, TelemetryConfig};
use shared::db::outbox::DEFAULT_MAX_ATTEMPTS;
use shared::domain::MessageEncoding;
use shared::storage::StorageConfig;
use shared::webhooks::WebhookKeyConfig;

use crate::parse::isolate::{ChildArgs, CHILD_SUBCOMMAND};
use crate::parse::ParseLimits;
use crate::webhooks::RetrySchedule;

/// Where `/metrics` listens when `METRICS_ADDR` is unset: beside the api's 9090, so that both
/// run on one host with their defaults.
pub const DEFAULT_METRICS_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9091));

/// Outbox relay (Postgres → Azure Queue Storage) and queue consumer (queue → parsed rows).
#[derive(Debug, Parser)]
#[command(name = "worker", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the relay and/or the consumer until SIGTERM (or, with --drain, until the work is done).
    Run(Box<RunConfig>),
    /// Operate on the outbox: counts per status, or requeue DEAD messages.
    Outbox(OutboxArgs),
    /// Look at a task: `worker task show <id>` prints what `GET /api/v1/tasks/{id}` answers.
    Task(TaskArgs),
    /// Parse the files named on stdin, as the consumer's isolated child (not for people).
    #[command(name = CHILD_SUBCOMMAND, hide = true)]
    ParseChild(ChildArgs),
}

/// Which loops this process runs, so they can be scaled apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Role {
    /// The relay, the consumer and webhook delivery (which fails every delivery until
    /// WEBHOOK_SECRET_KEY is set).
    #[default]
    All,
    /// Only the outbox relay.
    Relay,
    /// Only the queue consumer.
    Consumer,
    /// Only webhook delivery (needs WEBHOOK_SECRET_KEY, and no Azure Storage).
    Webhooks,
}

impl Role {
    pub fn runs_relay(self) -> bool {
        matches!(self, Role::All | Role::Relay)
    }

    pub fn runs_consumer(self) -> bool {
        matches!(self, Role::All | Role::Consumer)
    }

    pub fn runs_webhooks(self) -> bool {
        matches!(self, Role::All | Role::Webhooks)
    }

    /// Whether the loops need Azure Storage (the queue, the blobs).
    pub fn uses_storage(self) -> bool {
        self.runs_relay() || self.runs_consumer()
    }
}

/// `worker run`.
#[derive(Debug, Clone, Args)]
pub struct RunConfig {
    /// Which loops to run: all, relay, consumer or webhooks
    #[arg(long, env = "WORKER_ROLE", value_enum, default_value_t = Role::All)]
    pub role: Role,

    /// Process until the work is done, then exit 0 (for event-driven container jobs): nothing
    /// claimable in the outbox (claims held by another relay are waited for, at most one
    /// RELAY_LEASE) and nothing in the queue, invisible messages included
    #[arg(long, env = "WORKER_DRAIN", default_value_t = false)]
    pub drain: bool,

    /// On SIGTERM/Ctrl-C: how long in-flight work may take to finish before it is released
    #[arg(long, env = "SHUTDOWN_GRACE", value_parser = parse_duration, default_value = "25s")]
    pub shutdown_grace: Duration,

    #[command(flatten)]
    pub bounds: JobBounds,

    /// Listen address for Prometheus `/metrics` (unset: 127.0.0.1:9091, beside the api's
    /// 9090, or a port the system picks when another process, such as a second worker, holds
    /// that one; the log says which). An address given here that cannot be bound stops the worker
    #[arg(long, env = "METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,

    #[command(flatten)]
    pub database: DatabaseConfig,

    #[command(flatten)]
    pub storage: StorageConfig,

    #[command(flatten)]
    pub telemetry: TelemetryConfig,

    #[command(flatten)]
    pub relay: RelayConfig,

    #[command(flatten)]
    pub consumer: ConsumerConfig,

    #[command(flatten)]
    pub parse: ParseConfig,

    #[command(flatten)]
    pub webhooks: WebhooksConfig,

    #[command(flatten)]
    pub lifecycle: crate::lifecycle::LifecycleConfig,
}

/// The bounds of one job replica. When one is reached the worker stops taking new work, finishes
/// what is in hand (within SHUTDOWN_GRACE) and exits 0, like after a drain.
#[derive(Debug, Clone, Default, Args)]
pub struct JobBounds {
    /// Stop taking new work after running this long (unset: no limit)
    #[arg(long = "max-runtime", env = "WORKER_MAX_RUNTIME", value_parser = parse_duration)]
    pub max_runtime: Option<Duration>,

    /// Stop taking new work after this many queue messages, or outbox messages with --role relay
    /// (unset: no limit)
    #[arg(long = "max-messages", env = "WORKER_MAX_MESSAGES",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_messages: Option<u64>,
}

/// Settings of the outbox relay.
#[derive(Debug, Clone, Args)]
pub struct RelayConfig {
    /// How queue message bodies are encoded (Azure Functions queue triggers expect base64)
    #[arg(long = "queue-message-encoding", env = "QUEUE_MESSAGE_ENCODING", value_enum, default_value_t = MessageEncoding::Base64)]
    pub encoding: MessageEncoding,

    /// Outbox messages claimed per batch
    #[arg(id = "relay_batch_size",
        value_name = "N", long = "relay-batch-size", env = "RELAY_BATCH_SIZE", default_value_t = 256,
          value_parser = clap::value_parser!(i64).range(1..=10_000))]
    pub batch_size: i64,

    /// Queue sends in flight at once
    #[arg(id = "relay_concurrency",
        value_name = "N", long = "relay-concurrency", env = "RELAY_CONCURRENCY", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,

    /// Most tasks of one tenant between the outbox and a finished parse (being sent, in the
    /// queue, or parsing); the rest of a tenant's backlog waits in the outbox. The queue is first
    /// in, first out, so another tenant's upload waits behind at most this many tasks of each
    /// busy tenant. Set it to twice the consumer slots (replicas × CONSUMER_CONCURRENCY): a
    /// tenant alone then keeps every consumer busy, and another tenant waits about two tasks'
    /// time. The default fits one consumer at the default concurrency
    #[arg(long = "relay-tenant-in-flight", env = "RELAY_TENANT_IN_FLIGHT", default_value_t = 16,
          value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
    pub tenant_in_flight: i64,

    /// How long a claim on an outbox message lasts; renewed every third of it while the message
    /// is being sent, so a dead relay's claims are claimable again within it
    #[arg(long = "relay-lease", env = "RELAY_LEASE", value_parser = parse_duration, default_value = "5s")]
    pub lease: Duration,

    /// Send attempts before a message is DEAD
    #[arg(long = "relay-max-attempts", env = "RELAY_MAX_ATTEMPTS", default_value_t = DEFAULT_MAX_ATTEMPTS,
          value_parser = clap::value_parser!(i32).range(1..))]
    pub max_attempts: i32,

    /// First retry delay after a failed send; doubles with each attempt (with jitter)
    #[arg(long = "relay-backoff-base", env = "RELAY_BACKOFF_BASE", value_parser = parse_duration, default_value = "1s")]
    pub backoff_base: Duration,

    /// Longest retry delay after a failed send
    #[arg(long = "relay-backoff-cap", env = "RELAY_BACKOFF_CAP", value_parser = parse_duration, default_value = "5m")]
    pub backoff_cap: Duration,

    /// Longest retry delay while the queue service is unavailable (transport errors, timeouts,
    /// 408/429/5xx); such failures back off but never count toward RELAY_MAX_ATTEMPTS
    #[arg(long = "relay-outage-backoff-cap", env = "RELAY_OUTAGE_BACKOFF_CAP", value_parser = parse_duration, default_value = "30s")]
    pub outage_backoff_cap: Duration,

    /// Fallback poll interval when no NOTIFY arrives (and while LISTEN is reconnecting)
    #[arg(long = "relay-poll-interval", env = "RELAY_POLL_INTERVAL", value_parser = parse_duration, default_value = "5s")]
    pub poll_interval: Duration,

    /// How long COMPLETED outbox messages are kept before they are deleted
    #[arg(long = "outbox-retention", env = "OUTBOX_RETENTION", value_parser = parse_duration, default_value = "7d")]
    pub retention: Duration,

    /// How often the retention purge runs
    #[arg(long = "outbox-purge-interval", env = "OUTBOX_PURGE_INTERVAL", value_parser = parse_duration, default_value = "10m")]
    pub purge_interval: Duration,

    /// How long a task may wait in NEEDS_REVIEW for its mapping before it fails with
    /// review_expired (checked with the outbox purge)
    #[arg(long = "review-timeout", env = "REVIEW_TIMEOUT", value_parser = parse_duration, default_value = "7d")]
    pub review_timeout: Duration,
}

impl Default for RelayConfig {
    fn default() -> Self {
        from_args(&[])
    }
}

/// Settings of webhook delivery and of the retention of events.
#[derive(Debug, Clone, Args)]
pub struct WebhooksConfig {
    #[command(flatten)]
    pub keys: WebhookKeyConfig,

    /// The delays before each retry of a failed webhook delivery, comma-separated (after the
    /// first failure, the second, …); a delivery that fails once more is dead. The default spans
    /// over a day
    #[arg(id = "webhook_retry_schedule", long = "webhook-retry-schedule", env = "WEBHOOK_RETRY_SCHEDULE",
          value_parser = RetrySchedule::parse, default_value = "5s,5m,30m,2h,5h,10h,10h")]
    pub retry_schedule: RetrySchedule,

    /// A webhook request that has no answer within this fails (`timeout`)
    #[arg(id = "webhook_timeout", long = "webhook-timeout", env = "WEBHOOK_TIMEOUT", value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,

    /// Requests in flight at once to one endpoint (per worker): a slow endpoint holds no more
    #[arg(id = "webhook_endpoint_concurrency", value_name = "N",
          long = "webhook-endpoint-concurrency", env = "WEBHOOK_ENDPOINT_CONCURRENCY", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub endpoint_concurrency: u32,

    /// Webhook requests in flight at once over all endpoints (per worker)
    #[arg(id = "webhook_max_in_flight", value_name = "N",
          long = "webhook-max-in-flight", env = "WEBHOOK_MAX_IN_FLIGHT", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_in_flight: u32,

    /// How long a claim on a delivery lasts; renewed every third of it while it is sent
    #[arg(id = "webhook_lease", long = "webhook-lease", env = "WEBHOOK_LEASE", value_parser = parse_duration, default_value = "15s")]
    pub lease: Duration,

    /// Fallback poll interval when no NOTIFY arrives
    #[arg(id = "webhook_poll_interval", long = "webhook-poll-interval", env = "WEBHOOK_POLL_INTERVAL", value_parser = parse_duration, default_value = "5s")]
    pub poll_interval: Duration,

    /// An endpoint whose every request has failed for this long is disabled (`failing`)
    #[arg(id = "webhook_disable_after", long = "webhook-disable-after", env = "WEBHOOK_DISABLE_AFTER", value_parser = parse_duration, default_value = "5d")]
    pub disable_after: Duration,

    /// How long events are kept (the contract promises at least 7 days), with their deliveries:
    /// a day's are dropped whole once the day is this long past, so they stay up to a day longer
    #[arg(id = "events_retention", long = "events-retention", env = "EVENTS_RETENTION", value_parser = parse_duration, default_value = "7d")]
    pub events_retention: Duration,

    /// How long the webhook attempt log is kept
    #[arg(id = "webhook_attempts_retention", long = "webhook-attempts-retention", env = "WEBHOOK_ATTEMPTS_RETENTION", value_parser = parse_duration, default_value = "30d")]
    pub attempts_retention: Duration,

    /// How often the event log's days past their retention are dropped (and days ahead added)
    #[arg(id = "events_purge_interval", long = "events-purge-interval", env = "EVENTS_PURGE_INTERVAL", value_parser = parse_duration, default_value = "10m")]
    pub purge_interval: Duration,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        from_args(&[])
    }
}

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
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        from_args(&[])
    }
}

/// Limits of one parse, which runs in an isolated child process.
#[derive(Debug, Clone, Args)]
pub struct ParseConfig {
    #[command(flatten)]
    pub limits: ParseLimits,

    /// The executable run as the parser child (default: this worker binary itself)
    #[arg(long = "parser-exe", env = "PARSER_EXE")]
    pub parser_exe: Option<PathBuf>,
}

impl Default for ParseConfig {
    fn default() -> Self {
        from_args(&[])
    }
}

/// `worker task …`.
#[derive(Debug, Args)]
pub struct TaskArgs {
    #[command(flatten)]
    pub database: DatabaseConfig,

    #[command(flatten)]
    pub telemetry: TelemetryConfig,

    #[command(subcommand)]
    pub action: TaskAction,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum TaskAction {
    /// Print a task with its timeline, deliveries, progress, failed attempts and trace id, as
    /// JSON (any tenant's: this is the operator's view)
    Show {
        /// The task's id.
        id: uuid::Uuid,
    },
}

/// `worker outbox …`.
#[derive(Debug, Args)]
pub struct OutboxArgs {
    #[command(flatten)]
    pub database: DatabaseConfig,

    #[command(flatten)]
    pub telemetry: TelemetryConfig,

    #[command(subcommand)]
    pub action: OutboxAction,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum OutboxAction {
    /// Print how many messages are in each status and the oldest of each (JSON)
    Stats,
    /// Give every DEAD message a fresh set of attempts
    RequeueDead,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_defaults_are_the_documented_ones() {
        let cli = Cli::try_parse_from([
            "worker",
            "run",
            "--database-url",
            "postgres://x@localhost/db",
        ]);
        let Ok(Cli {
            command: Command::Run(run),
        }) = cli
        else {
            panic!("run did not parse");
        };
        assert_eq!(run.role, Role::All);
        assert!(!run.drain);
        assert_eq!(run.shutdown_grace, Duration::from_secs(25));
        assert_eq!(run.metrics_addr, None);
        assert_eq!(DEFAULT_METRICS_ADDR.to_string(), "127.0.0.1:9091");
        assert_eq!(run.storage.queue_name, "parse-tasks");
        assert_eq!(run.storage.blob_container, "uploads");
        assert_eq!(run.consumer.max_dequeue_count, 5);
        assert_eq!(run.consumer.batch_size, 32);
        assert_eq!(run.relay.encoding, MessageEncoding::Base64);
        assert_eq!(run.bounds.max_runtime, None);
        assert_eq!(run.bounds.max_messages, None);
    }

    #[test]
    fn job_bounds_are_a_duration_and_a_count() {
        let cli = Cli::try_parse_from([
            "worker",
            "run",
            "--database-url",
            "postgres://x@localhost/db",
            "--max-runtime",
            "1h 30m",
            "--max-messages",
            "500",
        ]);
        let Ok(Cli {
            command: Command::Run(run),
        }) = cli
        else {
            panic!("run did not parse");
        };
        assert_eq!(run.bounds.max_runtime, Some(Duration::from_secs(5400)));
        assert_eq!(run.bounds.max_messages, Some(500));
        let zero = Cli::try_parse_from([
            "worker",
            "run",
            "--database-url",
            "postgres://x@localhost/db",
            "--max-messages",
            "0",
        ]);
        assert!(zero.is_err(), "a bound of 0 messages would never start");
    }

    #[test]
    fn a_receive_batch_over_32_is_refused() {
        let cli = Cli::try_parse_from([
            "worker",
            "run",
            "--database-url",
            "postgres://x@localhost/db",
            "--consumer-batch-size",
            "33",
        ]);
        assert!(cli.is_err());
    }
}
