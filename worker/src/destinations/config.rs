//! The settings of destination delivery, flattened into `worker run`'s
//! ([`crate::config::RunConfig`]). Retries follow `WEBHOOK_RETRY_SCHEDULE` and requests
//! `WEBHOOK_TIMEOUT` (the webhook settings, read from [`crate::webhooks::config`]).

use std::time::Duration;

use clap::Args;
use shared::config::{from_args, parse_duration};

/// Settings of destination delivery.
#[derive(Debug, Clone, Args)]
pub struct DestinationsConfig {
    /// Deliveries in flight at once over all destinations (per worker); each is a whole file
    #[arg(id = "destination_max_in_flight", value_name = "N",
          long = "destination-max-in-flight", env = "DESTINATION_MAX_IN_FLIGHT", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_in_flight: u32,

    /// Deliveries in flight at once to one destination (per worker)
    #[arg(id = "destination_concurrency", value_name = "N",
          long = "destination-concurrency", env = "DESTINATION_CONCURRENCY", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub concurrency: u32,

    /// How long a claim on a delivery lasts; renewed every third of it while it is delivered
    #[arg(id = "destination_lease", long = "destination-lease", env = "DESTINATION_LEASE", value_parser = parse_duration, default_value = "30s")]
    pub lease: Duration,

    /// Fallback poll interval when no NOTIFY arrives
    #[arg(id = "destination_poll_interval", long = "destination-poll-interval", env = "DESTINATION_POLL_INTERVAL", value_parser = parse_duration, default_value = "5s")]
    pub poll_interval: Duration,

    /// A destination whose every delivery has failed for this long is disabled (`failing`)
    #[arg(id = "destination_disable_after", long = "destination-disable-after", env = "DESTINATION_DISABLE_AFTER", value_parser = parse_duration, default_value = "5d")]
    pub disable_after: Duration,

    /// How long delivered and dead deliveries are listed before the maintenance loop prunes
    /// them
    #[arg(id = "destination_deliveries_retention", long = "destination-deliveries-retention", env = "DESTINATION_DELIVERIES_RETENTION", value_parser = parse_duration, default_value = "30d")]
    pub retention: Duration,
}

impl Default for DestinationsConfig {
    fn default() -> Self {
        from_args(&[])
    }
}
