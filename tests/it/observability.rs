//! Metrics and what ships with them: the worker binary serves `/metrics` on `METRICS_ADDR` and its
//! histograms and counters move as tasks complete; every metric the Grafana dashboard and the
//! Prometheus alert rules in `deploy/observability/` query is exported by the binaries; and, when
//! promtool is installed, the rules pass `promtool check rules` and their unit tests and every
//! dashboard query parses.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::app::TestApp;
use harness::worker::{eventually_some, RunningWorker, WorkerEnv, WorkerProcess, SAMPLE_CSV};
use reqwest::StatusCode;
use serde_json::Value;
use shared::metrics::catalogue::{self as names, Kind};
use shared::metrics::Exposition;
use tokio_util::sync::CancellationToken;

fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    Exposition::value(text, name, labels)
}

/// The worker's `/metrics` address, read from its log (it listens on port 0 and says where).
async fn metrics_url(worker: &WorkerProcess) -> String {
    eventually_some(
        Duration::from_secs(30),
        "the worker's metrics address",
        || async {
            let addr = logged_metrics_addr(&worker.log())?;
            Some(format!("http://{addr}/metrics"))
        },
    )
    .await
}

/// The address the api or the worker says it serves `/metrics` on (the first `metrics_addr=`
/// of its log).
pub(crate) fn logged_metrics_addr(log: &str) -> Option<String> {
    let at = log.find("metrics_addr=")? + "metrics_addr=".len();
    Some(
        log[at..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect(),
    )
}

/// The text of one `/metrics` scrape, or `None` when it is not (yet) served.
pub(crate) async fn scrape(url: &str) -> Option<String> {
    let resp = reqwest::get(url).await.ok()?;
    if resp.status() != StatusCode::OK {
        return None;
    }
    resp.text().await.ok()
}

#[tokio::test]
async fn the_worker_serves_metrics_that_move_as_tasks_complete() {
    let env = WorkerEnv::new().await;
    let mut cmd = env.command(&["run"]);
    cmd.env("RUST_LOG", "info");
    let worker = WorkerProcess::spawn(cmd);
    let url = metrics_url(&worker).await;
    let before = eventually_some(Duration::from_secs(30), "a first scrape", || scrape(&url)).await;

    // Registered at zero before any work: counters, histograms, and the gauges once read.
    let completed = |t: &str| value(t, names::TASKS_FINISHED, &[("result", "completed")]);
    assert_eq!(completed(&before), 0.0, "{before}");
    assert!(before.contains("sheetrelay_tasks_finished_total{result=\"empty_file\"} 0"));
    assert_eq!(
        value(&before, "sheetrelay_queue_wait_seconds_count", &[]),
        0.0
    );
    assert!(
        before.contains("# TYPE sheetrelay_queue_wait_seconds histogram"),
        "{before}"
    );
    assert!(!before.contains("summary"), "{before}");

    let uploads = [
        env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await,
        env.create_upload("b.csv", SAMPLE_CSV.as_bytes()).await,
        env.create_upload("c.csv", SAMPLE_CSV.as_bytes()).await,
    ];
    let empty = env.create_upload("empty.csv", b"").await;
    let after = eventually_some(Duration::from_secs(60), "four finished tasks", || async {
        let text = scrape(&url).await?;
        let failed = value(&text, names::TASKS_FINISHED, &[("result", "empty_file")]);
        (completed(&text) == 3.0 && failed == 1.0).then_some(text)
    })
    .await;
    for u in &uploads {
        assert_eq!(env.row_count(u.source_file_id).await, 2);
    }
    assert_eq!(
        env.task(empty.task_id)
            .await
            .error_code
            .map(shared::domain::TaskErrorCode::as_str),
        Some("empty_file")
    );

    let count = |name: &str, labels: &[(&str, &str)]| value(&after, name, labels);
    // The relay: four sends, each with its commit-to-sent lag and its duration.
    assert_eq!(
        count(names::OUTBOX_SENDS, &[("outcome", "sent")]),
        4.0,
        "{after}"
    );
    assert_eq!(count(names::OUTBOX_SENDS, &[("outcome", "failed")]), 0.0);
    assert_eq!(
        count("sheetrelay_outbox_commit_to_sent_seconds_count", &[]),
        4.0
    );
    assert_eq!(
        count(
            "sheetrelay_outbox_send_duration_seconds_count",
            &[("outcome", "ok")]
        ),
        4.0
    );
    // The consumer: four first deliveries, each waited and parsed once.
    assert_eq!(count("sheetrelay_queue_wait_seconds_count", &[]), 4.0);
    assert_eq!(count("sheetrelay_queue_dequeue_count_count", &[]), 4.0);
    assert_eq!(
        count("sheetrelay_queue_dequeue_count_bucket", &[("le", "1")]),
        4.0
    );
    assert_eq!(
        count(names::CONSUMER_MESSAGES, &[("outcome", "completed")]),
        3.0
    );
    assert_eq!(
        count(names::CONSUMER_MESSAGES, &[("outcome", "failed")]),
        1.0
    );
    assert_eq!(
        count(names::CONSUMER_MESSAGES, &[("outcome", "duplicate")]),
        0.0
    );
    assert_eq!(
        count(
            "sheetrelay_parse_duration_seconds_count",
            &[("format", "csv")]
        ),
        4.0
    );
    assert_eq!(count(names::PARSED_ROWS, &[("format", "csv")]), 6.0);
    assert_eq!(count(names::POISON_MESSAGES, &[]), 0.0);
    // Storage: one Put Message and one Delete Message per task; the files are read from
    // their blobs (the harness writes no inline copy).
    let storage = |service: &str, operation: &str| {
        count(
            names::STORAGE_REQUESTS,
            &[("service", service), ("operation", operation)],
        )
    };
    assert_eq!(storage("queue", "put_message"), 4.0, "{after}");
    assert_eq!(storage("queue", "delete_message"), 4.0);
    assert!(storage("queue", "get_messages") >= 1.0);
    assert!(storage("blob", "get_blob") >= 4.0, "{after}");

    // The gauges: the outbox is empty again, and the queues were read.
    let gauges = eventually_some(Duration::from_secs(30), "the gauges", || async {
        let text = scrape(&url).await?;
        let parsed = Exposition::parse(&text);
        (parsed.series.contains(names::OUTBOX_MESSAGES)
            && parsed.series.contains(names::QUEUE_MESSAGES))
        .then_some(text)
    })
    .await;
    for status in ["PENDING", "PROCESSING", "FAILED", "DEAD"] {
        assert!(
            gauges.contains(&format!(
                "sheetrelay_outbox_messages{{status=\"{status}\"}}"
            )),
            "{gauges}"
        );
    }
    assert_eq!(
        value(&gauges, names::QUEUE_MESSAGES, &[("queue", "poison")]),
        0.0
    );
}

/// Every `sheetrelay_…` name in `text` (PromQL of a dashboard or of alert rules). Recording
/// rules' own names use colons (`sheetrelay:…`), so they are not picked up.
fn queried_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("sheetrelay_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        out.insert(name);
    }
    out
}

fn observability_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/observability")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `expr` of the dashboard's panels.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dashboard];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(expr)) = map.get("expr") {
                    out.push(expr.clone());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn the_dashboard_and_alert_rules_query_only_exported_metrics() {
    // The api and the worker in this process, as in production, after one upload end to end.
    let app = TestApp::spawn().await;
    let cfg = harness::worker::run_config(&app.config.database.url, app.config.storage.clone());
    let worker = RunningWorker::start(cfg);
    let resp = app
        .upload("a.csv", SAMPLE_CSV.as_bytes().to_vec(), None)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    let task_path = format!("/api/v1/tasks/{}", body["task"]["id"].as_str().expect("id"));
    eventually_some(Duration::from_secs(30), "COMPLETED", || async {
        let (_, task) = app.get_json(&task_path).await;
        (task["status"] == "COMPLETED").then_some(())
    })
    .await;

    // Scraped as Prometheus scrapes both binaries: through the listener they serve.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/metrics", listener.local_addr().expect("addr"));
    let stop = CancellationToken::new();
    tokio::spawn(shared::metrics::serve(listener, stop.clone()));
    let text = eventually_some(Duration::from_secs(30), "the gauges", || async {
        let text = scrape(&url).await?;
        (text.contains(names::OUTBOX_MESSAGES) && text.contains(names::QUEUE_MESSAGES))
            .then_some(text)
    })
    .await;
    stop.cancel();
    worker.stop().await;
    let exported = Exposition::parse(&text);

    // Every metric of the catalogue is exported, with its type; no summaries.
    for m in names::ALL {
        assert_eq!(
            exported.types.get(m.name).map(String::as_str),
            Some(m.kind.as_str()),
            "{} is not exported as a {}",
            m.name,
            m.kind.as_str()
        );
        if m.kind == Kind::Histogram {
            assert!(exported.series.contains(&format!("{}_bucket", m.name)));
        }
    }
    assert!(exported.types.values().all(|t| t != "summary"), "{text}");

    // Every name the dashboard and the rules query is a series the binaries export.
    let dir = observability_dir();
    let dashboard: Value =
        serde_json::from_str(&read(&dir.join("sheetrelay.json"))).expect("the dashboard is JSON");
    let exprs = dashboard_queries(&dashboard);
    assert!(exprs.len() >= 15, "{} panel queries", exprs.len());
    let rules = read(&dir.join("alerts.yml"));
    let mut queried = queried_names(&exprs.join("\n"));
    let from_rules = queried_names(&rules);
    assert!(from_rules.len() >= 5, "{from_rules:?}");
    queried.extend(from_rules);
    let missing: Vec<&String> = queried
        .iter()
        .filter(|n| !exported.series.contains(*n))
        .collect();
    assert!(missing.is_empty(), "queried but not exported: {missing:?}");
    // The dashboard shows every metric at least once.
    let shown = queried_names(&exprs.join("\n"));
    for m in names::ALL {
        assert!(
            shown
                .iter()
                .any(|n| n == m.name || n.starts_with(&format!("{}_", m.name))),
            "the dashboard has no panel for {}",
            m.name
        );
    }
}

/// `promtool` from `PROMTOOL`, `target/promtool/promtool` (where `tests/stack/test.sh` puts it)
/// or the `PATH`.
fn promtool() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PROMTOOL") {
        return Some(PathBuf::from(p));
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/promtool/promtool");
    if local.is_file() {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("promtool"))
            .find(|p| p.is_file())
    })
}

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_tests() {
    let Some(promtool) = promtool() else {
        // tests/stack/test.sh installs it; a bare `cargo test` may not have it.
        eprintln!(
            "promtool not found (set PROMTOOL or run tests/stack/test.sh): rules not checked"
        );
        return;
    };
    let dir = observability_dir();
    // The dashboard's queries, parsed by promtool as recording rules (Grafana's interval
    // variable given a value): a typo in a panel fails here, not on an operator's screen.
    let dashboard: Value =
        serde_json::from_str(&read(&dir.join("sheetrelay.json"))).expect("the dashboard is JSON");
    let mut panels = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, expr) in dashboard_queries(&dashboard).iter().enumerate() {
        let expr = expr.replace("$__rate_interval", "5m");
        let quoted = serde_json::to_string(&expr).expect("a JSON string is a YAML string");
        panels.push_str(&format!(
            "      - record: dashboard:panel_{i}\n        expr: {quoted}\n"
        ));
    }
    let panels_file = tempfile::Builder::new()
        .suffix(".yml")
        .tempfile()
        .expect("temp file");
    std::fs::write(panels_file.path(), panels).expect("write the panels' rules");
    let panels_path = panels_file.path().to_str().expect("UTF-8 path").to_owned();
    for args in [
        vec!["check", "rules", "alerts.yml"],
        vec!["test", "rules", "alerts.test.yml"],
        vec!["check", "rules", panels_path.as_str()],
    ] {
        let out = std::process::Command::new(&promtool)
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", promtool.display()));
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
