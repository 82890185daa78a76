//! `PUT /api/v1/tasks/{id}/layout`: a person moves a sheet's header or its table's end when
//! detection guessed wrong (an extension of the contract's "Sheet layout"). The task goes back
//! to `PENDING` with the override and is parsed again, as `PUT …/mapping` sends a reviewed task
//! back: the status change, the outbox message and the removal of what the last parse stored
//! are one transaction, so the file is either as it was or exactly a fresh upload waiting for
//! its parse, and its rows are stored once by the next one. The override stays on the task, so
//! every attempt (a redelivered message, a rescue) parses with it. Of two overrides at once,
//! one wins and the other gets `409`: the status change is conditional.

mod check;

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use shared::db;
use shared::domain::layout_override::LayoutOverride;
use uuid::Uuid;

use crate::auth::Principal;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AppJson, PathId};
use crate::state::AppState;
use crate::views::TaskView;

/// Set where a file's tables lie and parse it again: per sheet, its header row (or none) and
/// its table's last row. The override replaces any earlier one; a key left out, or an empty
/// `sheets`, goes back to what detection finds.
#[utoipa::path(
    put,
    path = "/api/v1/tasks/{task_id}/layout",
    tag = "tasks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("task_id" = uuid::Uuid, Path, description = "Task id")),
    request_body(content = LayoutOverride, content_type = "application/json"),
    responses(
        (status = 202, description = "The task, PENDING again, to be parsed with the layout", body = TaskView),
        (status = 400, description = "The id is not a UUID, or the body is not the request's JSON", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "not_reparsable: the task is PENDING or RUNNING, FAILED with another code than validation_failed, or another request changed it first", body = ErrorBody),
        (status = 422, description = "invalid_layout: every problem with its JSON pointer in `error.details`", body = ErrorBody),
    )
)]
pub async fn put_layout(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(layout): AppJson<LayoutOverride>,
) -> Result<(StatusCode, Json<TaskView>), ApiError> {
    let tenant_id = &principal.tenant_id;
    let task = db::tasks::find_for_tenant(&state.db, tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no task {id}")))?;
    let status = check::check(&task, &layout)?;
    let traceparent = shared::telemetry::propagation::current_traceparent();
    let requeue = db::layouts::Requeue {
        task_id: id,
        source_file_id: task.source_file_id,
        status,
        layout: &layout,
        message_id: Uuid::now_v7(),
        traceparent: traceparent.as_deref(),
    };
    let mut tx = state.db.begin().await?;
    if !db::layouts::requeue(&mut tx, &requeue).await? {
        // Another override, a mapping answer or the review timeout changed the task since we
        // read it: nothing was written.
        let why = "another request changed it first; read it again".to_owned();
        return Err(check::not_reparsable(&task, why));
    }
    tx.commit().await?;
    tracing::info!(task_id = %id, source_file_id = %task.source_file_id, "layout set; task pending again");
    let task = db::tasks::find_for_tenant(&state.db, tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no task {id}")))?;
    Ok((StatusCode::ACCEPTED, Json(TaskView::from(&task))))
}
