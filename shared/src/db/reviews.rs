//! The mapping review's task states: a RUNNING attempt stops its task in `NEEDS_REVIEW` with
//! the review document ([`request`]); a person's mapping sends it back to `PENDING` with an
//! outbox message, as an upload does ([`confirm`]); the next attempt reads the mapping
//! ([`confirmed_mapping`]). What the review waits for holds no worker and no lease, only rows.

use sqlx::types::Json;
use sqlx::PgExecutor;
use uuid::Uuid;

use super::outbox::DEFAULT_MAX_ATTEMPTS;
use crate::domain::review::{ConfirmedMapping, Review};
use crate::domain::{ParseTaskPayload, PARSE_TASK};

/// RUNNING (our attempt) → NEEDS_REVIEW with the review document, the lease dropped. The
/// status trigger writes the `task.needs_review` event in the same statement. `false`: we no
/// longer hold the task.
pub async fn request(
    db: impl PgExecutor<'_>,
    task_id: Uuid,
    attempt: i32,
    review: &Review,
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"UPDATE tasks
           SET status = 'NEEDS_REVIEW', review = $3, review_requested_at = now(),
               lease_expires_at = NULL, confirmed_mapping = NULL,
               progress_rows = NULL, progress_bytes = NULL, progress_at = NULL
           WHERE id = $1 AND status = 'RUNNING' AND attempts = $2"#,
        task_id,
        attempt,
        Json(review) as _
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What a task in review shows: its review document and the template its file names.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub task_id: Uuid,
    pub source_file_id: Uuid,
    pub review: Json<Review>,
    pub template_name: String,
    pub template_version: i32,
    /// The template's Table Schema: kept as JSON because `shared` does not know templates;
    /// the api compiles it to check the answer.
    pub schema: serde_json::Value,
}

/// The task `task_id` of `tenant_id` when it waits in `NEEDS_REVIEW`, with what checking an
/// answer needs. `None` otherwise (unknown, another tenant's, or not in review: the caller
/// tells these apart).
pub async fn pending(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    task_id: Uuid,
) -> sqlx::Result<Option<Pending>> {
    sqlx::query_as!(
        Pending,
        r#"SELECT t.id AS task_id, t.source_file_id, t.review AS "review!: Json<Review>",
                  tp.name AS template_name, tp.version AS template_version, tp.schema
           FROM tasks t
           JOIN source_files f ON f.id = t.source_file_id
           JOIN templates tp ON tp.tenant_id = f.tenant_id AND tp.name = f.template_name
                            AND tp.version = f.template_version
           WHERE t.id = $1 AND f.tenant_id = $2 AND t.status = 'NEEDS_REVIEW'"#,
        task_id,
        tenant_id
    )
    .fetch_optional(db)
    .await
}

/// The answer to a review.
pub struct Confirmation<'a> {
    pub task_id: Uuid,
    pub source_file_id: Uuid,
    pub mapping: &'a ConfirmedMapping,
    pub message_id: Uuid,
    /// The answering request's trace, continued by the relay and the consumer.
    pub traceparent: Option<&'a str>,
}

/// NEEDS_REVIEW → PENDING with the confirmed mapping, and the outbox message that sends the
/// task to a consumer again, in one statement (both or neither). `false`: the task was no
/// longer in review (another answer won).
pub async fn confirm(db: impl PgExecutor<'_>, c: &Confirmation<'_>) -> sqlx::Result<bool> {
    let payload =
        ParseTaskPayload::new(c.task_id, c.source_file_id, None).with_traceparent(c.traceparent);
    let payload = serde_json::to_value(&payload).map_err(|e| sqlx::Error::Encode(e.into()))?;
    let done = sqlx::query!(
        r#"WITH resumed AS (
               UPDATE tasks
               SET status = 'PENDING', confirmed_mapping = $3, review_requested_at = NULL
               WHERE id = $1 AND source_file_id = $2 AND status = 'NEEDS_REVIEW'
               RETURNING id
           )
           INSERT INTO outbox_messages (id, event_type, payload, max_attempts, tenant_id)
           SELECT $4, $5, $6, $7, f.tenant_id
           FROM resumed, source_files f WHERE f.id = $2"#,
        c.task_id,
        c.source_file_id,
        Json(c.mapping) as _,
        c.message_id,
        PARSE_TASK,
        payload,
        DEFAULT_MAX_ATTEMPTS
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A mapping a person confirmed, and the sheet its review was about.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmed {
    pub mapping: Json<ConfirmedMapping>,
    pub sheet: Option<String>,
}

/// The mapping confirmed for `task_id`'s next attempt, if any.
pub async fn confirmed_mapping(
    db: impl PgExecutor<'_>,
    task_id: Uuid,
) -> sqlx::Result<Option<Confirmed>> {
    sqlx::query_as!(
        Confirmed,
        r#"SELECT confirmed_mapping AS "mapping!: Json<ConfirmedMapping>", review->>'sheet' AS sheet
           FROM tasks WHERE id = $1 AND confirmed_mapping IS NOT NULL"#,
        task_id
    )
    .fetch_optional(db)
    .await
}
