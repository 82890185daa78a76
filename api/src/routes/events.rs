//! `GET /api/v1/events` (the caller's events in commit order, in pages: the feed for applications
//! that cannot take webhooks) and `GET /api/v1/events/stream` (the same events live, as
//! Server-Sent Events). Both read from a cursor that is an event id, so the feed's `next_after`,
//! the stream's `id:` lines and its `Last-Event-ID` are one thing. Events become readable once
//! sequenced ([`db::events::sequence`]): the feed sequences before it reads, the stream is woken
//! by the api's one listener ([`crate::event_hub`]), which sequences for it.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::{Extension, Json};
use futures::{Stream, StreamExt as _};
use serde::{Deserialize, Serialize};
use shared::db;
use shared::domain::EventView;
use sqlx::PgPool;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::query;
use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::event_hub::{Full, StreamPlace, Wake};
use crate::extract::AppQuery;
use crate::state::AppState;

const DEFAULT_LIMIT: i64 = 100;
/// Events a stream reads per query when it has fallen behind.
const STREAM_PAGE: i64 = 500;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FeedQuery {
    /// An event id (the previous page's `next_after`): the events committed after it. Without
    /// it, the feed starts at the first event kept.
    pub after: Option<Uuid>,
    /// Page size, 1..1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// A page of the feed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventList {
    /// In commit order.
    pub events: Vec<EventView>,
    /// Where the next page starts: the last event of this page, or the `after` given when the
    /// page is empty (null only when the tenant has no events yet). Poll again with it.
    pub next_after: Option<Uuid>,
}

/// The caller's events in commit order (kept at least 7 days).
#[utoipa::path(
    get,
    path = "/api/v1/events",
    tag = "events",
    security(("api_key" = []), ("entra_id" = [])),
    params(FeedQuery),
    responses(
        (status = 200, body = EventList),
        (status = 400, description = "Bad limit or after", body = ErrorBody),
        (status = 410, description = "`unknown_cursor`: after names no event kept for the caller (removed by retention, or never theirs): start again without it", body = ErrorBody),
    )
)]
pub async fn list_events(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    AppQuery(q): AppQuery<FeedQuery>,
) -> Result<Json<EventList>, ApiError> {
    let limit = query::limit(q.limit, DEFAULT_LIMIT)?;
    db::events::sequence(&state.db).await?;
    let position = match q.after {
        Some(id) => resume_after(&state.db, &principal.tenant_id, id).await?,
        None => 0,
    };
    let events = db::events::after(&state.db, &principal.tenant_id, position, limit).await?;
    let next_after = events.last().map(|e| e.id).or(q.after);
    Ok(Json(EventList {
        events: events.iter().map(db::events::Event::view).collect(),
        next_after,
    }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// An event id to start after, for clients that cannot send `Last-Event-ID` on their first
    /// request (the header wins when both are given). Without either, the stream starts with
    /// the next event.
    pub after: Option<Uuid>,
}

/// The caller's events live, as Server-Sent Events: each as `id: <event id>`, `event: <type>`,
/// `data: <event JSON>`. A `Last-Event-ID` header resumes after that event with none missed;
/// comments keep an idle stream alive. The stream ends when the server shuts down or the
/// database fails; reconnect with `Last-Event-ID`.
#[utoipa::path(
    get,
    path = "/api/v1/events/stream",
    tag = "events",
    security(("api_key" = []), ("entra_id" = [])),
    params(
        StreamQuery,
        ("Last-Event-ID" = Option<Uuid>, Header, description = "Resume after this event"),
    ),
    responses(
        (status = 200, description = "An endless `text/event-stream`", content_type = "text/event-stream", body = String),
        (status = 400, description = "Last-Event-ID or after is not an event id", body = ErrorBody),
        (status = 410, description = "`unknown_cursor`: the event to resume after is not kept for the caller: start again without it", body = ErrorBody),
        (status = 429, description = "`too_many_streams`: the tenant holds EVENTS_MAX_STREAMS_PER_TENANT streams on this api process", body = ErrorBody),
        (status = 503, description = "`too_many_streams`: this api process holds EVENTS_MAX_STREAMS streams; or Postgres or Entra ID unavailable", body = ErrorBody),
    )
)]
pub async fn stream_events(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
    AppQuery(q): AppQuery<StreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let last_event_id = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<Uuid>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request(
                        ApiErrorCode::InvalidParameter,
                        "Last-Event-ID is not an event id",
                    )
                })?,
        ),
        None => None,
    };
    let place = state
        .events
        .admit(&principal.tenant_id)
        .map_err(|full| match full {
            Full::Tenant => ApiError::Refused {
                status: StatusCode::TOO_MANY_REQUESTS,
                code: ApiErrorCode::TooManyStreams,
                message: format!(
                    "you hold {} event streams on this server, as many as one tenant may; close \
                     one or read the feed",
                    state.events.config().max_streams_per_tenant
                ),
            },
            Full::Process => ApiError::Refused {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: ApiErrorCode::TooManyStreams,
                message: "this server holds as many event streams as it allows; retry later or \
                          read the feed"
                    .into(),
            },
        })?;
    // Subscribed before the first read: an event that commits in between wakes the stream.
    let wakes = state.events.subscribe();
    db::events::sequence(&state.db).await?;
    let tenant_id = principal.tenant_id.clone();
    let position = match last_event_id.or(q.after) {
        Some(id) => resume_after(&state.db, &tenant_id, id).await?,
        None => db::events::last_position(&state.db, &tenant_id).await?,
    };
    let cursor = Cursor {
        db: state.db.clone(),
        tenant_id,
        position,
        session: principal.session.as_ref().map(|s| s.id),
        wakes,
        closed: state.events.closed().clone(),
        _place: place,
    };
    let events = futures::stream::unfold(cursor, next_page)
        .flat_map(|page| futures::stream::iter(page.into_iter().map(Ok)));
    Ok(Sse::new(events).keep_alive(
        KeepAlive::new()
            .interval(state.events.config().keepalive)
            .text("keep-alive"),
    ))
}

/// The position just after the caller's event `id`; `410 unknown_cursor` when it is not kept.
async fn resume_after(db: &PgPool, tenant_id: &str, id: Uuid) -> Result<i64, ApiError> {
    db::events::position_of(db, tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::Refused {
            status: StatusCode::GONE,
            code: ApiErrorCode::UnknownCursor,
            message: format!(
                "no event {id} is kept for you (removed by retention, or never yours): start again without it"
            ),
        })
}

/// Where one open stream is, and what wakes it.
struct Cursor {
    db: PgPool,
    tenant_id: String,
    /// The position of the last event sent.
    position: i64,
    /// An import session's stream: only the events of the files it uploaded.
    session: Option<Uuid>,
    wakes: broadcast::Receiver<Wake>,
    closed: CancellationToken,
    /// The stream's place among `EVENTS_MAX_STREAMS` and its tenant's, given back when it ends.
    _place: StreamPlace,
}

/// The next events of a stream, waiting until there are some; `None` ends the stream.
async fn next_page(mut c: Cursor) -> Option<(Vec<SseEvent>, Cursor)> {
    loop {
        if c.closed.is_cancelled() {
            return None;
        }
        match db::events::after(&c.db, &c.tenant_id, c.position, STREAM_PAGE).await {
            Ok(events) if !events.is_empty() => {
                c.position = events.last().and_then(|e| e.position).unwrap_or(c.position);
                let page: Vec<SseEvent> = match c.session {
                    None => events.iter().map(sse_event).collect(),
                    Some(session) => match db::sessions::files(&c.db, session).await {
                        Ok(files) => events
                            .iter()
                            .filter(|e| files.contains(&e.source_file_id))
                            .map(sse_event)
                            .collect(),
                        Err(e) => {
                            tracing::warn!(error = %e, session_id = %session, "event stream ended: database error");
                            return None;
                        }
                    },
                };
                if !page.is_empty() {
                    return Some((page, c));
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                // The client reconnects with Last-Event-ID and misses nothing.
                tracing::warn!(error = %e, tenant_id = %c.tenant_id, "event stream ended: database error");
                return None;
            }
        }
        loop {
            tokio::select! {
                () = c.closed.cancelled() => return None,
                wake = c.wakes.recv() => match wake {
                    Ok(w) if w.concerns(&c.tenant_id) => break,
                    Ok(_) => {}
                    // Behind on wake-ups: read anyway, the database has it all.
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            }
        }
    }
}

fn sse_event(e: &db::events::Event) -> SseEvent {
    let data = serde_json::to_string(&e.view()).unwrap_or_else(|_| "{}".into());
    SseEvent::default()
        .id(e.id.to_string())
        .event(e.event_type.as_str())
        .data(data)
}
