//! The settings of webhook delivery and of the event log's retention, flattened into `worker
//! run`'s ([`crate::config::RunConfig`]).

use std::time::Duration;

use clap::Args;
use shared::config::{from_args, parse_duration};
use shared::webhooks::WebhookKeyConfig;

use super::schedule::RetrySchedule;

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
