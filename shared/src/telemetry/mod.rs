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

/// The crates of the Azure SDK. Its HTTP pipeline logs each failed try of a request at INFO
/// (`<== Failed response: { url: …, error: … }` from `typespec_client_core`'s logging policy),
/// several lines a second while storage is unreachable; our loops log the outage itself, once
/// when it starts and once when it ends.
const SDK_TARGETS: [&str; 7] = [
    "typespec_client_core",
    "typespec",
    "azure_core",
    "azure_identity",
    "azure_storage_blob",
    "azure_storage_queue",
    "azure_storage_common",
];

/// The log filter for a `RUST_LOG` of `rust_log` (unset or invalid: `info`), with the Azure SDK's
/// own lines ([`SDK_TARGETS`]) held at `warn`: at INFO they would be one line per retry. They
/// show again when `RUST_LOG` names an SDK crate (`RUST_LOG=info,typespec_client_core=info`) or
/// asks for `debug` or `trace` everywhere.
fn log_filter(rust_log: Option<&str>) -> EnvFilter {
    let spec = rust_log
        .filter(|s| EnvFilter::try_new(s).is_ok())
        .unwrap_or("info");
    let everything_verbose = spec
        .split(',')
        .any(|d| matches!(d.trim().to_ascii_lowercase().as_str(), "debug" | "trace"));
    let mut directives = spec.to_owned();
    if !everything_verbose {
        for target in SDK_TARGETS {
            if !spec.contains(target) {
                directives.push_str(&format!(",{target}=warn"));
            }
        }
    }
    EnvFilter::new(directives)
}

/// Installs the global subscriber (logs on stderr, so a command's stdout carries only its
/// output: `api keys create` prints the key there and nothing else; colours only on a terminal)
/// and the tracer. Safe to call more than once (later calls install nothing), which lets tests
/// start several services in one process. Then logs the deprecated settings found while the
/// configuration was read ([`crate::config::deprecated`]). Keep the returned [`Telemetry`] and
/// call [`Telemetry::shutdown`] before the process exits, so the last spans are exported.
pub fn init(cfg: &TelemetryConfig, default_service_name: &str) -> Telemetry {
    let filter = log_filter(std::env::var(EnvFilter::DEFAULT_ENV).ok().as_deref());
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

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Where a test subscriber writes its lines.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What a subscriber filtered by [`log_filter`] for `rust_log` writes while `emit` runs.
    fn logged(rust_log: Option<&str>, emit: impl FnOnce()) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::registry()
            .with(
                fmt::layer()
                    .with_ansi(false)
                    .with_writer(move || writer.clone()),
            )
            .with(log_filter(rust_log));
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = captured.0.lock().expect("lock").clone();
        String::from_utf8(bytes).expect("utf-8")
    }

    /// A failed try as the SDK's logging policy logs it (its target, its level, its text), and
    /// the outage as our loops log it.
    fn an_outage() {
        tracing::info!(
            target: "typespec_client_core::http::policies::logging",
            "<== Failed response: {{ url: http://127.0.0.1:9/q, error: failed to execute reqwest request }}"
        );
        tracing::warn!(
            target: "worker::consumer::run",
            "queue unavailable: receive failed; backing off until it answers"
        );
    }

    #[test]
    fn the_sdks_retry_lines_stay_out_of_info_and_our_warning_does_not() {
        for rust_log in [
            None,
            Some("info"),
            Some("warn,worker=debug"),
            Some("not a = filter["),
        ] {
            let out = logged(rust_log, an_outage);
            assert!(!out.contains("Failed response"), "{rust_log:?}: {out}");
            assert!(out.contains("queue unavailable"), "{rust_log:?}: {out}");
        }
    }

    #[test]
    fn the_sdks_lines_show_when_rust_log_asks_for_them() {
        for rust_log in ["debug", "info,typespec_client_core=info", "trace,hyper=off"] {
            let out = logged(Some(rust_log), an_outage);
            assert!(out.contains("Failed response"), "{rust_log}: {out}");
            assert!(out.contains("queue unavailable"), "{rust_log}: {out}");
        }
    }

    #[test]
    fn an_sdk_warning_still_shows_at_info() {
        let out = logged(Some("info"), || {
            tracing::warn!(target: "typespec_client_core::http::clients::reqwest", "header value is not utf8");
        });
        assert!(out.contains("header value is not utf8"), "{out}");
    }
}
