//! The JSON shapes of the HTTP contract, built from database rows. Kept apart from the
//! repositories so the wire format can only change here.

use chrono::{DateTime, Utc};
use serde::Serialize;
use shared::db::source_files::SourceFile;
use shared::db::tasks::{Lineage, Task};
use shared::domain::{ColumnType, TaskStatus};
use uuid::Uuid;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SourceFileView {
    pub id: Uuid,
    pub file_name: String,
    pub content_type: String,
    /// One of csv, tsv, xlsx, xlsm, xlsb, xls, ods.
    pub format: String,
    pub size_bytes: i64,
    /// Lowercase hex SHA-256 of the uploaded bytes.
    pub sha256: String,
    pub created_at: DateTime<Utc>,
}

impl From<&SourceFile> for SourceFileView {
    fn from(f: &SourceFile) -> Self {
        Self {
            id: f.id,
            file_name: f.file_name.clone(),
            content_type: f.content_type.clone(),
            format: f.format.clone(),
            size_bytes: f.size_bytes,
            sha256: f.sha256.clone(),
            created_at: f.created_at,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaskErrorView {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaskView {
    pub id: Uuid,
    pub source_file_id: Uuid,
    pub status: TaskStatus,
    pub attempts: i32,
    pub error: Option<TaskErrorView>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Once COMPLETED: `{"rows_total", "sheets": [{"index", "name", "hidden", "rows", "columns",
    /// "column_types", "extra_columns"}], "skipped_parts": ["chart sheet 'Chart1' not readable"]}`.
    /// `extra_columns` counts the `column_N` columns that rows longer than the header added.
    #[schema(value_type = Option<Object>)]
    pub result: Option<serde_json::Value>,
    /// The task's lineage (`GET /api/v1/tasks/{id}` only; absent from lists and uploads).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub lineage: Option<LineageView>,
}

/// Where a task has been: its timeline, deliveries, progress and failed attempts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
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
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TimelineView {
    pub created_at: DateTime<Utc>,
    /// The relay sent the task's message to the queue.
    pub relayed_at: Option<DateTime<Utc>>,
    /// A consumer first took it from the queue.
    pub received_at: Option<DateTime<Utc>>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProgressView {
    /// Rows stored so far.
    pub rows: i64,
    /// Bytes of the file read so far.
    pub bytes: i64,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AttemptErrorView {
    pub attempt: i32,
    /// `transient` or `final`.
    pub kind: String,
    /// The task error code of a final failure.
    pub code: Option<String>,
    pub message: String,
    pub at: DateTime<Utc>,
}

impl TaskView {
    /// The task with its lineage, as `GET /api/v1/tasks/{id}` shows it.
    pub fn with_lineage(task: &Task, lineage: &Lineage) -> Self {
        let running = task.status == TaskStatus::Running;
        let progress = match (running, lineage.progress_rows, lineage.progress_bytes) {
            (true, Some(rows), Some(bytes)) => Some(ProgressView { rows, bytes }),
            (true, ..) => Some(ProgressView { rows: 0, bytes: 0 }),
            _ => None,
        };
        Self {
            lineage: Some(LineageView {
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
                        kind: e.kind.clone(),
                        code: e.code.clone(),
                        message: e.message.clone(),
                        at: e.at,
                    })
                    .collect(),
                trace_id: lineage.trace_id.clone(),
            }),
            ..Self::from(task)
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
            error: t.error_code.as_ref().map(|code| TaskErrorView {
                code: code.clone(),
                message: t.error_message.clone().unwrap_or_default(),
            }),
            created_at: t.created_at,
            started_at: t.started_at,
            finished_at: t.finished_at,
            result: t.result.clone(),
            lineage: None,
        }
    }
}

/// `202` body of an upload.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UploadView {
    pub source_file: SourceFileView,
    pub task: TaskView,
}

/// `GET /api/v1/files/{id}`: the file plus its task.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FileView {
    #[serde(flatten)]
    pub source_file: SourceFileView,
    pub task: TaskView,
}

impl FileView {
    pub fn new(file: &SourceFile, task: &Task) -> Self {
        Self {
            source_file: file.into(),
            task: task.into(),
        }
    }
}

/// `GET /api/v1/files`: a page of the caller's files, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FileList {
    pub files: Vec<FileView>,
    /// Pass as `after` to get the next page; null on the last page.
    pub next_after: Option<Uuid>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SheetView {
    pub index: i32,
    pub name: String,
    pub hidden: bool,
    pub columns: Vec<String>,
    /// The inferred type of each column, in column order.
    pub column_types: Vec<ColumnType>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RowView {
    pub index: i64,
    /// Cell values: strings, numbers, booleans, null; dates as ISO 8601 strings.
    #[schema(value_type = Vec<Object>)]
    pub values: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RowsPage {
    pub sheet: SheetView,
    pub rows: Vec<RowView>,
    /// Pass as `after` to get the next page; null on the last page.
    pub next_after: Option<i64>,
}
