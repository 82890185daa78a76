//! Trace context across the queue hop. Azure Queue Storage messages carry no metadata, so the
//! upload's W3C `traceparent` travels in the parse-task payload (stored with the outbox row, so
//! it survives until the relay sends it). The relay's send span (PRODUCER) and the consumer's
//! process span (CONSUMER) continue that trace and link to the upload's span context, as the
//! OpenTelemetry messaging conventions describe; a message without one (sent before this
//! existed) starts a trace of its own.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// `messaging.system`: no registered value exists for Azure Queue Storage; the conventions
/// allow a custom one.
pub const MESSAGING_SYSTEM: &str = "azure_queue_storage";

const TRACEPARENT: &str = "traceparent";

/// The W3C `traceparent` of the current span; `None` when tracing is off.
pub fn current_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// The trace id (32 lowercase hex digits) of a `traceparent`.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    let id = traceparent.split('-').nth(1)?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// Makes `span` a child of the span `traceparent` names and links it to that span context;
/// does nothing for `None` or a malformed value.
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(traceparent) = traceparent else {
        return;
    };
    let carrier = HashMap::from([(TRACEPARENT.to_owned(), traceparent.to_owned())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let remote = cx.span().span_context().clone();
    if !remote.is_valid() {
        return;
    }
    let _ = span.set_parent(cx);
    span.add_link(remote);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_are_read_from_well_formed_traceparents_only() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(trace_id(tp), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        assert_eq!(trace_id("00-xyz-00f067aa0ba902b7-01"), None);
        assert_eq!(trace_id("garbage"), None);
    }
}
