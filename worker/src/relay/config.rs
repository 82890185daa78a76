//! The relay's settings, flattened into `worker run`'s ([`crate::config::RunConfig`]).

use std::time::Duration;

use clap::Args;
use shared::config::{from_args, parse_duration};
use shared::db::outbox::DEFAULT_MAX_ATTEMPTS;
use shared::domain::MessageEncoding;

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
