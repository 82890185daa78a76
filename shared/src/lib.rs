//! Code shared by the `api` and `worker` binaries: configuration, telemetry and metrics, graceful
//! shutdown, the domain types, the Postgres repositories and the Azure Storage clients.

// Functions short enough to read at once (with the workspace's lints, from Cargo.toml).
#![warn(clippy::too_many_lines)]

pub mod blob_events;
pub mod codes;
pub mod config;
pub mod db;
pub mod docs;
pub mod domain;
pub mod failure;
pub mod metrics;
pub mod shutdown;
pub mod storage;

/// `shared::code_enum!`: the one way to declare a vocabulary ([`::codes`]).
pub use ::codes::code_enum;
pub mod task_view;
pub mod telemetry;
pub mod webhooks;
