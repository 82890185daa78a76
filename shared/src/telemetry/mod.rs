//! Logs and traces for both binaries. Logs: `RUST_LOG` filters, `LOG_FORMAT=json` for log
//! collectors, `text` for people, on stderr; field names are stable snake_case (`task_id`,
//! `source_file_id`, `outbox_message_id`, `attempt`). Traces: every `tracing` span is also an
//! OpenTelemetry span, exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the SDK
//! reads it and the other standard `OTEL_EXPORTER_OTLP_*` variables itself), and every log line
//! inside a span carries its `trace_id` and `span_id`. One upload is one trace: the api stores the
//! upload's W3C `traceparent` with its outbox message, and the relay and the consumer continue it
//! ([`propagation`]). Metrics: with the same endpoint, also pushed over OTLP
//! ([`crate::metrics::push`]) unless `OTEL_METRICS_EXPORTER=none`.

mod ids;
mod otel;
pub mod propagation;

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{fmt, EnvFilter, Layer as _};

pub use otel::{MetricsExporter, OtlpProtocol, Telemetry};

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
    /// OTLP endpoint to export traces to (unset: traces are not exported; trace ids are still
    /// made, logged and carried across the queue)
    #[arg(long = "otel-endpoint", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// OTLP transport: grpc (Azure Container Apps' managed agent) or http/protobuf
    #[arg(long = "otel-protocol", env = "OTEL_EXPORTER_OTLP_PROTOCOL", value_enum, default_value_t = OtlpProtocol::HttpProtobuf)]
    pub otlp_protocol: OtlpProtocol,
    /// Push metrics over OTLP too when an endpoint is set (otlp), or only serve /metrics (none)
    #[arg(long = "otel-metrics-exporter", env = "OTEL_METRICS_EXPORTER", value_enum, default_value_t = MetricsExporter::Otlp)]
    pub metrics_exporter: MetricsExporter,
    /// Service name on exported spans and metrics (default: sheetrelay-api / sheetrelay-worker)
    #[arg(long = "otel-service-name", env = "OTEL_SERVICE_NAME")]
    pub service_name: Option<String>,
    /// Turn OpenTelemetry off altogether (no spans, no trace ids, no metrics push; for measuring
    /// what tracing costs). `/metrics` is still served.
    #[arg(
        long = "otel-sdk-disabled",
        env = "OTEL_SDK_DISABLED",
        default_value_t = false
    )]
    pub otel_disabled: bool,
}

impl TelemetryConfig {
    /// Text logs, no trace export: what tests build.
    pub fn logs_only() -> Self {
        Self {
            log_format: LogFormat::Text,
            otlp_endpoint: None,
            otlp_protocol: OtlpProtocol::HttpProtobuf,
            metrics_exporter: MetricsExporter::Otlp,
            service_name: None,
            otel_disabled: false,
        }
    }
}

/// Installs the global subscriber (logs on stderr, so a command's stdout carries only its
/// output: `api keys create` prints the key there and nothing else; colours only on a terminal)
/// and the tracer. Safe to call more than once (later calls install nothing), which lets tests
/// start several services in one process. Then logs the deprecated settings found while the
/// configuration was read ([`crate::config::deprecated`]). Keep the returned [`Telemetry`] and
/// call [`Telemetry::shutdown`] before the process exits, so the last spans are exported.
pub fn init(cfg: &TelemetryConfig, default_service_name: &str) -> Telemetry {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = match cfg.log_format {
        LogFormat::Json => fmt::layer()
            .json()
            .flatten_event(true)
            .with_target(false)
            .with_writer(std::io::stderr)
            .map_event_format(ids::WithTraceIds::json)
            .boxed(),
        LogFormat::Text => fmt::layer()
            .with_target(false)
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .map_event_format(ids::WithTraceIds::text)
            .boxed(),
    };
    let telemetry = if cfg.otel_disabled {
        Telemetry::disabled()
    } else {
        Telemetry::new(cfg, default_service_name)
    };
    let installed = tracing_subscriber::registry()
        .with(telemetry.layer())
        .with(ids::TraceIdsLayer)
        .with(logs)
        .with(filter)
        .try_init();
    if installed.is_ok() {
        telemetry.install_propagator();
        telemetry.install_metrics();
    }
    for message in crate::config::take_deprecations() {
        tracing::warn!("{message}");
    }
    telemetry
}
