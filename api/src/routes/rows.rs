//! `GET /api/v1/files/{id}/rows`: keyset pagination over the parsed rows of one sheet. CSV cells
//! are stored as text and typed here from the sheet's inferred column types, so the parse needs
//! one pass and no memory of the whole file.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use shared::db;

use super::query;
use crate::auth::Principal;
use crate::corrections::overlay::Overlay;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AppQuery, PathId};
use crate::sheets::{parsed_sheet, typed};
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
        (status = 404, description = "Unknown file, or no such sheet", body = ErrorBody),
        (status = 409, description = "The file is not parsed (yet, or it failed)", body = ErrorBody),
    )
)]
pub async fn list_rows(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppQuery(q): AppQuery<RowsQuery>,
) -> Result<Json<RowsPage>, ApiError> {
    let sheet_index = query::sheet(q.sheet)?;
    let limit = query::limit(q.limit, DEFAULT_LIMIT)?;
    let after = query::after(q.after)?;
    let (_, sheet, columns) = parsed_sheet(&state, &principal, id, sheet_index).await?;

    // One extra row tells whether another page follows. A corrected file's rows are the
    // latest revision's.
    let rows = match Overlay::load(&state.db, id, sheet_index, sheet.row_count).await? {
        Some(overlay) => {
            overlay
                .page(&state.db, id, sheet_index, after, limit + 1)
                .await?
        }
        None => db::rows::page(&state.db, id, sheet_index, after, limit + 1).await?,
    };
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
