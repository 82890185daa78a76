//! Postgres access. Repositories are free functions that take an executor, so one transaction
//! can span several tables (the consumer stores a file's rows and completes its task in one);
//! every query is checked at compile time against the schema in `migrations/` (offline data in
//! `.sqlx/`).

pub mod api_keys;
pub mod outbox;
pub mod rows;
pub mod source_files;
pub mod tasks;
pub mod uploads;

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

/// Postgres connection settings shared by both binaries.
#[derive(Clone, clap::Args)]
pub struct DatabaseConfig {
    /// Postgres connection URL, e.g. postgres://user:pass@host:5432/sheetrelay
    #[arg(long = "database-url", env = "DATABASE_URL")]
    pub url: String,
    /// Maximum number of pooled Postgres connections.
    #[arg(
        long = "database-max-connections",
        env = "DATABASE_MAX_CONNECTIONS",
        default_value_t = 16
    )]
    pub max_connections: u32,
    /// How long a request waits for a pooled connection before answering 503, in milliseconds.
    #[arg(
        long = "database-acquire-timeout-ms",
        env = "DATABASE_ACQUIRE_TIMEOUT_MS",
        default_value_t = 3000
    )]
    pub acquire_timeout_ms: u64,
}

impl std::fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password.
        let redacted = self
            .url
            .parse::<url::Url>()
            .map(|mut u| {
                if u.password().is_some() {
                    let _ = u.set_password(Some("***"));
                }
                u.to_string()
            })
            .unwrap_or_else(|_| "<unparseable>".into());
        f.debug_struct("DatabaseConfig")
            .field("url", &redacted)
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout_ms", &self.acquire_timeout_ms)
            .finish()
    }
}

impl DatabaseConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections: 16,
            acquire_timeout_ms: 3000,
        }
    }

    /// A lazily connecting pool: start-up never fails because Postgres is briefly away, and every
    /// query waits at most `acquire_timeout_ms` for a connection.
    pub fn pool(&self) -> Result<PgPool, sqlx::Error> {
        let options: PgConnectOptions = self.url.parse()?;
        Ok(PgPoolOptions::new()
            .max_connections(self.max_connections)
            .acquire_timeout(Duration::from_millis(self.acquire_timeout_ms))
            .connect_lazy_with(options))
    }
}

/// The embedded migrations. `sqlx` takes a Postgres advisory lock while applying them, so many
/// api processes starting at once are safe.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// True when the error means "Postgres is unreachable or overloaded" rather than "this query is
/// wrong": callers answer 503 or retry later instead of failing the work.
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_)
    ) || matches!(err, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("57P") || c.starts_with("08") || c == "53300"))
}
