//! The worker: an outbox relay (Postgres → Azure Queue Storage), a queue consumer (queue → parse
//! → rows), webhook delivery (events → their endpoints) and destination delivery (finished
//! files' rows → the tenants' containers and row webhooks), run side by side under one
//! supervisor ([`supervisor`]). The relay, webhook and destination delivery are each a claim
//! loop ([`claim`]); the housekeeping (retention, purges, partitions, expiries) runs in the
//! maintenance loop, a file per job ([`maintenance`]). Each loop owns its settings and metrics;
//! the relay and the consumer of one process share a [`link::Link`]. `main` is a thin shell
//! around [`run`]; tests drive [`relay::run_once`], [`webhooks::run_once`],
//! [`destinations::run_once`] and
//! [`consumer::Consumer::run_once`] directly.

// Product functions stay short enough to read at once (clippy's default, 100 lines); the
// workspace lints cannot be extended per crate, so the lint is switched on here.
#![warn(clippy::too_many_lines)]

pub mod bounds;
pub mod claim;
pub mod config;
pub mod consumer;
pub mod destinations;
pub mod hooks;
pub mod link;
pub mod maintenance;
pub mod metrics;
pub mod outbox_cli;
pub mod parse;
pub mod relay;
pub mod retry;
pub mod sources;
pub mod supervisor;
pub mod task_cli;
pub mod tenant_container;
pub mod webhooks;

use tokio_util::sync::CancellationToken;

pub use supervisor::run;

/// The two stages of a graceful shutdown, shared by both loops.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    /// Stop claiming and receiving; finish what is in hand.
    pub stop: CancellationToken,
    /// The grace period is over: abandon in-flight work and release it (outbox rows back to
    /// PENDING, tasks back to PENDING, messages visible again).
    pub abort: CancellationToken,
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }
}
