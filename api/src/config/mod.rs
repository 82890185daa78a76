//! The api's configuration: env vars and flags, documented by `api --help`.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use shared::config::{DatabaseConfig, StorageConfig, TelemetryConfig};

mod entra;
pub use entra::EntraConfig;

/// Where `/metrics` listens when `METRICS_ADDR` is unset; the worker's default differs, so the
/// two run side by side on one host.
pub const DEFAULT_METRICS_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9090));

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
    /// Manage API keys (needs DATABASE_URL only).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Show or set a tenant's limits and retention, or purge a tenant (needs DATABASE_URL only).
    #[command(subcommand)]
    Tenants(TenantsCommand),
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum TenantsCommand {
    /// Set a tenant's own limits (the others keep their values, or the defaults).
    Set {
        /// The tenant (a name or an Entra tenant GUID).
        tenant: String,
        /// Uploads it may start, `<N>/s` or `<N>/min`, with a burst of N.
        #[arg(long)]
        upload_rate: Option<shared::db::limits::UploadRate>,
        /// Bytes of files it may store.
        #[arg(long)]
        storage_quota: Option<u64>,
        /// How long its files are kept, e.g. `30d` (at least 1h); `none` drops its own value,
        /// so the RETENTION setting applies again.
        #[arg(long)]
        retention: Option<shared::db::limits::Retention>,
        /// Set the limits of a tenant that owns nothing yet (no key, file, template, webhook
        /// or limits): without it such a tenant id is refused as unknown, which catches typos.
        #[arg(long)]
        new: bool,
    },
    /// Print a tenant's limits and retention (its own or the defaults), what it stores and its
    /// purge, if one was asked for, as JSON.
    Show {
        /// The tenant (a name or an Entra tenant GUID).
        tenant: String,
    },
    /// Remove everything a tenant owns: its keys stop working at once, then the worker deletes
    /// its files, blobs, rows, events, webhooks, templates, keys and limits in the background.
    Purge {
        /// The tenant (a name or an Entra tenant GUID).
        tenant: String,
        /// Wait until the worker has finished the purge, printing its progress on stderr.
        #[arg(long)]
        wait: bool,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum KeysCommand {
    /// Create a key and print it as the only line on stdout (it is shown this once).
    Create {
        /// A name that says whose key it is.
        #[arg(long)]
        name: String,
        /// The tenant the key acts for (a name or an Entra tenant GUID); default: `default`.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// List keys: id, tenant, name, the key's first characters, created, revoked.
    List,
    /// Revoke a key by id; it is refused from the next request on.
    Revoke {
        /// The key's id, as `api keys list` shows it.
        id: uuid::Uuid,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    #[command(flatten)]
    pub database: DatabaseConfig,
    #[command(flatten)]
    pub storage: StorageConfig,
    #[command(flatten)]
    pub telemetry: TelemetryConfig,
    #[command(flatten)]
    pub entra: EntraConfig,
    #[command(flatten)]
    pub http: HttpConfig,
    #[command(flatten)]
    pub events: EventsConfig,
    #[command(flatten)]
    pub webhooks: WebhooksConfig,
    #[command(flatten)]
    pub limits: LimitsConfig,
    #[command(flatten)]
    pub resumable: ResumableConfig,
    /// Address to listen on.
    #[arg(long, env = "LISTEN_ADDR", default_value = "0.0.0.0:8080")]
    pub listen_addr: SocketAddr,
    /// Address of the Prometheus `/metrics` listener, kept off the public port (unset:
    /// 127.0.0.1:9090, or a port the system picks when another process holds that one; the log
    /// says which). An address given here that cannot be bound stops the api
    #[arg(long, env = "METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Largest accepted upload, in bytes (the file part; multipart framing is extra).
    #[arg(long, env = "MAX_UPLOAD_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub max_upload_bytes: u64,
    /// How long in-flight requests may take to finish after SIGTERM.
    #[arg(long, env = "SHUTDOWN_GRACE", value_parser = shared::config::parse_duration, default_value = "25s")]
    pub shutdown_grace: Duration,
}

/// Limits of the HTTP edge: what a slow or hostile client may hold.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpConfig {
    /// A client must send a request's whole header within this time, or the connection is closed
    #[arg(long = "http-header-timeout", env = "HTTP_HEADER_TIMEOUT", value_parser = shared::config::parse_duration, default_value = "10s")]
    pub header_timeout: Duration,
    /// An upload body that sends nothing for this long is cut off, and so is an export whose client
    /// reads nothing for this long (freeing the database connection it streams from)
    #[arg(long = "http-body-idle-timeout", env = "HTTP_BODY_IDLE_TIMEOUT", value_parser = shared::config::parse_duration, default_value = "30s")]
    pub body_idle_timeout: Duration,
    /// Deadline of every request but uploads and exports (which stream for as long as they move)
    #[arg(long = "http-request-timeout", env = "HTTP_REQUEST_TIMEOUT", value_parser = shared::config::parse_duration, default_value = "30s")]
    pub request_timeout: Duration,
    /// Largest multipart part header, in bytes
    #[arg(long = "http-max-part-header-bytes", env = "HTTP_MAX_PART_HEADER_BYTES", default_value_t = 8 * 1024)]
    pub max_part_header_bytes: usize,
    /// Web origins (`https://app.example.com`, comma-separated) whose pages may call the api
    /// from a browser (CORS), resumable uploads included; unset: none (the api's own page is
    /// same-origin and needs none)
    #[arg(
        long = "http-cors-allowed-origins",
        env = "HTTP_CORS_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_allowed_origins: Vec<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        shared::config::from_args(&[])
    }
}

/// The event stream (`GET /api/v1/events/stream`).
#[derive(Debug, Clone, clap::Args)]
pub struct EventsConfig {
    /// How often an idle event stream sends a keep-alive comment
    #[arg(long = "events-keepalive", env = "EVENTS_KEEPALIVE", value_parser = shared::config::parse_duration, default_value = "15s")]
    pub keepalive: Duration,
    /// Most event streams open at once in one api process; one more is answered 503
    #[arg(long = "events-max-streams", env = "EVENTS_MAX_STREAMS", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_streams: u32,
    /// Most event streams one tenant may hold open at once in one api process; one more is
    /// answered 429, so that one tenant cannot take every place of `EVENTS_MAX_STREAMS`
    #[arg(long = "events-max-streams-per-tenant", env = "EVENTS_MAX_STREAMS_PER_TENANT",
          default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_streams_per_tenant: u32,
    /// While the api cannot LISTEN for events (Postgres restarting), how often the streams look
    /// for new events anyway
    #[arg(long = "events-poll-interval", env = "EVENTS_POLL_INTERVAL", value_parser = shared::config::parse_duration, default_value = "2s")]
    pub poll_interval: Duration,
}

impl Default for EventsConfig {
    fn default() -> Self {
        shared::config::from_args(&[])
    }
}

/// Webhook endpoints (`/api/v1/webhooks`).
#[derive(Debug, Clone, clap::Args)]
pub struct WebhooksConfig {
    #[command(flatten)]
    pub keys: shared::webhooks::WebhookKeyConfig,
    /// After a secret is rotated, how long the old one keeps signing beside the new one
    #[arg(long = "webhook-rotation-window", env = "WEBHOOK_ROTATION_WINDOW", value_parser = shared::config::parse_duration, default_value = "24h")]
    pub rotation_window: Duration,
    /// Most webhook endpoints one tenant may have
    #[arg(long = "webhook-max-endpoints", env = "WEBHOOK_MAX_ENDPOINTS", default_value_t = 50,
          value_parser = clap::value_parser!(i64).range(1..=10_000))]
    pub max_endpoints: i64,
    /// Most destinations (`/api/v1/destinations`) one tenant may have
    #[arg(long = "destination-max-per-tenant", env = "DESTINATION_MAX_PER_TENANT", default_value_t = 20,
          value_parser = clap::value_parser!(i64).range(1..=1_000))]
    pub max_destinations: i64,
    /// Most Blob sources (`/api/v1/sources`) one tenant may have
    #[arg(long = "source-max-per-tenant", env = "SOURCE_MAX_PER_TENANT", default_value_t = 20,
          value_parser = clap::value_parser!(i64).range(1..=1_000))]
    pub max_sources: i64,
}

/// Each tenant's limits, unless `api tenants set` gave it its own.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitsConfig {
    /// Uploads one tenant may start, as `<N>/s` or `<N>/min`, with a burst of N: over it the
    /// answer is `429 rate_limited` with `Retry-After`
    #[arg(long = "upload-rate", env = "UPLOAD_RATE", default_value = "600/min")]
    pub upload_rate: shared::db::limits::UploadRate,
    /// Bytes of files one tenant may store: an upload that would pass it is `403
    /// quota_exceeded`
    #[arg(long = "storage-quota-bytes", env = "STORAGE_QUOTA_BYTES",
          default_value_t = 10 * 1024 * 1024 * 1024)]
    pub storage_quota_bytes: u64,
    /// How long a tenant's files are kept (the worker deletes older ones): a duration of at
    /// least 1h, or none (kept for ever). The api reads it for `api tenants show`
    #[arg(
        id = "tenant_retention",
        long = "retention",
        env = "RETENTION",
        default_value = "none"
    )]
    pub retention: shared::db::limits::Retention,
}

/// Resumable (tus) uploads at `/api/v1/uploads`.
#[derive(Debug, Clone, clap::Args)]
pub struct ResumableConfig {
    /// Largest resumable upload, in bytes (`Tus-Max-Size`): a larger `Upload-Length` is `413`
    #[arg(id = "resumable_max_upload_bytes", long = "resumable-max-upload-bytes", env = "RESUMABLE_MAX_UPLOAD_BYTES",
          default_value_t = 5 * 1024 * 1024 * 1024)]
    pub max_upload_bytes: u64,
    /// How long an unfinished resumable upload is kept after its creation (`Upload-Expires`),
    /// and a finished one after it completes; then the worker deletes it and its staged blocks
    #[arg(long = "resumable-upload-expiry", env = "RESUMABLE_UPLOAD_EXPIRY", value_parser = shared::config::parse_duration, default_value = "24h")]
    pub expiry: Duration,
}

impl Default for ResumableConfig {
    fn default() -> Self {
        shared::config::from_args(&[])
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        shared::config::from_args(&[])
    }
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        shared::config::from_args(&[])
    }
}
