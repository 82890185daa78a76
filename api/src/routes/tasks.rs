//! `GET /api/v1/tasks/{id}`: what clients poll until the parse is COMPLETED or FAILED, with the
//! task's lineage: its timeline, deliveries, progress while RUNNING and failed attempts.

use axum::extract::State;
use axum::{Extension, Json};
use shared::db;

use crate::auth::Principal;
use crate::error::{ApiError, ErrorBody};
use crate::extract::PathId;
use crate::state::AppState;
use crate::views::TaskDetailView;

/// A parse task: status, attempts, error, result summary, timeline, progress and failed attempts.
#[utoipa::path(
    get,
    path = "/api/v1/tasks/{task_id}",
    tag = "tasks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("task_id" = uuid::Uuid, Path, description = "Task id")),
    responses(
        (status = 200, body = TaskDetailView),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn get_task(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Json<TaskDetailView>, ApiError> {
    let task = db::tasks::find_for_tenant(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no task {id}")))?;
    let lineage = db::tasks::lineage(&state.db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no task {id}")))?;
    Ok(Json(TaskDetailView::new(&task, &lineage)))
}
