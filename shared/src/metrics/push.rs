//! The catalogue's metrics pushed over OTLP. A worker job replica lives for one drain or one
//! bound (seconds to minutes) and exits: a Prometheus scrape every 15–60 s misses most of its
//! life and all of its last moments. So when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, the same
//! `metrics` calls that feed `/metrics` also feed an OpenTelemetry meter whose reader pushes
//! every `OTEL_METRIC_EXPORT_INTERVAL` (SDK default 60 s) and once more when the process shuts
//! its telemetry down ([`crate::telemetry::Telemetry::shutdown`]), so a replica's last counts
//! are never lost.
//!
//! Names, descriptions and histogram boundaries are the catalogue's and [`super::buckets`]: an
//! OTLP backend gets the same series as a Prometheus scrape, cumulative, one per replica (each
//! process is its own `service.instance.id`).

use metrics_opentelemetry::{OpenTelemetryMetrics, OpenTelemetryRecorder};

use super::{buckets, catalogue};

/// The OTLP side of the process-wide recorder, handed to [`super::install`].
pub struct Push {
    recorder: OpenTelemetryRecorder,
}

impl Push {
    /// Records into `meter` (from the process's meter provider, which owns the exporter).
    pub fn new(meter: opentelemetry::metrics::Meter) -> Self {
        let mut recorder = OpenTelemetryRecorder::new(OpenTelemetryMetrics::new(meter));
        for m in catalogue::ALL {
            if m.kind == catalogue::Kind::Histogram {
                recorder.set_histogram_bounds_mut(std::iter::once(m.name), buckets(m.name));
            }
        }
        Self { recorder }
    }

    pub(super) fn into_recorder(self) -> OpenTelemetryRecorder {
        self.recorder
    }
}
