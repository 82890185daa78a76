//! The api's configuration: env vars and flags, documented by `api --help`.

use std::net::SocketAddr;

use shared::config::{DatabaseConfig, StorageConfig, TelemetryConfig};

#[derive(Debug, Clone, clap::Parser)]
#[command(name = "api", version, about = "sheetrelay upload API")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub config: Config,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Serve HTTP (the default): applies pending migrations and creates the container first.
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
}

#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    #[command(flatten)]
    pub database: DatabaseConfig,
    #[command(flatten)]
    pub storage: StorageConfig,
    #[command(flatten)]
    pub telemetry: TelemetryConfig,
    /// Address to listen on.
    #[arg(long, env = "LISTEN_ADDR", default_value = "0.0.0.0:8080")]
    pub listen_addr: SocketAddr,
    /// Largest accepted upload, in bytes (the file part; multipart framing is extra).
    #[arg(long, env = "MAX_UPLOAD_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub max_upload_bytes: u64,
    /// How long in-flight requests may take to finish after SIGTERM, in seconds.
    #[arg(long, env = "SHUTDOWN_GRACE_SECS", default_value_t = 25)]
    pub shutdown_grace_secs: u64,
}
