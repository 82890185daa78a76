//! HTTP handlers, one module per resource; the route table, where each route is registered once
//! together with its handler's OpenAPI operation; and the extractors the handlers share, which
//! answer bad input with the contract's JSON error body rather than axum's plain-text rejections.

pub mod corrections;
pub mod destinations;
pub mod error_rows;
pub mod errors;
pub mod events;
pub mod export;
pub mod files;
pub mod health;
pub mod layout;
pub mod mapping;
pub mod page;
pub mod resumable;
pub mod rows;
pub mod sessions;
pub mod sources;
pub mod tasks;
pub mod templates;
pub mod upload;
pub mod webhooks;

use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn;
use axum::routing::get;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt as _};
use utoipa_axum::routes;

use crate::state::AppState;

/// Every `/api/v1` route with its operation. `routes!` takes the handlers of one path, so a
/// route cannot be served without its operation in the OpenAPI document, nor documented and not
/// served. The caller puts them behind `auth::require`.
pub(crate) fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::default()
        .routes(routes!(upload::upload, files::list_files))
        .routes(
            routes!(resumable::options, resumable::create)
                .layer(from_fn(resumable::protocol::require_version)),
        )
        .routes(
            routes!(
                resumable::status,
                resumable::append,
                resumable::terminate,
                resumable::result
            )
            .layer(from_fn(resumable::protocol::require_version)),
        )
        .routes(routes!(files::get_file, files::delete_file))
        .routes(routes!(rows::list_rows))
        .routes(routes!(export::export_rows))
        .routes(routes!(errors::list_errors))
        .routes(routes!(errors::export_errors))
        .routes(routes!(error_rows::list_error_rows))
        .routes(routes!(corrections::correct))
        .routes(routes!(tasks::get_task))
        .routes(routes!(mapping::put_mapping))
        .routes(routes!(layout::put_layout))
        .routes(routes!(events::list_events))
        .routes(routes!(events::stream_events))
        .routes(routes!(webhooks::create_webhook, webhooks::list_webhooks))
        .routes(routes!(
            webhooks::get_webhook,
            webhooks::patch_webhook,
            webhooks::delete_webhook
        ))
        .routes(routes!(webhooks::rotate_secret))
        .routes(routes!(webhooks::replay))
        .routes(routes!(webhooks::list_attempts))
        .routes(routes!(
            destinations::create_destination,
            destinations::list_destinations
        ))
        .routes(routes!(
            destinations::get_destination,
            destinations::patch_destination,
            destinations::delete_destination
        ))
        .routes(routes!(destinations::list_deliveries))
        .routes(routes!(destinations::redeliver))
        .routes(routes!(sources::create_source, sources::list_sources))
        .routes(routes!(
            sources::get_source,
            sources::patch_source,
            sources::delete_source
        ))
        .routes(routes!(sources::list_blobs))
        .routes(routes!(sources::rotate_events_token))
        .routes(
            routes!(sources::post_events, sources::options_events)
                .layer(DefaultBodyLimit::max(sources::MAX_EVENTS_BYTES)),
        )
        .routes(routes!(sessions::create_session))
        .routes(routes!(sessions::delete_session))
        .routes(routes!(templates::list_templates))
        .routes(
            routes!(
                templates::put_template,
                templates::get_template,
                templates::delete_template
            )
            .layer(DefaultBodyLimit::max(templates::MAX_TEMPLATE_BYTES)),
        )
}

/// The routes that answer without credentials: the probes, the OpenAPI document (all three
/// documented) and the web page (not an API, so not documented).
pub(crate) fn public() -> OpenApiRouter<AppState> {
    OpenApiRouter::default()
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(crate::openapi::openapi_json))
        .route("/", get(page::index))
        .route("/assets/{name}", get(page::asset))
        .route("/embed/importer.js", get(page::importer))
}

/// Query-string checks shared by the paged endpoints.
pub mod query {
    use crate::error::{ApiError, ApiErrorCode};

    /// Largest page of any paged endpoint.
    pub const MAX_LIMIT: i64 = 1000;

    /// `limit`, or `default` when absent; `400` outside 1..=[`MAX_LIMIT`].
    pub fn limit(limit: Option<i64>, default: i64) -> Result<i64, ApiError> {
        let limit = limit.unwrap_or(default);
        if (1..=MAX_LIMIT).contains(&limit) {
            Ok(limit)
        } else {
            Err(ApiError::bad_request(
                ApiErrorCode::InvalidParameter,
                format!("limit must be between 1 and {MAX_LIMIT}"),
            ))
        }
    }

    /// A keyset cursor (`after`): `400` when negative.
    pub fn after<T: Into<i64> + Copy>(after: Option<T>) -> Result<Option<T>, ApiError> {
        match after {
            Some(a) if a.into() < 0 => Err(ApiError::bad_request(
                ApiErrorCode::InvalidParameter,
                "after must be ≥ 0",
            )),
            after => Ok(after),
        }
    }

    /// A page read with one item more than `limit` (which tells whether another page follows):
    /// the page, and the cursor of its last item when another page follows.
    pub fn cut<T, K>(mut items: Vec<T>, limit: i64, key: impl Fn(&T) -> K) -> (Vec<T>, Option<K>) {
        if items.len() as i64 > limit {
            items.truncate(limit as usize);
            let next = items.last().map(key);
            (items, next)
        } else {
            (items, None)
        }
    }

    /// `sheet`, 0 when absent; `400` when negative.
    pub fn sheet(sheet: Option<i32>) -> Result<i32, ApiError> {
        match sheet.unwrap_or(0) {
            s if s >= 0 => Ok(s),
            _ => Err(ApiError::bad_request(
                ApiErrorCode::InvalidParameter,
                "sheet must be ≥ 0",
            )),
        }
    }
}
