//! Postgres access. Repositories are free functions that take an executor, so one transaction
//! can span several tables (the consumer stores a file's rows and completes its task in one);
//! every query is checked at compile time against the schema in `migrations/` (offline data in
//! `.sqlx/`).

pub mod api_keys;
pub mod corrections;
pub mod deliveries;
pub mod destination_deliveries;
pub mod destinations;
pub mod event_log;
pub mod events;
pub mod hooks;
pub mod keys;
pub mod layouts;
pub mod learned_columns;
pub mod learned_values;
pub mod limits;
pub mod outbox;
pub mod overlay;
pub mod partitions;
pub mod purges;
pub mod remembered_mappings;
pub mod removal;
pub mod resumable_uploads;
pub mod reviews;
pub mod row_store;
pub mod rows;
pub mod sessions;
pub mod source_blobs;
pub mod source_files;
pub mod sources;
pub mod tasks;
pub mod templates;
pub mod uploads;
pub mod validation;
pub mod webhooks;

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
    /// How long a request waits for a pooled connection before answering 503
    #[arg(
        long = "database-acquire-timeout",
        env = "DATABASE_ACQUIRE_TIMEOUT",
        value_parser = crate::config::parse_duration,
        default_value = "3s"
    )]
    pub acquire_timeout: Duration,
    /// The old DATABASE_ACQUIRE_TIMEOUT, in milliseconds: read for one release, with a warning.
    #[arg(
        long = "database-acquire-timeout-ms",
        env = "DATABASE_ACQUIRE_TIMEOUT_MS",
        hide = true,
        conflicts_with = "acquire_timeout",
        value_parser = deprecated_acquire_timeout_ms
    )]
    pub acquire_timeout_ms: Option<Duration>,
}

fn deprecated_acquire_timeout_ms(ms: &str) -> Result<Duration, String> {
    let ms: u64 = ms
        .trim()
        .parse()
        .map_err(|_| format!("{ms:?} is not a number of milliseconds"))?;
    crate::config::deprecated(format!(
        "DATABASE_ACQUIRE_TIMEOUT_MS is deprecated and will be removed in the next release: \
         use DATABASE_ACQUIRE_TIMEOUT={ms}ms"
    ));
    Ok(Duration::from_millis(ms))
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
            .field("acquire_timeout", &self.acquire_timeout())
            .finish()
    }
}

impl DatabaseConfig {
    /// The settings for `url`, every other one at its default.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..crate::config::from_args(&["--database-url", ""])
        }
    }

    /// How long a query waits for a pooled connection (the deprecated name when it is set).
    pub fn acquire_timeout(&self) -> Duration {
        self.acquire_timeout_ms.unwrap_or(self.acquire_timeout)
    }

    /// A lazily connecting pool: start-up never fails because Postgres is briefly away, and every
    /// query waits at most [`Self::acquire_timeout`] for a connection.
    pub fn pool(&self) -> Result<PgPool, sqlx::Error> {
        let options: PgConnectOptions = self.url.parse()?;
        Ok(PgPoolOptions::new()
            .max_connections(self.max_connections)
            .acquire_timeout(self.acquire_timeout())
            .connect_lazy_with(options))
    }
}

/// Where a queue table stands for a claim loop with nothing to claim: claims held by other
/// loops, and when the next row comes due. The outbox and the webhook deliveries both answer it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Due {
    /// PROCESSING rows whose claim has not expired: a live loop is sending them, or a dead one
    /// held them and they are claimable once the claim runs out.
    pub held: i64,
    /// Seconds until the next row is claimable (a retry comes due or a claim expires), at least
    /// 0; `None` when nothing is waiting at all.
    pub next_in_secs: Option<f64>,
}

/// The embedded migrations. `sqlx` takes a Postgres advisory lock while applying them, so many
/// api processes starting at once are safe.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");
