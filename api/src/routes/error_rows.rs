//! `GET /api/v1/files/{id}/errors/rows` (an extension of contract v1.3, "Corrections"): the rows
//! that have errors, whole, for the page's and the component's editable grid. Each row has its
//! cells by template field, with the text as corrected (or as uploaded, `?revision=0`), its
//! error records, and where it sits among the rows that `…/rows` pages (`index`), so a grid can
//! show it in file order among the valid rows. The rows come from the same query as the
//! rejected-rows export (`…/errors/export`), paged by row number; the same `409 not_parsed`
//! before the task is final, and a file uploaded without a template has none.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use shared::db;
use shared::db::corrections::RejectedWithErrors;
use shared::db::overlay::Overlay;
use shared::domain::task_result::ValidationResult;
use shared::domain::ErrorRecord;

use super::errors::{cell_text, corrected, final_file};
use super::query;
use crate::auth::Principal;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AppQuery, PathId};
use crate::state::AppState;

const DEFAULT_LIMIT: i64 = 100;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ErrorRowsQuery {
    /// Sheet index; the sheet checked against the template by default (only it has errors).
    #[param(minimum = 0)]
    pub sheet: Option<i32>,
    /// Return rows after this row number (the previous page's `next_after`).
    #[param(minimum = 0)]
    pub after: Option<i64>,
    /// Page size, 1..1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// `0`: the rows that had errors at upload, as uploaded; the latest revision's by default.
    #[param(minimum = 0)]
    pub revision: Option<i32>,
}

/// A row that has errors.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorRowView {
    pub sheet: i32,
    /// The row number, as in the error report.
    pub row: i64,
    /// Where the row sits among the sheet's rows as `…/rows` pages them: its own index when it
    /// is stored (`keep_invalid_rows`), else the index of the stored row it comes before; null
    /// for a file parsed before this was kept.
    pub index: Option<i64>,
    /// Each template field's text in this row (as corrected); null for an empty cell (as a
    /// correction to `null` or `""` leaves it) or a field with no column in the file.
    pub cells: BTreeMap<String, Option<String>>,
    /// The row's error records, in file order.
    pub errors: Vec<ErrorRecord>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorRowsPage {
    pub rows: Vec<ErrorRowView>,
    /// Pass as `after` for the next page; null on the last page.
    pub next_after: Option<i64>,
}

/// A page of the rows that have errors, whole, in file order.
#[utoipa::path(
    get,
    path = "/api/v1/files/{source_file_id}/errors/rows",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = Uuid, Path, description = "Source file id"), ErrorRowsQuery),
    responses(
        (status = 200, body = ErrorRowsPage),
        (status = 400, description = "Bad id, sheet, after, limit or revision", body = ErrorBody),
        (status = 404, description = "Unknown file", body = ErrorBody),
        (status = 409, description = "The file's task is not final yet", body = ErrorBody),
    )
)]
pub async fn list_error_rows(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppQuery(q): AppQuery<ErrorRowsQuery>,
) -> Result<Json<ErrorRowsPage>, ApiError> {
    let limit = query::limit(q.limit, DEFAULT_LIMIT)?;
    let after = query::after(q.after)?;
    let asked_sheet = q.sheet.map(|s| query::sheet(Some(s))).transpose()?;
    let (_, task) = final_file(&state, &principal, id).await?;
    let latest = corrected(&state, id, q.revision).await?;
    let empty = || {
        Json(ErrorRowsPage {
            rows: Vec::new(),
            next_after: None,
        })
    };
    let Some(validation) = task.result.and_then(|r| r.0.validation) else {
        return Ok(empty());
    };
    let sheet = asked_sheet.unwrap_or_else(|| i32::try_from(validation.sheet).unwrap_or(i32::MAX));
    let mut rows = db::corrections::rejected_page(
        &state.db,
        id,
        latest,
        Some((sheet, after.unwrap_or(0))),
        limit + 1,
    )
    .await?;
    // Past the sheet asked for, the next sheet's rows (none: one sheet is checked).
    rows.retain(|r| r.sheet == sheet);
    let (rows, next_after) = query::cut(rows, limit, |r| r.row_number);
    // Revision 0 places rows among the stored rows as they were; the latest, among the rows
    // as merged with the ones corrections made valid.
    let overlay = if latest {
        match db::rows::find_sheet(&state.db, id, sheet).await? {
            Some(s) => Overlay::load(&state.db, id, sheet, s.row_count).await?,
            None => None,
        }
    } else {
        None
    };
    let rows = rows
        .into_iter()
        .map(|r| view(r, &validation, overlay.as_ref()))
        .collect();
    Ok(Json(ErrorRowsPage { rows, next_after }))
}

/// A stored row with errors as the grid shows it: its cells by field, placed among the rows.
fn view(
    row: RejectedWithErrors,
    validation: &ValidationResult,
    overlay: Option<&Overlay>,
) -> ErrorRowView {
    let cells = validation
        .mapping
        .iter()
        .map(|m| {
            let cell = m.column_index.and_then(|c| match &row.cells {
                serde_json::Value::Array(cells) => cells.get(c),
                other => (c == 0).then_some(other),
            });
            let text = cell.map(cell_text).filter(|t| !t.is_empty());
            (m.field.clone(), text)
        })
        .collect();
    // A corrected row whose place was never known is stored with the largest index.
    let index = row
        .stored_index
        .filter(|&s| s != i64::MAX)
        .map(|s| overlay.map_or(s, |o| o.index_of(s, row.row_number)));
    ErrorRowView {
        sheet: row.sheet,
        row: row.row_number,
        index,
        cells,
        errors: row.errors.0,
    }
}
