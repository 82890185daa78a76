//! `trace_id` and `span_id` on every log line written inside a span. `tracing`'s formatters
//! print span fields, not OpenTelemetry ids, and a span's fields are fixed when it is created;
//! so a layer notes each span's ids when it is first entered, and a wrapper around the log
//! formatter writes them (as `trace_id=… span_id=…` before a text line, as two more fields of a
//! JSON object). This is the glue tracing-opentelemetry leaves to applications.

use std::fmt;

use opentelemetry::trace::TraceContextExt as _;
use tracing::span::Id;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// A span's OpenTelemetry ids, as lowercase hex.
#[derive(Debug, Clone)]
struct TraceIds {
    trace_id: String,
    span_id: String,
}

/// Notes the ids of each span the first time it is entered.
pub(super) struct TraceIdsLayer;

impl<S> Layer<S> for TraceIdsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if span.extensions().get::<TraceIds>().is_some() {
            return;
        }
        let Some(cx) =
            tracing::dispatcher::get_default(|d| tracing_opentelemetry::get_otel_context(id, d))
        else {
            return;
        };
        let span_context = cx.span().span_context().clone();
        if span_context.is_valid() {
            span.extensions_mut().insert(TraceIds {
                trace_id: span_context.trace_id().to_string(),
                span_id: span_context.span_id().to_string(),
            });
        }
    }
}

/// A log formatter that adds the current span's ids.
pub(super) struct WithTraceIds<F> {
    inner: F,
    json: bool,
}

impl<F> WithTraceIds<F> {
    pub(super) fn text(inner: F) -> Self {
        Self { inner, json: false }
    }

    pub(super) fn json(inner: F) -> Self {
        Self { inner, json: true }
    }
}

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let span = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current());
        let ids = span.and_then(|s| s.extensions().get::<TraceIds>().cloned());
        let Some(ids) = ids else {
            return self.inner.format_event(ctx, writer, event);
        };
        if !self.json {
            write!(writer, "trace_id={} span_id={} ", ids.trace_id, ids.span_id)?;
            return self.inner.format_event(ctx, writer, event);
        }
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => write!(
                writer,
                "{{\"trace_id\":\"{}\",\"span_id\":\"{}\",{rest}",
                ids.trace_id, ids.span_id
            ),
            None => writer.write_str(&line),
        }
    }
}
