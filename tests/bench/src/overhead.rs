//! `telemetry-overhead`: what tracing and task progress cost, measured with them on and off.
//!
//! On is production with a collector: spans made for every request and task and exported over
//! OTLP/HTTP, metrics pushed too, logs carrying trace ids, and progress written every second
//! (`PROGRESS_INTERVAL=1s`). The collector is a sink in this process that reads and drops what it
//! is sent. Off is `OTEL_SDK_DISABLED=true` (no spans, no trace ids, no push) and
//! `PROGRESS_INTERVAL=0s` (no progress reporter). Each run measures both, in fresh Postgres and
//! Azurite, in alternating order (on first in even runs, off first in odd ones), because this
//! host drifts by tens of percent from one minute to the next: an end-to-end batch of small
//! uploads (where per-task spans weigh most) and a 1M-row CSV parse + store (where progress is
//! written while the parse runs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::Router;

use crate::report::Run;

/// The headline figure of each measured unit, and its unit name.
const UNITS: &[(&str, &str, &str)] = &[
    ("overhead-e2e", "e2e", "tasks_per_s"),
    ("overhead-parse", "parse", "csv_utf8.store_rows_per_s"),
];

/// A stand-in OTLP collector: accepts every export and counts its bytes.
async fn start_sink() -> anyhow::Result<(String, Arc<AtomicU64>)> {
    let bytes = Arc::new(AtomicU64::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let app = Router::new()
        .fallback(
            |State(bytes): State<Arc<AtomicU64>>, body: Bytes| async move {
                bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
            },
        )
        .with_state(Arc::clone(&bytes));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((endpoint, bytes))
}

/// One run: both units with telemetry on and off. `measure` runs a unit in a child process with
/// the given environment.
pub async fn run<F, Fut>(index: usize, measure: F) -> anyhow::Result<Run>
where
    F: Fn(&'static str, Vec<(&'static str, String)>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Run>>,
{
    let (endpoint, exported) = start_sink().await?;
    let on = vec![
        ("OTEL_SDK_DISABLED", "false".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("PROGRESS_INTERVAL", "1s".to_owned()),
    ];
    let off = vec![
        ("OTEL_SDK_DISABLED", "true".to_owned()),
        ("PROGRESS_INTERVAL", "0s".to_owned()),
    ];
    let mut run = Run::default();
    for (unit, label, headline) in UNITS {
        let mut order = [("on", on.clone()), ("off", off.clone())];
        if index % 2 == 1 {
            order.reverse();
        }
        let mut figures = [0.0_f64; 2];
        for (mode, env) in order {
            let before = exported.load(Ordering::Relaxed);
            let measured = measure(unit, env).await?;
            let figure = measured
                .metrics
                .iter()
                .find(|(k, _, _)| k == headline)
                .map(|m| m.2)
                .ok_or_else(|| anyhow::anyhow!("{unit} did not report {headline}"))?;
            figures[usize::from(mode == "off")] = figure;
            for (key, u, value) in measured.metrics {
                if key == *headline || key.contains("cpu_s_per_1") {
                    run.put(format!("{label}.{mode}.{key}"), &u, value);
                }
            }
            if mode == "on" {
                let kib = (exported.load(Ordering::Relaxed) - before) as f64 / 1024.0;
                run.put(format!("{label}.on.otlp_kib_exported"), "KiB", kib);
            }
        }
        let [with, without] = figures;
        eprintln!(
            "  {label}: on {with:.0}, off {without:.0}: cost {:.1} %",
            (without - with) / without * 100.0
        );
        run.put(
            format!("{label}.cost_pct"),
            "%",
            (without - with) / without * 100.0,
        );
    }
    run.note("telemetry-overhead: on = spans exported over OTLP/HTTP to a sink in the bench, metrics pushed, PROGRESS_INTERVAL=1s; off = OTEL_SDK_DISABLED=true, PROGRESS_INTERVAL=0s; cost_pct = (off − on) / off of the headline figure (e2e: tasks/s of 500 small uploads; parse: rows/s of a 1M-row CSV parse + store), each run alternating which goes first");
    Ok(run)
}
