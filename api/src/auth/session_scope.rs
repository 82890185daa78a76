//! What an import session's token may do (contract v1.3, "Import sessions"): upload against its
//! template, read and answer for the files it uploaded (their mapping review, and where their
//! tables lie: the layout extension), and follow their events. Every other
//! route is `403 forbidden`; an id that is not one of its own is `404`, as another tenant's is.
//! One middleware, after [`super::require`], so that a route added later is closed to sessions
//! until it is listed here.

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use shared::db;
use sqlx::PgPool;
use uuid::Uuid;

use super::Principal;
use crate::error::{ApiError, ApiErrorCode};

/// Whose id a route's path carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owned {
    /// No id (an upload, the event stream).
    Nothing,
    /// A file or its task.
    File,
    /// A resumable upload.
    Upload,
}

/// The routes a session may call, and what their path's id must be.
fn allowed(method: &Method, path: &str) -> Option<Owned> {
    let read = method == Method::GET;
    match path {
        "/api/v1/files" if method == Method::POST => Some(Owned::Nothing),
        "/api/v1/uploads" if matches!(*method, Method::POST | Method::OPTIONS) => {
            Some(Owned::Nothing)
        }
        "/api/v1/uploads/{upload_id}" => Some(Owned::Upload),
        "/api/v1/files/{source_file_id}"
        | "/api/v1/files/{source_file_id}/rows"
        | "/api/v1/files/{source_file_id}/rows/export"
        | "/api/v1/files/{source_file_id}/errors"
        | "/api/v1/files/{source_file_id}/errors/export"
        | "/api/v1/files/{source_file_id}/errors/rows"
        | "/api/v1/tasks/{task_id}"
            if read =>
        {
            Some(Owned::File)
        }
        "/api/v1/tasks/{task_id}/mapping" | "/api/v1/tasks/{task_id}/layout"
            if method == Method::PUT =>
        {
            Some(Owned::File)
        }
        "/api/v1/files/{source_file_id}/corrections" if method == Method::PATCH => {
            Some(Owned::File)
        }
        "/api/v1/events/stream" if read => Some(Owned::Nothing),
        _ => None,
    }
}

/// The id in a path such as `/api/v1/files/{id}/rows`: its fourth segment.
fn path_id(path: &str) -> Option<Uuid> {
    path.split('/').nth(4)?.parse().ok()
}

/// Middleware on every `/api/v1` route, after authentication: a session's token passes only
/// to its own routes and ids.
pub async fn check(State(db): State<PgPool>, req: Request, next: Next) -> Response {
    let Some(session) = req
        .extensions()
        .get::<Principal>()
        .and_then(|p| p.session.clone())
    else {
        return next.run(req).await;
    };
    let matched = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    let Some(owned) = allowed(req.method(), &matched) else {
        return ApiError::Refused {
            status: axum::http::StatusCode::FORBIDDEN,
            code: ApiErrorCode::Forbidden,
            message: "an import session's token may only upload, read its own files and follow \
                      their events"
                .into(),
        }
        .into_response();
    };
    if owned != Owned::Nothing {
        let id = path_id(req.uri().path());
        let mine = match (owned, id) {
            (_, None) => Ok(false),
            (Owned::Upload, Some(id)) => db::sessions::owns_upload(&db, session.id, id).await,
            (_, Some(id)) => db::sessions::owns(&db, session.id, id).await,
        };
        match mine {
            Ok(true) => {}
            Ok(false) => {
                return ApiError::NotFound("no such file, task or upload of this session".into())
                    .into_response()
            }
            Err(e) => return ApiError::from(e).into_response(),
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_may_upload_read_its_files_and_follow_events_and_nothing_else() {
        let get = Method::GET;
        assert_eq!(
            allowed(&Method::POST, "/api/v1/files"),
            Some(Owned::Nothing)
        );
        assert_eq!(allowed(&get, "/api/v1/files"), None, "no listing");
        assert_eq!(
            allowed(&get, "/api/v1/files/{source_file_id}/rows"),
            Some(Owned::File)
        );
        assert_eq!(
            allowed(&Method::DELETE, "/api/v1/files/{source_file_id}"),
            None
        );
        assert_eq!(
            allowed(&Method::PATCH, "/api/v1/uploads/{upload_id}"),
            Some(Owned::Upload)
        );
        assert_eq!(
            allowed(&Method::PUT, "/api/v1/tasks/{task_id}/mapping"),
            Some(Owned::File)
        );
        assert_eq!(
            allowed(&Method::PUT, "/api/v1/tasks/{task_id}/layout"),
            Some(Owned::File)
        );
        for (method, path) in [
            (Method::GET, "/api/v1/templates"),
            (Method::PUT, "/api/v1/templates/{name}"),
            (Method::POST, "/api/v1/webhooks"),
            (Method::GET, "/api/v1/events"),
            (Method::POST, "/api/v1/sessions"),
            (Method::DELETE, "/api/v1/sessions/{session_id}"),
        ] {
            assert_eq!(allowed(&method, path), None, "{method} {path}");
        }
        assert_eq!(
            path_id("/api/v1/files/01a2212b-ec2d-70dc-b563-584165036249/rows"),
            Some(
                "01a2212b-ec2d-70dc-b563-584165036249"
                    .parse()
                    .expect("uuid")
            )
        );
        assert_eq!(path_id("/api/v1/files"), None);
    }
}
