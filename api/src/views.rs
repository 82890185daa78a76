//! The JSON shapes of the HTTP contract, built from database rows. Kept apart from the
//! repositories so the wire format can only change here.

use chrono::{DateTime, Utc};
use serde::Serialize;
use shared::db::source_files::SourceFile;
use shared::db::tasks::Task;
use shared::domain::origin::Origin;
use shared::domain::{ColumnType, FileFormat};
pub use shared::task_view::{TaskDetailView, TaskView};
use uuid::Uuid;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SourceFileView {
    pub id: Uuid,
    pub file_name: String,
    pub content_type: String,
    /// One of csv, tsv, xlsx, xlsm, xlsb, xls, ods.
    pub format: FileFormat,
    pub size_bytes: i64,
    /// Lowercase hex SHA-256 of the uploaded bytes.
    pub sha256: String,
    pub created_at: DateTime<Utc>,
    /// The application's own JSON object given with the upload (`metadata` part, or tus
    /// `Upload-Metadata`), as given; null when none was.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    /// The end user an import session uploaded it for (`id`, `name`, `email`); null otherwise.
    #[schema(value_type = Option<Object>)]
    pub end_user: Option<serde_json::Value>,
    /// The Blob source it was imported from (`source_id`, `blob`, `etag`); null for an HTTP
    /// upload.
    pub origin: Option<Origin>,
}

impl From<&SourceFile> for SourceFileView {
    fn from(f: &SourceFile) -> Self {
        Self {
            id: f.id,
            file_name: f.file_name.clone(),
            content_type: f.content_type.clone(),
            format: f.format,
            size_bytes: f.size_bytes,
            sha256: f.sha256.clone(),
            created_at: f.created_at,
            metadata: f.metadata.clone(),
            end_user: f.end_user.clone(),
            origin: f.origin.as_ref().map(|o| o.0.clone()),
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
