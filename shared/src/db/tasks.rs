//! `tasks`: the parse job of one source file. Every state change is a conditional update, so a
//! redelivered queue message or a racing consumer can never move a task backwards or twice.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

use sqlx::types::Json;

use crate::domain::layout_override::LayoutOverride;
use crate::domain::review::Review;
use crate::domain::task_result::TaskResult;
use crate::domain::{AttemptKind, TaskErrorCode, TaskStatus};

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: Uuid,
    pub source_file_id: Uuid,
    pub status: TaskStatus,
    pub attempts: i32,
    pub error_code: Option<TaskErrorCode>,
    pub error_message: Option<String>,
    /// Decoded where it is read: a stored result that is not a [`TaskResult`] is an error.
    pub result: Option<Json<TaskResult>>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// While NEEDS_REVIEW: the review document.
    pub review: Option<Json<Review>>,
    /// Where a person said the file's tables lie (`PUT /api/v1/tasks/{id}/layout`): every
    /// attempt parses with it.
    pub layout_override: Option<Json<LayoutOverride>>,
}

pub async fn find(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<Option<Task>> {
    sqlx::query_as!(
        Task,
        r#"SELECT id, source_file_id, status AS "status: TaskStatus", attempts,
                  error_code AS "error_code: TaskErrorCode",
                  error_message, result AS "result: Json<TaskResult>", lease_expires_at, created_at,
                  started_at, finished_at, CASE WHEN status = 'NEEDS_REVIEW' THEN review END AS "review: Json<Review>",
                  layout_override AS "layout_override: Json<LayoutOverride>"
           FROM tasks WHERE id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}

/// The task `id` when its file belongs to `tenant_id`; `None` for an unknown id and for another
/// tenant's task.
pub async fn find_for_tenant(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<Task>> {
    sqlx::query_as!(
        Task,
        r#"SELECT t.id, t.source_file_id, t.status AS "status: TaskStatus", t.attempts,
                  t.error_code AS "error_code: TaskErrorCode", t.error_message,
                  t.result AS "result: Json<TaskResult>",
                  t.lease_expires_at, t.created_at, t.started_at, t.finished_at,
                  CASE WHEN t.status = 'NEEDS_REVIEW' THEN t.review END
                    AS "review: Json<Review>",
                  t.layout_override AS "layout_override: Json<LayoutOverride>"
           FROM tasks t JOIN source_files f ON f.id = t.source_file_id
           WHERE t.id = $1 AND f.tenant_id = $2 AND f.deleting_at IS NULL"#,
        id,
        tenant_id
    )
    .fetch_optional(db)
    .await
}

pub async fn find_by_source_file(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
) -> sqlx::Result<Option<Task>> {
    sqlx::query_as!(
        Task,
        r#"SELECT id, source_file_id, status AS "status: TaskStatus", attempts,
                  error_code AS "error_code: TaskErrorCode",
                  error_message, result AS "result: Json<TaskResult>", lease_expires_at, created_at,
                  started_at, finished_at, CASE WHEN status = 'NEEDS_REVIEW' THEN review END AS "review: Json<Review>",
                  layout_override AS "layout_override: Json<LayoutOverride>"
           FROM tasks WHERE source_file_id = $1"#,
        source_file_id
    )
    .fetch_optional(db)
    .await
}

/// Takes the task for processing: PENDING → RUNNING, or a RUNNING task whose holder's lease ran
/// out (its consumer died). `None` when someone else holds it or it is already final. Records
/// when the task was first received and its message's `dequeue_count`.
pub async fn start(
    db: impl PgExecutor<'_>,
    id: Uuid,
    lease: Duration,
    dequeue_count: i32,
) -> sqlx::Result<Option<Task>> {
    sqlx::query_as!(
        Task,
        r#"UPDATE tasks
           SET status = 'RUNNING', attempts = attempts + 1, started_at = now(),
               lease_expires_at = now() + make_interval(secs => $2),
               received_at = COALESCE(received_at, now()),
               dequeue_count = GREATEST(dequeue_count, $3),
               progress_rows = NULL, progress_bytes = NULL, progress_at = NULL
           WHERE id = $1
             AND (status = 'PENDING' OR (status = 'RUNNING' AND lease_expires_at < now()))
             -- A file being removed (retention, a tenant purge) is not parsed again.
             AND NOT EXISTS (SELECT 1 FROM source_files f
                             WHERE f.id = tasks.source_file_id AND f.deleting_at IS NOT NULL)
           RETURNING id, source_file_id, status AS "status: TaskStatus", attempts,
                     error_code AS "error_code: TaskErrorCode", error_message,
                     result AS "result: Json<TaskResult>", lease_expires_at, created_at,
                     started_at, finished_at, NULL::jsonb AS "review: Json<Review>",
                     layout_override AS "layout_override: Json<LayoutOverride>""#,
        id,
        lease.as_secs_f64(),
        dequeue_count
    )
    .fetch_optional(db)
    .await
}

/// Extends the lease of the attempt we hold; `false` means we no longer hold it.
pub async fn renew_lease(
    db: impl PgExecutor<'_>,
    id: Uuid,
    attempt: i32,
    lease: Duration,
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"UPDATE tasks SET lease_expires_at = now() + make_interval(secs => $3)
           WHERE id = $1 AND status = 'RUNNING' AND attempts = $2"#,
        id,
        attempt,
        lease.as_secs_f64()
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives the task back (shutdown, or a transient failure): RUNNING → PENDING, so the redelivered
/// message can start it again at once instead of waiting for the lease to run out.
pub async fn release(db: impl PgExecutor<'_>, id: Uuid, attempt: i32) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"UPDATE tasks SET status = 'PENDING', lease_expires_at = NULL
           WHERE id = $1 AND status = 'RUNNING' AND attempts = $2"#,
        id,
        attempt
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// RUNNING (our attempt) → COMPLETED with its summary. Meant to run in the transaction that
/// stored the rows, so rows and status commit together; `false` means we lost the task and the
/// caller must roll back.
///
/// `finished_at` is the time of this statement, the last of the transaction that stores the
/// result (`clock_timestamp()`, not `now()`, which is when the transaction began: before a long
/// `COPY` of the rows, seconds earlier than the result was committed).
pub async fn complete(
    db: impl PgExecutor<'_>,
    id: Uuid,
    attempt: i32,
    result: &TaskResult,
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"UPDATE tasks
           SET status = 'COMPLETED', result = $3, finished_at = clock_timestamp(),
               lease_expires_at = NULL
           WHERE id = $1 AND status = 'RUNNING' AND attempts = $2"#,
        id,
        attempt,
        Json(result) as _
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Fails a task that is not final yet (a file that cannot be parsed, a poison message). When
/// `attempt` is given, only that attempt of a RUNNING task may fail it. `result` is kept for a
/// file that was read but refused as a whole (a templated upload's validation counts).
pub async fn fail(
    db: impl PgExecutor<'_>,
    id: Uuid,
    attempt: Option<i32>,
    code: TaskErrorCode,
    message: &str,
    result: Option<&TaskResult>,
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"WITH failed AS (
               UPDATE tasks
               SET status = 'FAILED', error_code = $3, error_message = $4,
                   finished_at = clock_timestamp(), lease_expires_at = NULL, result = $5
               WHERE id = $1 AND status IN ('PENDING', 'RUNNING')
                 AND ($2::int IS NULL OR (status = 'RUNNING' AND attempts = $2))
               RETURNING id, attempts
           )
           INSERT INTO task_attempt_errors (task_id, attempt, kind, code, message)
           SELECT id, attempts, 'final', $3, $4 FROM failed"#,
        id,
        attempt,
        code.as_str(),
        message,
        result.map(Json) as _
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Fails, as `review_expired`, up to `limit` tasks that have waited in NEEDS_REVIEW longer
/// than `timeout`, oldest first, in one statement (the status trigger writes their
/// `task.failed` events). Returns how many.
pub async fn expire_reviews(
    db: impl PgExecutor<'_>,
    timeout: Duration,
    limit: i64,
) -> sqlx::Result<u64> {
    let code = TaskErrorCode::ReviewExpired.as_str();
    let message = format!(
        "the mapping review was not answered within {}",
        humantime::format_duration(timeout)
    );
    let done = sqlx::query!(
        r#"WITH expired AS (
               UPDATE tasks
               SET status = 'FAILED', error_code = $3, error_message = $4, finished_at = now(),
                   review_requested_at = NULL
               WHERE id IN (SELECT id FROM tasks
                            WHERE review_requested_at < now() - make_interval(secs => $1)
                            ORDER BY review_requested_at LIMIT $2
                            FOR UPDATE SKIP LOCKED)
                 AND status = 'NEEDS_REVIEW'
               RETURNING id, attempts
           )
           INSERT INTO task_attempt_errors (task_id, attempt, kind, code, message)
           SELECT id, attempts, 'final', $3, $4 FROM expired"#,
        timeout.as_secs_f64(),
        limit,
        code,
        message
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Records a failed attempt that released the task for a retry (a transient failure), for the
/// task's error history.
pub async fn record_transient_error(
    db: impl PgExecutor<'_>,
    id: Uuid,
    attempt: i32,
    message: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"INSERT INTO task_attempt_errors (task_id, attempt, kind, message)
           VALUES ($1, $2, 'transient', $3)"#,
        id,
        attempt,
        message
    )
    .execute(db)
    .await?;
    Ok(())
}

/// How far the running attempt `attempt` has got; a no-op once the attempt no longer holds the
/// task.
pub async fn report_progress(
    db: impl PgExecutor<'_>,
    id: Uuid,
    attempt: i32,
    rows: i64,
    bytes: i64,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"UPDATE tasks SET progress_rows = $3, progress_bytes = $4, progress_at = now()
           WHERE id = $1 AND status = 'RUNNING' AND attempts = $2"#,
        id,
        attempt,
        rows,
        bytes
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Seconds since the oldest task that the relay sent to the queue and no consumer has started
/// was sent; 0 when none waits. The relay exports it: when consumers are not started at all (a
/// scale-to-zero job the platform stops starting), no consumer is there to report its queue
/// wait, and this is what still rises. Read through `tasks_in_flight`, so it costs what is in
/// flight, not the table.
pub async fn oldest_queued_secs(db: impl PgExecutor<'_>) -> sqlx::Result<f64> {
    let secs = sqlx::query_scalar!(
        r#"SELECT coalesce(extract(epoch FROM now() - min(relayed_at)), 0)::float8 AS "secs!"
           FROM tasks WHERE status = 'PENDING' AND relayed_at IS NOT NULL"#
    )
    .fetch_one(db)
    .await?;
    Ok(secs.max(0.0))
}

/// What a task's record adds to its status: its timeline, deliveries, progress and the errors
/// of its failed attempts, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Lineage {
    pub relayed_at: Option<DateTime<Utc>>,
    pub received_at: Option<DateTime<Utc>>,
    pub dequeue_count: i32,
    pub progress_rows: Option<i64>,
    pub progress_bytes: Option<i64>,
    pub trace_id: Option<String>,
    pub errors: Vec<AttemptError>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AttemptError {
    pub attempt: i32,
    pub kind: AttemptKind,
    pub code: Option<TaskErrorCode>,
    pub message: String,
    pub at: DateTime<Utc>,
}

pub async fn lineage(db: &sqlx::PgPool, id: Uuid) -> sqlx::Result<Option<Lineage>> {
    let Some(row) = sqlx::query!(
        r#"SELECT relayed_at, received_at, dequeue_count, progress_rows, progress_bytes, trace_id
           FROM tasks WHERE id = $1"#,
        id
    )
    .fetch_optional(db)
    .await?
    else {
        return Ok(None);
    };
    let errors = sqlx::query_as!(
        AttemptError,
        r#"SELECT attempt, kind AS "kind: AttemptKind", code AS "code: TaskErrorCode", message, at
           FROM task_attempt_errors
           WHERE task_id = $1 ORDER BY at, attempt"#,
        id
    )
    .fetch_all(db)
    .await?;
    Ok(Some(Lineage {
        relayed_at: row.relayed_at,
        received_at: row.received_at,
        dequeue_count: row.dequeue_count,
        progress_rows: row.progress_rows,
        progress_bytes: row.progress_bytes,
        trace_id: row.trace_id,
        errors,
    }))
}
