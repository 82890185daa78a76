//! `GET /api/v1/files/{id}/rows`: keyset pagination over the parsed rows of one sheet. CSV cells
//! are stored as text and typed here from the sheet's inferred column types, so the parse needs
//! one pass and no memory of the whole file.

use axum::extract::{Query, State};
use axum::{Extension, Json};
use serde::Deserialize;
use shared::db;
use shared::db::rows::SheetColumns;
use shared::db::source_files::SourceFile;
use shared::domain::{column_type, ColumnType, TaskStatus};
use uuid::Uuid;

use super::{query, PathId};
use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::state::AppState;
use crate::views::{RowView, RowsPage, SheetView};

const DEFAULT_LIMIT: i64 = 100;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RowsQuery {
    /// Sheet index (0 for CSV/TSV).
    #[param(minimum = 0)]
    pub sheet: Option<i32>,
    /// Return rows after this row index (the previous page's `next_after`).
    #[param(minimum = 0)]
    pub after: Option<i64>,
    /// Page size, 1..1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// A page of parsed rows of one sheet.
#[utoipa::path(
    get,
    path = "/api/v1/files/{source_file_id}/rows",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = Uuid, Path, description = "Source file id"), RowsQuery),
    responses(
        (status = 200, body = RowsPage),
        (status = 400, description = "Bad id, sheet, after or limit", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 404, description = "Unknown file, or no such sheet", body = ErrorBody),
        (status = 409, description = "The file is not parsed (yet, or it failed)", body = ErrorBody),
    )
)]
pub async fn list_rows(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    q: Result<Query<RowsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RowsPage>, ApiError> {
    let Query(q) = q.map_err(query::rejected)?;
    let sheet_index = query::sheet(q.sheet)?;
    let limit = query::limit(q.limit, DEFAULT_LIMIT)?;
    let after = query::after(q.after)?;
    let (_, sheet, columns) = parsed_sheet(&state, &principal, id, sheet_index).await?;

    // One extra row tells whether another page follows.
    let rows = db::rows::page(&state.db, id, sheet_index, after, limit + 1).await?;
    let (rows, next_after) = query::cut(rows, limit, |r| r.row_index);
    let rows = rows
        .into_iter()
        .map(|r| RowView {
            index: r.row_index,
            values: typed(r.values, &columns.types, columns.names.len()),
        })
        .collect();
    Ok(Json(RowsPage {
        sheet: SheetView {
            index: sheet.sheet_index,
            name: sheet.name,
            hidden: sheet.hidden,
            columns: columns.names,
            column_types: columns.types,
        },
        rows,
        next_after,
    }))
}

/// The caller's file `id`, its parsed sheet `sheet_index` and that sheet's columns: `404` for
/// another tenant's file or no such sheet, `409 not_parsed` while the file's task is not
/// COMPLETED, and a `500` (logged) when the stored columns do not decode: typing the values by
/// no columns would answer with wrong data that looks right.
pub(super) async fn parsed_sheet(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
    sheet_index: i32,
) -> Result<(SourceFile, db::rows::Sheet, SheetColumns), ApiError> {
    let not_found = || ApiError::NotFound(format!("no source file {id}"));
    let file = db::source_files::find_for_tenant(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(not_found)?;
    let task = db::tasks::find_by_source_file(&state.db, id)
        .await?
        .ok_or_else(not_found)?;
    if task.status != TaskStatus::Completed {
        return Err(ApiError::Conflict {
            code: ApiErrorCode::NotParsed,
            message: format!(
                "the file has no rows to show: its task is {}",
                task.status.as_str()
            ),
        });
    }
    let sheet = db::rows::find_sheet(&state.db, id, sheet_index)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("file {id} has no sheet {sheet_index}")))?;
    let columns = sheet.decode_columns().map_err(|e| {
        ApiError::Internal(
            anyhow::Error::new(e)
                .context(format!("the columns of file {id}'s sheet {sheet_index}")),
        )
    })?;
    Ok((file, sheet, columns))
}

/// A stored row as the contract shows it: each value typed by its column, and as many values
/// as the sheet has columns (rows read before a longer, ragged row were stored shorter).
pub(super) fn typed(
    values: serde_json::Value,
    types: &[ColumnType],
    width: usize,
) -> Vec<serde_json::Value> {
    let mut values = match values {
        serde_json::Value::Array(values) => values,
        other => vec![other],
    };
    if values.len() < width {
        values.resize(width, serde_json::Value::Null);
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| match types.get(i) {
            Some(&ty) => column_type::render(v, ty),
            None => v,
        })
        .collect()
}
