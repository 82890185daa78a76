//! A templated upload's error report: `GET /api/v1/files/{id}/errors` pages through the stored
//! error records in file order (filtered by field and code), and `…/errors/export` gives back the
//! rows that had errors as CSV, with their original text in the file's own columns and a last
//! column `errors`, ready to fix in a spreadsheet and upload again. Both answer `409 not_parsed`
//! until the task is final; a file uploaded without a template has an empty report.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use shared::db;
use shared::db::source_files::SourceFile;
use shared::domain::ErrorRecord;
use sqlx::PgPool;
use template::validate::ErrorCode;
use uuid::Uuid;

use super::export::content_disposition;
use super::query;
use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::AppQuery;
use crate::extract::PathId;
use crate::state::AppState;
use encode::csv_safe;

const DEFAULT_LIMIT: i64 = 100;

/// Rejected rows read per query while exporting.
const EXPORT_BATCH: i64 = 1000;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ErrorsQuery {
    /// Return records after this cursor (the previous page's `next_after`).
    #[param(minimum = 0)]
    pub after: Option<i32>,
    /// Page size, 1..1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// Only the records of this template field.
    #[param(max_length = 256)]
    pub field: Option<String>,
    /// Only the records with this code (`type-error`, `constraint-error`, …).
    #[param(max_length = 64)]
    pub code: Option<String>,
    /// `0`: the report as the upload was checked; the latest revision's by default.
    #[param(minimum = 0)]
    pub revision: Option<i32>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorsPage {
    pub errors: Vec<ErrorRecord>,
    /// Pass as `after` for the next page; null on the last page.
    pub next_after: Option<i32>,
}

/// A `code` filter must name a code the report can hold: an unknown one (a typo) would
/// otherwise answer an empty page, which reads as "no such errors".
fn known_code(code: Option<&str>) -> Result<(), ApiError> {
    match code {
        Some(c) if c.parse::<ErrorCode>().is_err() => Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            format!(
                "code must be one of {}",
                ErrorCode::ALL
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

/// A page of a file's error report, in file order.
#[utoipa::path(
    get,
    path = "/api/v1/files/{source_file_id}/errors",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = Uuid, Path, description = "Source file id"), ErrorsQuery),
    responses(
        (status = 200, body = ErrorsPage),
        (status = 400, description = "Bad id, after, limit or code", body = ErrorBody),
        (status = 404, description = "Unknown file", body = ErrorBody),
        (status = 409, description = "The file's task is not final yet", body = ErrorBody),
    )
)]
pub async fn list_errors(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppQuery(q): AppQuery<ErrorsQuery>,
) -> Result<Json<ErrorsPage>, ApiError> {
    let limit = query::limit(q.limit, DEFAULT_LIMIT)?;
    let after = query::after(q.after)?;
    known_code(q.code.as_deref())?;
    final_file(&state, &principal, id).await?;
    let (field, code) = (q.field.as_deref(), q.code.as_deref());
    let errors = if corrected(&state, id, q.revision).await? {
        db::corrections::errors_page(&state.db, id, after, limit + 1, field, code).await?
    } else {
        db::validation::page(&state.db, id, after, limit + 1, field, code).await?
    };
    let (errors, next_after) = query::cut(errors, limit, |e| e.seq);
    Ok(Json(ErrorsPage {
        errors: errors.into_iter().map(|e| e.record).collect(),
        next_after,
    }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ErrorsExportQuery {
    /// `csv`, the only format.
    #[param(pattern = "^csv$")]
    pub format: Option<String>,
    /// `0`: the rows that had errors at upload, as they were; the latest revision's by default.
    #[param(minimum = 0)]
    pub revision: Option<i32>,
}

/// The rows that had errors as CSV: the file's own columns with the original text, then
/// `errors`.
#[utoipa::path(
    get,
    path = "/api/v1/files/{source_file_id}/errors/export",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = Uuid, Path, description = "Source file id"), ErrorsExportQuery),
    responses(
        (status = 200, description = "The rejected rows", content((String = "text/csv"))),
        (status = 400, description = "Bad id or format", body = ErrorBody),
        (status = 404, description = "Unknown file", body = ErrorBody),
        (status = 409, description = "The file's task is not final yet", body = ErrorBody),
    )
)]
pub async fn export_errors(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppQuery(q): AppQuery<ErrorsExportQuery>,
) -> Result<Response, ApiError> {
    if q.format.as_deref().is_some_and(|f| f != "csv") {
        return Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            "format must be csv",
        ));
    }
    let (file, task) = final_file(&state, &principal, id).await?;
    let latest = corrected(&state, id, q.revision).await?;
    // No validation result (an upload without a template): no columns, only `errors`. (A
    // stored result that does not decode already failed reading the task.)
    let columns: Vec<String> = task
        .result
        .and_then(|r| r.0.validation)
        .map(|v| v.source_columns)
        .unwrap_or_default();
    let disposition = content_disposition(&file.file_name, "rejected", "csv");
    let header = csv_record(columns.iter().map(String::as_str).chain(["errors"]));
    let width = columns.len();
    let body = futures::stream::unfold(Some((state.db.clone(), None)), move |cursor| async move {
        let (db, after) = cursor?;
        match rejected_batch(&db, (id, latest), after, width).await {
            Ok(Some((bytes, next))) => Some((Ok(bytes), Some((db, Some(next))))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    let body = futures::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(header)) })
        .chain(body);
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

/// The next batch of rejected rows as CSV records, and the cursor after it; `None` at the end.
async fn rejected_batch(
    db: &PgPool,
    (id, latest): (Uuid, bool),
    after: Option<(i32, i64)>,
    width: usize,
) -> Result<Option<(Bytes, (i32, i64))>, std::io::Error> {
    let rows = db::corrections::rejected_page(db, id, latest, after, EXPORT_BATCH)
        .await
        .map_err(std::io::Error::other)?;
    let Some(last) = rows.last() else {
        return Ok(None);
    };
    let next = (last.sheet, last.row_number);
    let mut out = Vec::new();
    for row in &rows {
        let mut cells: Vec<String> = match &row.cells {
            serde_json::Value::Array(cells) => cells.iter().map(cell_text).collect(),
            other => vec![cell_text(other)],
        };
        cells.resize(width.max(cells.len()), String::new());
        let messages: Vec<&str> = row.errors.iter().map(|e| e.message.as_str()).collect();
        let errors = messages.join("; ");
        out.extend(csv_record(
            cells.iter().map(String::as_str).chain([errors.as_str()]),
        ));
    }
    Ok(Some((Bytes::from(out), next)))
}

/// A stored cell as the text it was in the file (or as corrected).
pub(super) fn cell_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One CSV record, every field made safe to open in a spreadsheet ([`csv_safe`]).
fn csv_record<'a>(fields: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        csv_safe::write_text(&mut out, field.as_bytes(), csv_safe::Holds::Anything);
    }
    out.push(b'\n');
    out
}

/// Whether to serve the latest revision's report (else the original one): the file has been
/// corrected and `revision` is absent or the latest. Only revision 0 and the latest are kept:
/// any other is `400 invalid_parameter`.
pub(super) async fn corrected(
    state: &AppState,
    id: Uuid,
    revision: Option<i32>,
) -> Result<bool, ApiError> {
    let (latest, _) = db::corrections::latest(&state.db, id).await?;
    match revision {
        None => Ok(latest > 0 && db::corrections::has_rows(&state.db, id).await?),
        Some(0) => Ok(false),
        Some(r) if r == latest => Ok(db::corrections::has_rows(&state.db, id).await?),
        Some(r) => Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            format!("revision {r} is not kept: ask for 0 (the upload's report) or {latest} (the latest)"),
        )),
    }
}

/// The caller's file and its task, once the task is final: `404` for another tenant's file,
/// `409 not_parsed` before.
pub(super) async fn final_file(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> Result<(SourceFile, db::tasks::Task), ApiError> {
    let not_found = || ApiError::NotFound(format!("no source file {id}"));
    let (file, task) = db::source_files::find_with_task(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(not_found)?;
    if !task.status.is_final() {
        return Err(ApiError::Conflict {
            code: ApiErrorCode::NotParsed,
            message: format!(
                "the file has no report yet: its task is {}",
                task.status.as_str()
            ),
        });
    }
    Ok((file, task))
}
