//! The OpenTelemetry tracer behind `tracing`: an SDK tracer provider that always makes spans
//! (so trace ids exist for logs, lineage and the queue hop even when nothing is exported) and
//! exports them in batches over OTLP when an endpoint is configured; and then also a meter
//! provider that pushes the metrics ([`crate::metrics::push`]).

use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use super::TelemetryConfig;
use crate::metrics::push::Push;

/// How long a job replica waits, at exit, for its last spans (and metrics) to be exported.
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

/// `OTEL_METRICS_EXPORTER`: whether metrics are also pushed when an OTLP endpoint is set (the
/// standard's default), or only served on `/metrics` (`none`: e.g. an api that Prometheus
/// scrapes, sending only its traces to the collector).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricsExporter {
    #[default]
    Otlp,
    None,
}

/// An OTLP exporter of one signal (`SpanExporter`, `MetricExporter`) for the configured protocol.
/// The SDK reads the endpoint and the other `OTEL_EXPORTER_OTLP_*` variables itself and appends
/// the signal's path (`/v1/traces`, `/v1/metrics`) for HTTP; gRPC takes the endpoint as is.
macro_rules! otlp_exporter {
    ($signal:ty, $protocol:expr, $endpoint:expr) => {
        match $protocol {
            OtlpProtocol::Grpc => <$signal>::builder()
                .with_tonic()
                .with_endpoint($endpoint)
                .build(),
            OtlpProtocol::HttpProtobuf => <$signal>::builder().with_http().build(),
        }
    };
}

/// The process's tracer and, when pushing, its meter; [`Telemetry::shutdown`] flushes both.
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

impl Telemetry {
    pub(super) fn disabled() -> Self {
        Self {
            tracer: None,
            meter: None,
        }
    }

    pub(super) fn new(cfg: &TelemetryConfig, default_service_name: &str) -> Self {
        let service = cfg
            .service_name
            .clone()
            .unwrap_or_else(|| default_service_name.to_owned());
        // Each process is its own instance: job replicas run side by side, and their cumulative
        // metric series must not be mistaken for one another's.
        let resource = Resource::builder()
            .with_service_name(service)
            .with_attribute(KeyValue::new(
                "service.instance.id",
                uuid::Uuid::now_v7().to_string(),
            ))
            .build();
        let mut tracer = SdkTracerProvider::builder().with_resource(resource.clone());
        let mut meter = None;
        if let Some(endpoint) = cfg.otlp_endpoint.as_deref().filter(|e| !e.is_empty()) {
            match otlp_exporter!(
                opentelemetry_otlp::SpanExporter,
                cfg.otlp_protocol,
                endpoint
            ) {
                Ok(exporter) => tracer = tracer.with_batch_exporter(exporter),
                Err(e) => eprintln!("telemetry: traces will not be exported: {e}"),
            }
            if cfg.metrics_exporter == MetricsExporter::Otlp {
                match otlp_exporter!(
                    opentelemetry_otlp::MetricExporter,
                    cfg.otlp_protocol,
                    endpoint
                ) {
                    Ok(exporter) => {
                        meter = Some(
                            SdkMeterProvider::builder()
                                .with_resource(resource)
                                .with_periodic_exporter(exporter)
                                .build(),
                        );
                    }
                    Err(e) => eprintln!("telemetry: metrics will not be pushed: {e}"),
                }
            }
        }
        Self {
            tracer: Some(tracer.build()),
            meter,
        }
    }

    /// Installs the process-wide metrics recorder, pushing through the meter when there is one.
    pub(super) fn install_metrics(&self) {
        let push = self
            .meter
            .as_ref()
            .map(|provider| Push::new(provider.meter("sheetrelay")));
        crate::metrics::install(push);
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans (none when disabled).
    pub(super) fn layer<S>(&self) -> Option<impl Layer<S>>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.tracer.as_ref()?.tracer("sheetrelay");
        // Spans find their parents through `tracing`'s span tree and the propagation reads
        // span extensions, so nothing here needs the OpenTelemetry context made current on
        // every poll of every instrumented future, nor idle/busy clocks and thread ids per span:
        // three costs per enter and exit that the telemetry-overhead benchmark pays for
        // nothing.
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_context_activation(false)
                .with_tracked_inactivity(false)
                .with_threads(false),
        )
    }

    pub(super) fn install_propagator(&self) {
        if self.tracer.is_some() {
            opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        }
    }

    /// Exports what is still buffered (spans, and the metrics' last values) and stops the
    /// exporters. Blocks (up to a few seconds each): call it from a blocking context, e.g.
    /// `tokio::task::spawn_blocking`.
    pub fn shutdown(self) {
        if let Some(provider) = self.tracer {
            if let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
                eprintln!("telemetry: the last spans may not have been exported: {e}");
            }
        }
        if let Some(provider) = self.meter {
            if let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
                eprintln!("telemetry: the last metrics may not have been pushed: {e}");
            }
        }
    }
}
