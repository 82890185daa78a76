//! One trace per upload, across the queue hop: the real `api` and `worker` binaries export their
//! spans over OTLP (HTTP/protobuf, and gRPC as Azure Container Apps' agent speaks it) to a
//! receiver in this test, and the upload's span, the relay's PRODUCER span and the consumer's
//! CONSUMER span (linked to the upload, as the messaging conventions say) come back in one
//! trace whose id the task's lineage names.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::Router;
use harness::app::{api_exe, authenticated_client};
use harness::worker::{eventually_some, WorkerEnv, WorkerProcess};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use reqwest::StatusCode;
use serde_json::Value;

/// A received span: its service, name, kind, ids and string attributes.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    links: Vec<(String, String)>,
    attributes: HashMap<String, String>,
}

type Spans = Arc<Mutex<Vec<Received>>>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(v: Option<&AnyValue>) -> String {
    match v {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        _ => String::new(),
    }
}

async fn receive_http(State(spans): State<Spans>, body: Bytes) -> StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    keep(&spans, request);
    StatusCode::OK
}

/// The gRPC collector service.
struct GrpcReceiver(Spans);

#[tonic::async_trait]
impl TraceService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        keep(&self.0, request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// Starts a receiver for `protocol`; returns its endpoint and what it receives.
async fn start_receiver(protocol: &str) -> (String, Spans) {
    let spans: Spans = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    if protocol == "grpc" {
        let service = TraceServiceServer::new(GrpcReceiver(Arc::clone(&spans)));
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
    } else {
        let receiver = Router::new()
            .route("/v1/traces", post(receive_http))
            .with_state(Arc::clone(&spans));
        tokio::spawn(async move { axum::serve(listener, receiver).await });
    }
    (endpoint, spans)
}

fn keep(spans: &Spans, request: ExportTraceServiceRequest) {
    let mut spans = spans.lock().expect("lock");
    for rs in request.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|a| a.key == "service.name")
            .map(|a| text(a.value.as_ref().and_then(|v| v.value.as_ref())))
            .unwrap_or_default();
        for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
            spans.push(Received {
                service: service.clone(),
                name: span.name,
                kind: span.kind,
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent_span_id: hex(&span.parent_span_id),
                links: span
                    .links
                    .iter()
                    .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                    .collect(),
                attributes: span
                    .attributes
                    .iter()
                    .map(|a| {
                        (
                            a.key.clone(),
                            text(a.value.as_ref().and_then(|v| v.value.as_ref())),
                        )
                    })
                    .collect(),
            });
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[tokio::test]
async fn one_upload_is_one_trace_exported_over_otlp_http() {
    one_upload_is_one_trace("http/protobuf").await;
}

#[tokio::test]
async fn one_upload_is_one_trace_exported_over_otlp_grpc() {
    one_upload_is_one_trace("grpc").await;
}

async fn one_upload_is_one_trace(protocol: &str) {
    let env = WorkerEnv::new().await;
    let (otlp, spans) = start_receiver(protocol).await;
    let otel_env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
        // Export within 100 ms rather than the default 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];

    // The api as a process of its own.
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let connection = env.storage.connection_string.clone().unwrap_or_default();
    let api_command = |args: &[&str]| {
        let mut cmd = tokio::process::Command::new(api_exe());
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATABASE_URL", &env.database_url)
            .env("AZURE_STORAGE_CONNECTION_STRING", &connection)
            .env("QUEUE_NAME", &env.storage.queue_name)
            .env("BLOB_CONTAINER", &env.storage.blob_container)
            .env("LISTEN_ADDR", format!("127.0.0.1:{port}"))
            .env("METRICS_ADDR", format!("127.0.0.1:{}", free_port()))
            .envs(otel_env)
            .kill_on_drop(true);
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
            let spans = Arc::clone(&spans);
            let trace_id = trace_id.clone();
            async move {
                let spans: Vec<Received> = spans
                    .lock()
                    .expect("lock")
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

    let one =
        |pred: &dyn Fn(&Received) -> bool| trace.iter().find(|s| pred(s)).cloned().expect("span");
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
}
