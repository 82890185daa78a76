//! The JSON shape of a parse task: what `GET /api/v1/tasks/{id}` answers and what
//! `worker task show` prints, so operators and clients read the same record.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::db::tasks::{Lineage, Task};
use crate::domain::layout_override::LayoutOverride;
use crate::domain::review::Review;
use crate::domain::task_result::TaskResult;
use crate::domain::{AttemptKind, TaskErrorCode, TaskStatus};

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskErrorView {
    pub code: TaskErrorCode,
    pub message: String,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskView {
    pub id: Uuid,
    pub source_file_id: Uuid,
    pub status: TaskStatus,
    pub attempts: i32,
    pub error: Option<TaskErrorView>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    /// When the task became final: the moment its result (rows, report, status) was written,
    /// in the transaction that committed it (for a COMPLETED task, after its rows were stored).
    pub finished_at: Option<DateTime<Utc>>,
    /// Once COMPLETED (and on a task FAILED with `validation_failed`): rows stored, each
    /// sheet with its columns, types and layout (where its header, data and any rows set
    /// aside lie), and a templated upload's validation counts.
    pub result: Option<TaskResult>,
    /// Only while NEEDS_REVIEW: why the mapping needs a person, the file's columns with sample
    /// values and the suggested mapping (answer with `PUT /api/v1/tasks/{id}/mapping`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// The header rows and table ends a person set (`PUT /api/v1/tasks/{id}/layout`), which
    /// the last parse (or the one to come) forced instead of detecting; absent when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_override: Option<LayoutOverride>,
}

/// `GET /api/v1/tasks/{id}`: the task and its lineage in one object. A type of its own (rather
/// than an optional lineage inside [`TaskView`]) so the OpenAPI document says exactly which
/// answers carry the lineage: the schema fuzzer caught the optional version describing lists
/// and uploads wrongly.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskDetailView {
    #[serde(flatten)]
    pub task: TaskView,
    #[serde(flatten)]
    pub lineage: LineageView,
}

/// Where a task has been: its timeline, deliveries, progress and failed attempts.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LineageView {
    pub timeline: TimelineView,
    /// How often the task's queue message had been delivered when it last started.
    pub dequeue_count: i32,
    /// While RUNNING: how far the current attempt has got (refreshed about every second).
    pub progress: Option<ProgressView>,
    /// Every failed attempt, oldest first: `transient` ones released the task for a retry,
    /// the `final` one failed it.
    pub errors: Vec<AttemptErrorView>,
    /// The upload's trace id (null when tracing was off): one trace holds the upload, the
    /// relay's send and the consumer's parse.
    pub trace_id: Option<String>,
}

/// When each step happened; null until it has.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TimelineView {
    pub created_at: DateTime<Utc>,
    /// The relay sent the task's message to the queue.
    pub relayed_at: Option<DateTime<Utc>>,
    /// A consumer first took it from the queue.
    pub received_at: Option<DateTime<Utc>>,
    pub started_at: Option<DateTime<Utc>>,
    /// The result was written, in the transaction that committed it.
    pub finished_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProgressView {
    /// Rows stored so far.
    pub rows: i64,
    /// Bytes of the file read so far.
    pub bytes: i64,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptErrorView {
    pub attempt: i32,
    pub kind: AttemptKind,
    /// The task error code of a final failure.
    pub code: Option<TaskErrorCode>,
    pub message: String,
    pub at: DateTime<Utc>,
}

impl TaskDetailView {
    /// The task with its lineage, as `GET /api/v1/tasks/{id}` shows it.
    pub fn new(task: &Task, lineage: &Lineage) -> Self {
        let running = task.status == TaskStatus::Running;
        let progress = match (running, lineage.progress_rows, lineage.progress_bytes) {
            (true, Some(rows), Some(bytes)) => Some(ProgressView { rows, bytes }),
            (true, ..) => Some(ProgressView { rows: 0, bytes: 0 }),
            _ => None,
        };
        Self {
            task: TaskView::from(task),
            lineage: LineageView {
                timeline: TimelineView {
                    created_at: task.created_at,
                    relayed_at: lineage.relayed_at,
                    received_at: lineage.received_at,
                    started_at: task.started_at,
                    finished_at: task.finished_at,
                },
                dequeue_count: lineage.dequeue_count,
                progress,
                errors: lineage
                    .errors
                    .iter()
                    .map(|e| AttemptErrorView {
                        attempt: e.attempt,
                        kind: e.kind,
                        code: e.code,
                        message: e.message.clone(),
                        at: e.at,
                    })
                    .collect(),
                trace_id: lineage.trace_id.clone(),
            },
        }
    }
}

impl From<&Task> for TaskView {
    fn from(t: &Task) -> Self {
        Self {
            id: t.id,
            source_file_id: t.source_file_id,
            status: t.status,
            attempts: t.attempts,
            error: t.error_code.map(|code| TaskErrorView {
                code,
                message: t.error_message.clone().unwrap_or_default(),
            }),
            created_at: t.created_at,
            started_at: t.started_at,
            finished_at: t.finished_at,
            result: t.result.as_ref().map(|r| r.0.clone()),
            review: t.review.as_ref().map(|r| r.0.clone()),
            layout_override: t.layout_override.as_ref().map(|l| l.0.clone()),
        }
    }
}
