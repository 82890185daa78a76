//! One trace per upload, across the queue hop: the real `api` and `worker` binaries export their
//! spans over OTLP (HTTP/protobuf, and gRPC as Azure Container Apps' agent speaks it) to a
//! receiver in this test, and the upload's span, the relay's PRODUCER span and the consumer's
//! CONSUMER span (linked to the upload, as the messaging conventions say) come back in one
//! trace whose id the task's lineage names. The same endpoint gets their metrics: a drain job
//! pushes its last values as it exits (long before the 60 s push interval would), and the api
//! pushes periodically, unless `OTEL_METRICS_EXPORTER=none`.

use std::sync::Arc;
use std::time::Duration;

use harness::app::authenticated_client;
use harness::worker::{eventually_some, WorkerEnv, WorkerProcess};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use reqwest::StatusCode;
use serde_json::Value;
use shared::metrics::{catalogue, WAIT_SECONDS};

use crate::otlp_receiver::{self, Span};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[tokio::test]
async fn one_upload_is_one_trace_and_metrics_are_pushed_over_otlp_http() {
    one_upload_is_one_trace(Api::PushesMetrics, "http/protobuf").await;
}

#[tokio::test]
async fn one_upload_is_one_trace_and_metrics_are_pushed_over_otlp_grpc() {
    one_upload_is_one_trace(Api::MetricsExporterNone, "grpc").await;
}

/// How the api is told to treat its metrics.
#[derive(PartialEq)]
enum Api {
    /// Push every 200 ms.
    PushesMetrics,
    /// `OTEL_METRICS_EXPORTER=none` (with the same 200 ms interval, which it must ignore).
    MetricsExporterNone,
}

async fn one_upload_is_one_trace(api: Api, protocol: &str) {
    let env = WorkerEnv::new().await;
    let (otlp, received) = otlp_receiver::start(protocol).await;
    let otel_env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
        // Export within 100 ms rather than the default 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];

    // The api as a process of its own.
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let api_command = |args: &[&str]| {
        let mut cmd = env.api_command(args);
        cmd.env("LISTEN_ADDR", format!("127.0.0.1:{port}"))
            .env("METRICS_ADDR", format!("127.0.0.1:{}", free_port()))
            .envs(otel_env)
            .env("OTEL_METRIC_EXPORT_INTERVAL", "200");
        if api == Api::MetricsExporterNone {
            cmd.env("OTEL_METRICS_EXPORTER", "none");
        }
        cmd
    };
    let key = api_command(&["keys", "create", "--name", "tracing"])
        .output()
        .await
        .expect("api keys create");
    assert!(key.status.success());
    let key = String::from_utf8(key.stdout)
        .expect("utf-8")
        .trim()
        .to_owned();
    let _api = WorkerProcess::spawn(api_command(&[]));
    let client = authenticated_client(&key);
    eventually_some(Duration::from_secs(30), "the api ready", || async {
        let r = client.get(format!("{base}/readyz")).send().await.ok()?;
        r.status().is_success().then_some(())
    })
    .await;

    let part = reqwest::multipart::Part::bytes(b"id,name\n1,a\n".to_vec()).file_name("a.csv");
    let resp = client
        .post(format!("{base}/api/v1/files"))
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("json");
    let task_id = upload["task"]["id"].as_str().expect("task id").to_owned();

    // A drain job: relays, consumes, exits 0, and exports its spans before it goes.
    let mut job = env.command(&["run", "--drain"]);
    job.envs(otel_env);
    let mut job = WorkerProcess::spawn(job);
    let status = job.wait(Duration::from_secs(60)).await;
    assert!(status.success(), "the drain job exits 0: {}", job.log());

    let (_, task) = {
        let r = client
            .get(format!("{base}/api/v1/tasks/{task_id}"))
            .send()
            .await
            .expect("task");
        (r.status(), r.json::<Value>().await.expect("json"))
    };
    assert_eq!(task["status"], "COMPLETED");
    let trace_id = task["trace_id"]
        .as_str()
        .expect("the task names its trace")
        .to_owned();
    assert_eq!(trace_id.len(), 32);

    let trace = eventually_some(
        Duration::from_secs(30),
        "the api's and the worker's spans",
        || {
            let received = Arc::clone(&received);
            let trace_id = trace_id.clone();
            async move {
                let spans: Vec<Span> = received
                    .lock()
                    .expect("lock")
                    .spans
                    .iter()
                    .filter(|s| s.trace_id == trace_id)
                    .cloned()
                    .collect();
                let has = |name: &str| spans.iter().any(|s| s.name == name);
                (has("upload")
                    && spans.iter().any(|s| s.name.starts_with("send "))
                    && spans.iter().any(|s| s.name.starts_with("process ")))
                .then_some(spans)
            }
        },
    )
    .await;

    let one = |pred: &dyn Fn(&Span) -> bool| trace.iter().find(|s| pred(s)).cloned().expect("span");
    let upload_span = one(&|s| s.name == "upload");
    assert_eq!(upload_span.service, "sheetrelay-api");
    let request_span = one(&|s| s.span_id == upload_span.parent_span_id);
    assert_eq!(request_span.kind, SpanKind::Server as i32);

    let queue = &env.storage.queue_name;
    let send = one(&|s| s.name == format!("send {queue}"));
    assert_eq!(send.service, "sheetrelay-worker");
    assert_eq!(send.kind, SpanKind::Producer as i32);
    assert_eq!(send.parent_span_id, upload_span.span_id);
    assert_eq!(send.attributes["messaging.destination.name"], *queue);
    assert_eq!(send.attributes["task_id"], task_id);

    let process = one(&|s| s.name == format!("process {queue}"));
    assert_eq!(process.service, "sheetrelay-worker");
    assert_eq!(process.kind, SpanKind::Consumer as i32);
    assert_eq!(process.parent_span_id, upload_span.span_id);
    assert_eq!(
        process.links,
        [(trace_id.clone(), upload_span.span_id)],
        "linked to the upload's span context"
    );
    assert_eq!(process.attributes["task_id"], task_id);
    assert_eq!(
        process.attributes["messaging.system"],
        "azure_queue_storage"
    );
    assert!(!process.attributes["messaging.message.id"].is_empty());
    assert_eq!(
        process.attributes["messaging.azure_queue_storage.dequeue_count"],
        "1"
    );
    // The parse and download (or inline read) are children of the process span.
    let parse = one(&|s| s.name == "parse");
    assert_eq!(parse.parent_span_id, process.span_id);

    // Logs inside those spans carry the trace id.
    assert!(
        job.log().contains(&format!("trace_id={trace_id}")),
        "the worker's log lines name the trace"
    );

    // The drain job's metrics: it exited long before its first periodic push (60 s, the
    // default), so these were pushed as it shut down.
    let worker = "sheetrelay-worker";
    let finished = |r: &otlp_receiver::Received| {
        r.latest(
            worker,
            catalogue::TASKS_FINISHED,
            &[("result", "completed")],
        )
        .cloned()
    };
    let finished = eventually_some(Duration::from_secs(30), "the drain job's metrics", || {
        let received = Arc::clone(&received);
        async move { finished(&received.lock().expect("lock")) }
    })
    .await;
    assert_eq!(finished.kind, "sum");
    assert_eq!(finished.value, 1.0);
    assert!(
        !finished.instance.is_empty(),
        "each replica is its own instance"
    );
    let latest = |service: &str, metric: &str, labels: &[(&str, &str)]| {
        let got = received.lock().expect("lock");
        got.latest(service, metric, labels).cloned()
    };
    let parse = latest(worker, catalogue::PARSE_DURATION, &[("format", "csv")])
        .expect("the parse duration");
    assert_eq!(parse.kind, "histogram");
    assert_eq!(parse.value, 1.0, "one parse");
    assert_eq!(
        parse.bounds, WAIT_SECONDS,
        "the catalogue's buckets, in seconds"
    );
    assert_eq!(parse.bucket_counts.iter().sum::<u64>(), 1);
    let puts = latest(
        worker,
        catalogue::STORAGE_REQUESTS,
        &[("service", "queue"), ("operation", "put_message")],
    )
    .expect("the relay's queue sends");
    assert_eq!(puts.value, 1.0);

    // The api's: pushed every 200 ms, or never with OTEL_METRICS_EXPORTER=none (by now its
    // spans have arrived, and 200 ms pushes would have too).
    let api_uploads = || latest("sheetrelay-api", catalogue::UPLOADS, &[("format", "csv")]);
    match api {
        Api::PushesMetrics => {
            let uploads = eventually_some(
                Duration::from_secs(30),
                "the api's periodic push",
                || async { api_uploads() },
            )
            .await;
            assert_eq!(uploads.value, 1.0);
        }
        Api::MetricsExporterNone => {
            assert!(api_uploads().is_none());
            let got = received.lock().expect("lock");
            assert!(
                !got.points.iter().any(|p| p.service == "sheetrelay-api"),
                "OTEL_METRICS_EXPORTER=none: the api pushes nothing"
            );
        }
    }
}
