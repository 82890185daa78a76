//! Configuration sections shared by both binaries. Each binary flattens them into its own
//! `clap` parser, so every setting is an env var and a flag documented by `--help`.

pub use crate::db::DatabaseConfig;
pub use crate::storage::StorageConfig;
pub use crate::telemetry::TelemetryConfig;
