//! Logging set-up for both binaries: `RUST_LOG` filters, `LOG_FORMAT=json` for log collectors,
//! `text` for people. Field names are stable snake_case (`task_id`, `source_file_id`,
//! `outbox_message_id`, `attempt`) so one upload can be followed across api, relay and consumer.

use tracing_subscriber::{fmt, EnvFilter};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, clap::Args)]
pub struct TelemetryConfig {
    /// Log output format: text for people, json for log collectors.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Installs the global subscriber. Logs go to stderr, so a command's stdout carries only its
/// output (`api keys create` prints the new key there and nothing else); colours only on a
/// terminal. Safe to call more than once (later calls are no-ops), which
/// lets tests start several services in one process. Then logs the deprecated settings found
/// while the configuration was read ([`crate::config::deprecated`]).
pub fn init(cfg: &TelemetryConfig) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match cfg.log_format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    for message in crate::config::take_deprecations() {
        tracing::warn!("{message}");
    }
}
