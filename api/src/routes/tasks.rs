//! `GET /api/v1/tasks/{id}`: what clients poll until the parse is COMPLETED or FAILED.

use axum::extract::{Path, State};
use axum::Json;
use shared::db;
use uuid::Uuid;

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use crate::views::TaskView;

/// A parse task: status, attempts, error and result summary.
#[utoipa::path(
    get,
    path = "/api/v1/tasks/{task_id}",
    tag = "tasks",
    params(("task_id" = Uuid, Path, description = "Task id")),
    responses((status = 200, body = TaskView), (status = 404, body = ErrorBody))
)]
pub async fn get_task(
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<TaskView>, ApiError> {
    let task = db::tasks::find(&state.db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no task {id}")))?;
    Ok(Json(TaskView::from(&task)))
}
