//! The worker's command line: every setting is an environment variable and a flag, documented by
//! `worker --help` / `worker run --help`. Shared sections (database, storage, telemetry) are
//! flattened from `shared`, and so are the parse limits from [`ParseLimits`]. Each default is
//! written once, in its `#[arg]`; the `Default` impls tests build these structs from are those
//! defaults ([`shared::config::from_args`]). Durations are humantime strings (`250ms`, `25s`,
//! `5m`, `7d`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use shared::config::{from_args, parse_duration, DatabaseConfig, TelemetryConfig};
use shared::storage::StorageConfig;

pub use crate::consumer::config::ConsumerConfig;
pub use crate::destinations::config::DestinationsConfig;
pub use crate::maintenance::config::LifecycleConfig;
use crate::parse::isolate::{ChildArgs, CHILD_SUBCOMMAND};
use crate::parse::ParseLimits;
pub use crate::relay::config::RelayConfig;
pub use crate::sources::config::SourcesConfig;
pub use crate::webhooks::config::WebhooksConfig;

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
    /// Only webhook and destination delivery (needs WEBHOOK_SECRET_KEY, and no Azure Storage
    /// of its own).
    Webhooks,
    /// Only Blob sources: listing, Event Grid's events queue and importing (needs
    /// WEBHOOK_SECRET_KEY, which opens the sources' credentials).
    Sources,
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

    pub fn runs_sources(self) -> bool {
        matches!(self, Role::All | Role::Sources)
    }

    /// Whether the loops need Azure Storage (the queue, the blobs).
    pub fn uses_storage(self) -> bool {
        self.runs_relay() || self.runs_consumer() || self.runs_sources()
    }
}

/// `worker run`.
#[derive(Debug, Clone, Args)]
pub struct RunConfig {
    /// Which loops to run: all, relay, consumer, webhooks or sources
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
    pub destinations: DestinationsConfig,

    #[command(flatten)]
    pub sources: SourcesConfig,

    #[command(flatten)]
    pub lifecycle: LifecycleConfig,
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
    use shared::domain::MessageEncoding;

    use crate::metrics::DEFAULT_METRICS_ADDR;

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
