//! `PUT /api/v1/tasks/{id}/mapping`: the answer to a mapping review. The task goes back to
//! `PENDING` with the mapping, and the outbox message that sends it to a consumer again is
//! written by the same statement, so nothing is lost if a worker dies meanwhile; the mapping is
//! remembered for the tenant, template and header set, and its (header text → field) pairs and
//! its value maps are taught to the tenant's template (contract v1.3), in the same
//! transaction. Of two answers at once, one wins and the other gets `409`: the status change
//! is conditional.

mod check;
mod values;

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use shared::db;
use shared::db::learned_values::ValueMaps;
use shared::domain::review::{header_key, RememberedMapping};
use uuid::Uuid;

use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::AppJson;
use crate::extract::PathId;
use crate::state::AppState;
use crate::views::TaskView;

/// The mapping a person chose.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingRequest {
    /// Template field name → 0-based column index of the review's `columns`, or null for no
    /// column. Fields left out have no column.
    #[schema(value_type = Object, example = json!({"invoice": 0, "amount": 2, "note": null}))]
    pub mapping: check::Answer,
    /// Texts of the file mapped to an `enum` or `boolean` field's allowed values (the review's
    /// `values`): field name → (text → value). Applied to this file and learned for the
    /// template, so a later file with those texts goes through.
    #[serde(default)]
    #[schema(value_type = Object, example = json!({"paid": {"Y": "true", "ja": "true"}, "state": {"Calif.": "CA"}}))]
    pub values: ValueMaps,
}

/// Confirm the column mapping of a task waiting in `NEEDS_REVIEW`; it goes back to `PENDING`.
#[utoipa::path(
    put,
    path = "/api/v1/tasks/{task_id}/mapping",
    tag = "tasks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("task_id" = uuid::Uuid, Path, description = "Task id")),
    request_body(content = MappingRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "The task, PENDING again", body = TaskView),
        (status = 400, description = "The id is not a UUID, or the body is not the request's JSON", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "not_in_review: the task is not waiting in NEEDS_REVIEW (or another answer won)", body = ErrorBody),
        (status = 422, description = "invalid_mapping: every problem with its JSON pointer in `error.details`", body = ErrorBody),
    )
)]
pub async fn put_mapping(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(request): AppJson<MappingRequest>,
) -> Result<(StatusCode, Json<TaskView>), ApiError> {
    let tenant_id = &principal.tenant_id;
    let Some(pending) = db::reviews::pending(&state.db, tenant_id, id).await? else {
        return Err(
            match db::tasks::find_for_tenant(&state.db, tenant_id, id).await? {
                Some(task) => not_in_review(id, task.status.as_str()),
                None => ApiError::NotFound(format!("no task {id}")),
            },
        );
    };
    let review = pending.review.0;
    let template = state
        .compiler
        .compile(pending.schema)
        .await
        .map_err(ApiError::Internal)?
        .map_err(|_| {
            ApiError::Internal(anyhow::anyhow!(
                "template {} version {} no longer compiles",
                pending.template_name,
                pending.template_version
            ))
        })?;
    let mapping = check::check(&template, review.columns.len(), &request.mapping);
    let values = values::check(&template, &request.values);
    let (mapping, values) = match (mapping, values) {
        (Ok(m), Ok(v)) => (m, v),
        (m, v) => {
            let mut problems = m.err().unwrap_or_default();
            problems.extend(v.err().unwrap_or_default());
            return Err(ApiError::InvalidMapping(problems));
        }
    };
    let header: Vec<&str> = review.columns.iter().map(|c| c.name.as_str()).collect();
    let remembered: RememberedMapping = mapping
        .iter()
        .map(|(field, column)| (field.clone(), column.map(|c| header[c].to_owned())))
        .collect();
    let learned = db::learned_columns::pairs(&header, &mapping);
    let traceparent = shared::telemetry::propagation::current_traceparent();

    let mut tx = state.db.begin().await?;
    let confirmation = db::reviews::Confirmation {
        task_id: id,
        source_file_id: pending.source_file_id,
        mapping: &mapping,
        message_id: Uuid::now_v7(),
        traceparent: traceparent.as_deref(),
    };
    if !db::reviews::confirm(&mut *tx, &confirmation).await? {
        // Another answer (or the review timeout) changed the task since we read it.
        return Err(not_in_review(id, "no longer NEEDS_REVIEW"));
    }
    db::remembered_mappings::remember(
        &mut *tx,
        tenant_id,
        &pending.template_name,
        &header_key(&header),
        &remembered,
    )
    .await?;
    db::learned_columns::learn(
        &mut tx,
        tenant_id,
        &pending.template_name,
        &header,
        &learned,
    )
    .await?;
    db::learned_values::learn(&mut tx, tenant_id, &pending.template_name, &values).await?;
    tx.commit().await?;
    tracing::info!(task_id = %id, source_file_id = %pending.source_file_id, "mapping confirmed; task pending again");
    let task = db::tasks::find_for_tenant(&state.db, tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no task {id}")))?;
    Ok((StatusCode::ACCEPTED, Json(TaskView::from(&task))))
}

fn not_in_review(id: Uuid, status: &str) -> ApiError {
    ApiError::Conflict {
        code: ApiErrorCode::NotInReview,
        message: format!("task {id} is not waiting for a mapping review (status {status})"),
    }
}
