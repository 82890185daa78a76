//! Metrics for both binaries: one process-wide recorder with histogram buckets (so every
//! histogram is exported as a Prometheus histogram, which can be aggregated across replicas, and
//! never as a summary, which cannot), the `/metrics` listener both serve on `METRICS_ADDR` or
//! their own default ([`listener`]), the [`catalogue`] of every metric they export, and, when OTLP is configured, a [`push`] of the
//! same metrics (short-lived job replicas end before most scrapes would reach them).
//!
//! Code records through the `metrics` facade (`metrics::counter!(catalogue::…)`), never through
//! an exporter: the recorder installed here fans every call out to Prometheus and, when pushing,
//! to OpenTelemetry, without touching a call site.

pub mod catalogue;
pub mod listener;
pub mod push;

use std::sync::OnceLock;
use std::time::Duration;

use axum::http::header;
use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::{
    BuildError, Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Buckets of request-like durations (HTTP, storage, sends), in seconds.
pub const REQUEST_SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Buckets of waits and parses, which run from milliseconds to the parse deadline (10 min) and
/// to backlogs of an hour, in seconds.
pub const WAIT_SECONDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    1800.0, 3600.0,
];

/// Buckets of delivery counts (the poison limit, `MAX_DEQUEUE_COUNT`, defaults to 5).
pub const DELIVERIES: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0];

/// How often histogram samples are folded into their buckets when nobody scrapes (a scrape does
/// it too); without it, an unscraped process would keep every sample.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The buckets of histogram `name`, for both exporters: [`WAIT_SECONDS`] for waits and parses,
/// [`DELIVERIES`] for delivery counts, [`REQUEST_SECONDS`] for everything else.
pub fn buckets(name: &str) -> &'static [f64] {
    match name {
        catalogue::QUEUE_WAIT
        | catalogue::OUTBOX_LAG
        | catalogue::PARSE_DURATION
        | catalogue::WEBHOOK_LAG => WAIT_SECONDS,
        catalogue::DEQUEUE_COUNT => DELIVERIES,
        _ => REQUEST_SECONDS,
    }
}

/// The Prometheus builder with every histogram's [`buckets`].
fn builder() -> PrometheusBuilder {
    let with_buckets = || -> Result<PrometheusBuilder, BuildError> {
        let mut builder = PrometheusBuilder::new().set_buckets(REQUEST_SECONDS)?;
        for m in catalogue::ALL {
            if m.kind == catalogue::Kind::Histogram && buckets(m.name) != REQUEST_SECONDS {
                builder = builder
                    .set_buckets_for_metric(Matcher::Full(m.name.to_owned()), buckets(m.name))?;
            }
        }
        Ok(builder)
    };
    // Setting buckets fails only when a list is empty, and ours are non-empty constants.
    with_buckets().expect("the bucket lists are not empty")
}

/// A Prometheus recorder built by [`builder`], not installed.
fn recorder() -> PrometheusRecorder {
    builder().build_recorder()
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process-wide recorder's handle, installed on first use (without a push) together with the
/// catalogue's descriptions. Tests start many services in one process, and they share it.
pub fn handle() -> &'static PrometheusHandle {
    install(None)
}

/// Installs the process-wide recorder: Prometheus, and also `push` when given (the binaries pass
/// it from `telemetry::init`, before anything records). The first call wins; later ones return
/// its handle.
pub fn install(push: Option<push::Push>) -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let prometheus = recorder();
        let handle = prometheus.handle();
        let installed = match push {
            Some(push) => metrics::set_global_recorder(
                metrics_util::layers::FanoutBuilder::default()
                    .add_recorder(prometheus)
                    .add_recorder(push.into_recorder())
                    .build(),
            )
            .is_ok(),
            None => metrics::set_global_recorder(prometheus).is_ok(),
        };
        if installed {
            describe();
        } else {
            tracing::warn!("a metrics recorder was already installed; /metrics will be empty");
        }
        handle
    })
}

/// Gives every catalogue metric its `# HELP` line.
fn describe() {
    for m in catalogue::ALL {
        match m.kind {
            catalogue::Kind::Counter => metrics::describe_counter!(m.name, m.help),
            catalogue::Kind::Gauge => metrics::describe_gauge!(m.name, m.help),
            catalogue::Kind::Histogram => metrics::describe_histogram!(m.name, m.help),
        }
    }
}

/// Serves `GET /metrics` (Prometheus text) on `listener` until `shutdown` is cancelled, keeping
/// the recorder's upkeep running meanwhile. Both binaries serve it on their own listener
/// ([`listener::bind`]), off the public port.
pub async fn serve(listener: TcpListener, shutdown: CancellationToken) -> anyhow::Result<()> {
    let handle = handle();
    let upkeep = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(UPKEEP_EVERY) => handle.run_upkeep(),
                }
            }
        }
    });
    let app = Router::new().route(
        "/metrics",
        get(|| async {
            (
                [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                handle.render(),
            )
        }),
    );
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .await;
    shutdown.cancel();
    let _ = upkeep.await;
    served.map_err(|e| anyhow::Error::new(e).context("metrics server error"))
}

/// The `# TYPE` of each metric family in a Prometheus text exposition, and the name of every
/// series in it (histogram series carry their `_bucket`, `_sum` and `_count` suffixes): what a
/// scrape of `/metrics` offers to queries.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Exposition {
    pub types: std::collections::BTreeMap<String, String>,
    pub series: std::collections::BTreeSet<String>,
}

impl Exposition {
    pub fn parse(text: &str) -> Self {
        let mut out = Self::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut words = rest.split_whitespace();
                if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                    out.types.insert(name.to_owned(), kind.to_owned());
                }
            } else if !line.starts_with('#') && !line.trim().is_empty() {
                let end = line.find(['{', ' ']).unwrap_or(line.len());
                out.series.insert(line[..end].to_owned());
            }
        }
        out
    }

    /// The value of the series `name` whose labels include every `label="value"` in `labels`,
    /// summed over the series that match (0 when none does).
    pub fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                let (series_name, series_labels) = match series.split_once('{') {
                    Some((n, rest)) => (n, rest.trim_end_matches('}')),
                    None => (series, ""),
                };
                let matches = series_name == name
                    && labels.iter().all(|(k, v)| {
                        series_labels
                            .split(',')
                            .any(|p| p == format!("{k}=\"{v}\""))
                    });
                matches.then(|| value.parse::<f64>().ok()).flatten()
            })
            .sum()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn histograms_render_as_histograms_with_their_buckets() {
        let recorder = recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metrics::histogram!(catalogue::HTTP_REQUEST_DURATION, "route" => "/x").record(0.003);
            metrics::histogram!(catalogue::QUEUE_WAIT).record(120.0);
            metrics::histogram!(catalogue::DEQUEUE_COUNT).record(2.0);
        });
        let text = handle.render();
        assert!(!text.contains("summary"), "{text}");
        assert!(!text.contains("quantile"), "{text}");
        let parsed = Exposition::parse(&text);
        for name in [
            catalogue::HTTP_REQUEST_DURATION,
            catalogue::QUEUE_WAIT,
            catalogue::DEQUEUE_COUNT,
        ] {
            assert_eq!(
                parsed.types.get(name).map(String::as_str),
                Some("histogram")
            );
            for suffix in ["_bucket", "_sum", "_count"] {
                assert!(parsed.series.contains(&format!("{name}{suffix}")), "{text}");
            }
        }
        let bucket = |name: &str, le: &str| {
            Exposition::value(&text, &format!("{name}_bucket"), &[("le", le)])
        };
        // Request durations: 3 ms is in the 5 ms bucket, not the 2.5 ms one.
        assert_eq!(bucket(catalogue::HTTP_REQUEST_DURATION, "0.0025"), 0.0);
        assert_eq!(bucket(catalogue::HTTP_REQUEST_DURATION, "0.005"), 1.0);
        // Waits have buckets up to an hour; request durations stop at a minute.
        assert_eq!(bucket(catalogue::QUEUE_WAIT, "60"), 0.0);
        assert_eq!(bucket(catalogue::QUEUE_WAIT, "300"), 1.0);
        assert_eq!(bucket(catalogue::DEQUEUE_COUNT, "1"), 0.0);
        assert_eq!(bucket(catalogue::DEQUEUE_COUNT, "2"), 1.0);
    }

    #[test]
    fn exposition_values_match_on_a_subset_of_labels() {
        let text = "# TYPE a_total counter\n\
                    a_total{x=\"1\",y=\"2\"} 3\n\
                    a_total{x=\"1\",y=\"3\"} 4\n\
                    a_total{x=\"2\",y=\"2\"} 5\n\
                    b 7\n";
        assert_eq!(Exposition::value(text, "a_total", &[("x", "1")]), 7.0);
        assert_eq!(Exposition::value(text, "a_total", &[("y", "2")]), 8.0);
        assert_eq!(Exposition::value(text, "a_total", &[("x", "3")]), 0.0);
        assert_eq!(Exposition::value(text, "b", &[]), 7.0);
        let parsed = Exposition::parse(text);
        assert_eq!(
            parsed.types.get("a_total").map(String::as_str),
            Some("counter")
        );
        assert!(parsed.series.contains("b") && parsed.series.contains("a_total"));
    }

    /// Names, types, labels and exporters of `docs/operations.md`'s metric table, in order.
    fn documented_table() -> Vec<(String, String, String, String)> {
        let unquote = |s: &str| s.replace('`', "");
        crate::docs::OPERATIONS
            .table("| metric | type | labels | from | |")
            .into_iter()
            .map(|cells| {
                (
                    unquote(cells[0]),
                    cells[1].to_owned(),
                    unquote(cells[2]),
                    cells[3].to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn the_operations_doc_table_is_the_catalogue() {
        let catalogue: Vec<(String, String, String, String)> = catalogue::ALL
            .iter()
            .map(|m| {
                (
                    m.name.to_owned(),
                    m.kind.as_str().to_owned(),
                    m.labels.join(", "),
                    m.exported_by.to_owned(),
                )
            })
            .collect();
        assert_eq!(documented_table(), catalogue);
    }

    #[test]
    fn names_follow_the_conventions() {
        for m in catalogue::ALL {
            assert!(m.name.starts_with("sheetrelay_"), "{}", m.name);
            assert_eq!(
                m.kind == catalogue::Kind::Counter,
                m.name.ends_with("_total"),
                "{}: counters, and only counters, end in _total",
                m.name
            );
            assert!(
                !m.name.contains("_ms") && !m.name.contains("milli"),
                "{}: base units",
                m.name
            );
            assert_eq!(catalogue::find(m.name), Some(m));
        }
    }
}
