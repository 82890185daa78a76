//! The OpenTelemetry tracer behind `tracing`: an SDK tracer provider that always makes spans
//! (so trace ids exist for logs, lineage and the queue hop even when nothing is exported) and
//! exports them in batches over OTLP when an endpoint is configured.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use super::TelemetryConfig;

/// How long a job replica waits, at exit, for its last spans to be exported.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// `OTEL_EXPORTER_OTLP_PROTOCOL`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OtlpProtocol {
    #[value(name = "grpc")]
    Grpc,
    #[default]
    #[value(name = "http/protobuf")]
    HttpProtobuf,
}

/// The process's tracer; [`Telemetry::shutdown`] flushes it.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    pub(super) fn disabled() -> Self {
        Self { provider: None }
    }

    pub(super) fn new(cfg: &TelemetryConfig, default_service_name: &str) -> Self {
        let service = cfg
            .service_name
            .clone()
            .unwrap_or_else(|| default_service_name.to_owned());
        let mut builder = SdkTracerProvider::builder()
            .with_resource(Resource::builder().with_service_name(service).build());
        if let Some(endpoint) = cfg.otlp_endpoint.as_deref().filter(|e| !e.is_empty()) {
            // The SDK reads the endpoint and the other OTEL_EXPORTER_OTLP_* variables itself;
            // the endpoint is passed only for gRPC, whose builder takes it as is.
            let exporter = match cfg.otlp_protocol {
                OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(endpoint)
                    .build(),
                OtlpProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .build(),
            };
            match exporter {
                Ok(exporter) => builder = builder.with_batch_exporter(exporter),
                Err(e) => eprintln!("telemetry: traces will not be exported: {e}"),
            }
        }
        Self {
            provider: Some(builder.build()),
        }
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans (none when disabled).
    pub(super) fn layer<S>(&self) -> Option<impl Layer<S>>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.provider.as_ref()?.tracer("sheetrelay");
        Some(tracing_opentelemetry::layer().with_tracer(tracer))
    }

    pub(super) fn install_propagator(&self) {
        if self.provider.is_some() {
            opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        }
    }

    /// Exports what is still buffered and stops the exporter. Blocks (up to a few seconds):
    /// call it from a blocking context, e.g. `tokio::task::spawn_blocking`.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
                eprintln!("telemetry: the last spans may not have been exported: {e}");
            }
        }
    }
}
