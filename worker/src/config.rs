//! The worker's command line: every setting is an environment variable and a flag, documented by
//! `worker --help` / `worker run --help`. Shared sections (database, storage, telemetry) are
//! flattened from `shared`; tests build these structs directly (see the `Default`-like
//! constructors on [`RelayConfig`] and [`ConsumerConfig`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use shared::config::{DatabaseConfig, TelemetryConfig};
use shared::domain::MessageEncoding;
use shared::storage::StorageConfig;

use crate::parse::isolate::{ChildArgs, CHILD_SUBCOMMAND};
use crate::parse::ParseLimits;

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
    /// Parse the files named on stdin, as the consumer's isolated child (not for people).
    #[command(name = CHILD_SUBCOMMAND, hide = true)]
    ParseChild(ChildArgs),
}

/// Which loops this process runs, so they can be scaled apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Role {
    /// Both the relay and the consumer.
    #[default]
    All,
    /// Only the outbox relay.
    Relay,
    /// Only the queue consumer.
    Consumer,
}

impl Role {
    pub fn runs_relay(self) -> bool {
        matches!(self, Role::All | Role::Relay)
    }

    pub fn runs_consumer(self) -> bool {
        matches!(self, Role::All | Role::Consumer)
    }
}

/// `worker run`.
#[derive(Debug, Clone, Args)]
pub struct RunConfig {
    /// Which loops to run: all, relay or consumer
    #[arg(long, env = "WORKER_ROLE", value_enum, default_value_t = Role::All)]
    pub role: Role,

    /// Process until the outbox has nothing claimable and the queue stays empty, then exit 0
    /// (for event-driven container jobs)
    #[arg(long, env = "WORKER_DRAIN", default_value_t = false)]
    pub drain: bool,

    /// On SIGTERM/Ctrl-C: how long in-flight work may take to finish before it is released
    #[arg(long, env = "SHUTDOWN_GRACE", value_parser = parse_duration, default_value = "25s")]
    pub shutdown_grace: Duration,

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

    /// How long a claimed batch is ours; after that another relay may claim it (crash rescue)
    #[arg(long = "relay-lease", env = "RELAY_LEASE", value_parser = parse_duration, default_value = "60s")]
    pub lease: Duration,

    /// Send attempts before a message is DEAD (capped by the row's own max_attempts)
    #[arg(long = "relay-max-attempts", env = "RELAY_MAX_ATTEMPTS", default_value_t = 10,
          value_parser = clap::value_parser!(i32).range(1..))]
    pub max_attempts: i32,

    /// First retry delay after a failed send; doubles with each attempt (with jitter)
    #[arg(long = "relay-backoff-base", env = "RELAY_BACKOFF_BASE", value_parser = parse_duration, default_value = "1s")]
    pub backoff_base: Duration,

    /// Longest retry delay after a failed send
    #[arg(long = "relay-backoff-cap", env = "RELAY_BACKOFF_CAP", value_parser = parse_duration, default_value = "5m")]
    pub backoff_cap: Duration,

    /// Fallback poll interval when no NOTIFY arrives (and while LISTEN is reconnecting)
    #[arg(long = "relay-poll-interval", env = "RELAY_POLL_INTERVAL", value_parser = parse_duration, default_value = "5s")]
    pub poll_interval: Duration,

    /// How long COMPLETED outbox messages are kept before they are deleted
    #[arg(long = "outbox-retention", env = "OUTBOX_RETENTION", value_parser = parse_duration, default_value = "7d")]
    pub retention: Duration,

    /// How often the retention purge runs
    #[arg(long = "outbox-purge-interval", env = "OUTBOX_PURGE_INTERVAL", value_parser = parse_duration, default_value = "10m")]
    pub purge_interval: Duration,
}

impl Default for RelayConfig {
    fn default() -> Self {
        Self {
            encoding: MessageEncoding::Base64,
            batch_size: 256,
            concurrency: 32,
            lease: Duration::from_secs(60),
            max_attempts: 10,
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(300),
            poll_interval: Duration::from_secs(5),
            retention: Duration::from_secs(7 * 86_400),
            purge_interval: Duration::from_secs(600),
        }
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

    /// How long a received message stays invisible; renewed during long parses
    #[arg(long = "visibility-timeout", env = "VISIBILITY_TIMEOUT", value_parser = parse_duration, default_value = "60s")]
    pub visibility_timeout: Duration,

    /// How long a started task is ours (renewed while parsing); a dead consumer's task is
    /// restartable after it
    #[arg(long = "task-lease", env = "TASK_LEASE", value_parser = parse_duration, default_value = "60s")]
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

    /// Longest wait before polling an empty queue again
    #[arg(long = "idle-backoff-max", env = "IDLE_BACKOFF_MAX", value_parser = parse_duration, default_value = "3s")]
    pub idle_backoff_max: Duration,

    /// After a transient failure, a message reappears after this (doubling per delivery)
    #[arg(long = "retry-backoff-base", env = "RETRY_BACKOFF_BASE", value_parser = parse_duration, default_value = "5s")]
    pub retry_backoff_base: Duration,

    /// Longest delay before a transiently failed message reappears
    #[arg(long = "retry-backoff-cap", env = "RETRY_BACKOFF_CAP", value_parser = parse_duration, default_value = "5m")]
    pub retry_backoff_cap: Duration,

    /// Directory for downloaded blobs (default: the system temp directory)
    #[arg(long = "download-dir", env = "DOWNLOAD_DIR")]
    pub download_dir: Option<PathBuf>,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            batch_size: 32,
            concurrency: 8,
            visibility_timeout: Duration::from_secs(60),
            task_lease: Duration::from_secs(60),
            max_dequeue_count: 5,
            idle_backoff_min: Duration::from_millis(50),
            idle_backoff_max: Duration::from_secs(3),
            retry_backoff_base: Duration::from_secs(5),
            retry_backoff_cap: Duration::from_secs(300),
            download_dir: None,
        }
    }
}

/// Limits of one parse, which runs in an isolated child process.
#[derive(Debug, Clone, Args)]
pub struct ParseConfig {
    /// Maximum data rows in one file (all sheets)
    #[arg(long = "parse-max-rows", env = "PARSE_MAX_ROWS", default_value_t = ParseLimits::default().max_rows)]
    pub max_rows: u64,

    /// Maximum columns in one sheet
    #[arg(long = "parse-max-columns", env = "PARSE_MAX_COLUMNS", default_value_t = ParseLimits::default().max_columns)]
    pub max_columns: u32,

    /// Maximum bytes of one cell's text
    #[arg(long = "parse-max-cell-bytes", env = "PARSE_MAX_CELL_BYTES", default_value_t = ParseLimits::default().max_cell_bytes)]
    pub max_cell_bytes: usize,

    /// Zip formats: the most their entries may inflate to, as a multiple of the file's size
    /// (zip bombs; applies once the inflated total passes 16 MiB)
    #[arg(long = "parse-max-inflate-ratio", env = "PARSE_MAX_INFLATE_RATIO", default_value_t = ParseLimits::default().max_inflate_ratio)]
    pub max_inflate_ratio: u64,

    /// Zip formats: the most their entries may inflate to in all, in bytes
    #[arg(long = "parse-max-inflated-bytes", env = "PARSE_MAX_INFLATED_BYTES", default_value_t = ParseLimits::default().max_inflated_bytes)]
    pub max_inflated_bytes: u64,

    /// Address-space limit of the parser child process, in bytes
    #[arg(long = "parse-memory-limit", env = "PARSE_MEMORY_LIMIT", default_value_t = ParseLimits::default().memory_limit_bytes)]
    pub memory_limit_bytes: u64,

    /// Wall-clock limit of one parse
    #[arg(long = "parse-timeout", env = "PARSE_TIMEOUT", value_parser = parse_duration, default_value = "10m")]
    pub timeout: Duration,

    /// The executable run as the parser child (default: this worker binary itself)
    #[arg(long = "parser-exe", env = "PARSER_EXE")]
    pub parser_exe: Option<PathBuf>,
}

impl Default for ParseConfig {
    fn default() -> Self {
        let l = ParseLimits::default();
        Self {
            max_rows: l.max_rows,
            max_columns: l.max_columns,
            max_cell_bytes: l.max_cell_bytes,
            max_inflate_ratio: l.max_inflate_ratio,
            max_inflated_bytes: l.max_inflated_bytes,
            memory_limit_bytes: l.memory_limit_bytes,
            timeout: l.timeout,
            parser_exe: None,
        }
    }
}

impl ParseConfig {
    pub fn limits(&self) -> ParseLimits {
        ParseLimits {
            max_rows: self.max_rows,
            max_columns: self.max_columns,
            max_cell_bytes: self.max_cell_bytes,
            max_inflate_ratio: self.max_inflate_ratio,
            max_inflated_bytes: self.max_inflated_bytes,
            memory_limit_bytes: self.memory_limit_bytes,
            timeout: self.timeout,
        }
    }
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

/// Parses `250ms`, `30s`, `5m`, `2h`, `7d`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86_400.0,
        other => {
            return Err(format!(
                "unknown duration unit {other:?} (use ms, s, m, h or d)"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("invalid duration {s:?}: {e}"))
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
    fn durations_take_units() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("25s"), Ok(Duration::from_secs(25)));
        assert_eq!(parse_duration("25"), Ok(Duration::from_secs(25)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn run_defaults_match_the_issue() {
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
        assert_eq!(run.storage.queue_name, "parse-tasks");
        assert_eq!(run.storage.blob_container, "uploads");
        assert_eq!(run.consumer.max_dequeue_count, 5);
        assert_eq!(run.consumer.batch_size, 32);
        assert_eq!(run.relay.encoding, MessageEncoding::Base64);
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
