//! An OTLP receiver in the test process: it speaks HTTP/protobuf (`/v1/traces`, `/v1/metrics`)
//! or gRPC (the trace and metrics collector services, as Azure Container Apps' agent does) and
//! keeps what the real `api` and `worker` binaries export, for the tests to look at.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use reqwest::StatusCode;

/// A received span: its service, name, kind, ids and string attributes.
#[derive(Debug, Clone)]
pub struct Span {
    pub service: String,
    pub name: String,
    pub kind: i32,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub links: Vec<(String, String)>,
    pub attributes: HashMap<String, String>,
}

/// One data point of a received metric, whatever its type: a sum's or gauge's value, or a
/// histogram's count, bounds and bucket counts.
#[derive(Debug, Clone)]
pub struct Point {
    /// `service.name` and `service.instance.id` of the process that sent it.
    pub service: String,
    pub instance: String,
    pub metric: String,
    /// `sum` (monotonic), `gauge` or `histogram`.
    pub kind: &'static str,
    pub labels: HashMap<String, String>,
    pub value: f64,
    pub bounds: Vec<f64>,
    pub bucket_counts: Vec<u64>,
}

/// What the receiver has been sent so far.
#[derive(Debug, Default)]
pub struct Received {
    pub spans: Vec<Span>,
    pub points: Vec<Point>,
}

pub type Shared = Arc<Mutex<Received>>;

/// Starts a receiver for `protocol` (`grpc` or `http/protobuf`); returns its endpoint (for
/// `OTEL_EXPORTER_OTLP_ENDPOINT`) and what it receives.
pub async fn start(protocol: &str) -> (String, Shared) {
    let received: Shared = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    if protocol == "grpc" {
        let server = tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Grpc(Arc::clone(&received))))
            .add_service(MetricsServiceServer::new(Grpc(Arc::clone(&received))));
        tokio::spawn(
            server.serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
    } else {
        let receiver = Router::new()
            .route("/v1/traces", post(http::<ExportTraceServiceRequest>))
            .route("/v1/metrics", post(http::<ExportMetricsServiceRequest>))
            .with_state(Arc::clone(&received));
        tokio::spawn(async move { axum::serve(listener, receiver).await });
    }
    (endpoint, received)
}

/// An export request this receiver understands.
trait Export: Message + Default {
    fn keep(self, into: &mut Received);
}

async fn http<R: Export>(State(received): State<Shared>, body: Bytes) -> StatusCode {
    let Ok(request) = R::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    request.keep(&mut received.lock().expect("lock"));
    StatusCode::OK
}

/// The gRPC collector services.
struct Grpc(Shared);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        request.into_inner().keep(&mut self.0.lock().expect("lock"));
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        request.into_inner().keep(&mut self.0.lock().expect("lock"));
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

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

fn attributes(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes
        .iter()
        .map(|a| {
            let value = text(a.value.as_ref().and_then(|v| v.value.as_ref()));
            (a.key.clone(), value)
        })
        .collect()
}

fn resource_attribute(resource: Option<&Resource>, key: &str) -> String {
    resource
        .map(|r| attributes(&r.attributes))
        .and_then(|mut a| a.remove(key))
        .unwrap_or_default()
}

impl Export for ExportTraceServiceRequest {
    fn keep(self, into: &mut Received) {
        for rs in self.resource_spans {
            let service = resource_attribute(rs.resource.as_ref(), "service.name");
            for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
                into.spans.push(Span {
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
                    attributes: attributes(&span.attributes),
                });
            }
        }
    }
}

impl Export for ExportMetricsServiceRequest {
    fn keep(self, into: &mut Received) {
        for rm in self.resource_metrics {
            let service = resource_attribute(rm.resource.as_ref(), "service.name");
            let instance = resource_attribute(rm.resource.as_ref(), "service.instance.id");
            for metric in rm.scope_metrics.into_iter().flat_map(|s| s.metrics) {
                let point = |kind, labels: &[KeyValue], value| Point {
                    service: service.clone(),
                    instance: instance.clone(),
                    metric: metric.name.clone(),
                    kind,
                    labels: attributes(labels),
                    value,
                    bounds: Vec::new(),
                    bucket_counts: Vec::new(),
                };
                let number = |v: Option<Number>| match v {
                    Some(Number::AsDouble(d)) => d,
                    #[allow(clippy::cast_precision_loss)] // test counts are small
                    Some(Number::AsInt(i)) => i as f64,
                    None => f64::NAN,
                };
                match &metric.data {
                    Some(Data::Sum(sum)) if sum.is_monotonic => {
                        for p in &sum.data_points {
                            into.points
                                .push(point("sum", &p.attributes, number(p.value)));
                        }
                    }
                    Some(Data::Gauge(gauge)) => {
                        for p in &gauge.data_points {
                            into.points
                                .push(point("gauge", &p.attributes, number(p.value)));
                        }
                    }
                    Some(Data::Histogram(histogram)) => {
                        for p in &histogram.data_points {
                            #[allow(clippy::cast_precision_loss)] // test counts are small
                            let mut received = point("histogram", &p.attributes, p.count as f64);
                            received.bounds.clone_from(&p.explicit_bounds);
                            received.bucket_counts.clone_from(&p.bucket_counts);
                            into.points.push(received);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

impl Received {
    /// The newest point of `metric` sent by `service` whose labels include every one of
    /// `labels` (cumulative series are sent again at every push: the newest is the total).
    pub fn latest(&self, service: &str, metric: &str, labels: &[(&str, &str)]) -> Option<&Point> {
        self.points.iter().rev().find(|p| {
            p.service == service
                && p.metric == metric
                && labels
                    .iter()
                    .all(|(k, v)| p.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }
}
