//! `GET /api/v1/files/{id}/rows/export?sheet=N&format=csv|ndjson`: a whole parsed sheet as a
//! download. Chunks are read from Postgres as a stream and turned into CSV (header row first) or
//! NDJSON (one JSON array of values per line) by a task that hands them to the response through
//! a small channel, so memory holds a few chunks whatever the sheet's size, and a client that
//! reads slowly slows the query down instead of filling memory. Values are typed by column
//! exactly as the rows endpoint types them.

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use shared::db;
use shared::domain::ColumnType;
use sqlx::PgPool;
use uuid::Uuid;

use super::rows::{parsed_sheet, typed};
use super::{query, PathId};
use crate::auth::Principal;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// Chunks converted ahead of the client.
const CHANNEL_CHUNKS: usize = 4;

#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// RFC 4180 CSV with a header row.
    #[default]
    Csv,
    /// One JSON array of cell values per line.
    Ndjson,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// Sheet index (0 for CSV/TSV).
    #[param(minimum = 0)]
    pub sheet: Option<i32>,
    /// `csv` (default) or `ndjson`.
    pub format: Option<ExportFormat>,
}

/// The parsed rows of one sheet as CSV or NDJSON, streamed.
#[utoipa::path(
    get,
    path = "/api/v1/files/{source_file_id}/rows/export",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = Uuid, Path, description = "Source file id"), ExportQuery),
    responses(
        (status = 200, description = "The whole sheet: text/csv, or application/x-ndjson for format=ndjson", content_type = "text/csv", body = String),
        (status = 400, description = "Bad id, sheet or format", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 404, description = "Unknown file, or no such sheet", body = ErrorBody),
        (status = 409, description = "The file is not parsed (yet, or it failed)", body = ErrorBody),
    )
)]
pub async fn export_rows(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    q: Result<Query<ExportQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q.map_err(query::rejected)?;
    let sheet_index = query::sheet(q.sheet)?;
    let format = q.format.unwrap_or_default();
    let sheet = parsed_sheet(&state, &principal, id, sheet_index).await?;
    let types: Vec<ColumnType> = serde_json::from_value(sheet.column_types).unwrap_or_default();
    let columns: Vec<String> = serde_json::from_value(sheet.columns).unwrap_or_default();
    let file = db::source_files::find_for_tenant(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no source file {id}")))?;

    let (content_type, extension) = match format {
        ExportFormat::Csv => ("text/csv; charset=utf-8", "csv"),
        ExportFormat::Ndjson => ("application/x-ndjson", "ndjson"),
    };
    let file_name = download_name(&file.file_name, &sheet.name, extension);
    let (tx, rx) = tokio::sync::mpsc::channel(CHANNEL_CHUNKS);
    tokio::spawn(produce(
        state.db.clone(),
        id,
        sheet_index,
        Encoder {
            format,
            types,
            columns,
        },
        tx,
    ));
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file_name}\""),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

type Item = Result<Bytes, std::io::Error>;

/// Reads the sheet's chunks and sends them encoded; stops when the client goes away.
async fn produce(
    db: PgPool,
    id: Uuid,
    sheet_index: i32,
    encoder: Encoder,
    tx: tokio::sync::mpsc::Sender<Item>,
) {
    if let Some(header) = encoder.header() {
        if tx.send(Ok(header)).await.is_err() {
            return;
        }
    }
    let mut chunks = db::rows::chunks(&db, id, sheet_index);
    while let Some(chunk) = chunks.next().await {
        let item = chunk
            .map_err(std::io::Error::other)
            .and_then(|c| encoder.chunk(&c.rows));
        let failed = item.is_err();
        if let Err(e) = &item {
            tracing::error!(source_file_id = %id, error = %e, "export failed mid-stream");
        }
        if tx.send(item).await.is_err() || failed {
            return;
        }
    }
}

/// Turns stored chunks into the export format.
struct Encoder {
    format: ExportFormat,
    types: Vec<ColumnType>,
    columns: Vec<String>,
}

impl Encoder {
    fn header(&self) -> Option<Bytes> {
        match self.format {
            ExportFormat::Csv => {
                let mut out = csv::Writer::from_writer(Vec::new());
                out.write_record(&self.columns).ok()?;
                out.into_inner().ok().map(Bytes::from)
            }
            ExportFormat::Ndjson => None,
        }
    }

    /// Every row of one chunk, typed and encoded.
    fn chunk(&self, rows_json: &str) -> Item {
        let rows: Vec<&RawValue> =
            serde_json::from_str(rows_json).map_err(std::io::Error::other)?;
        let width = self.columns.len();
        let mut out = Vec::with_capacity(rows_json.len() + rows.len());
        match self.format {
            ExportFormat::Ndjson => {
                for raw in rows {
                    let values: Value =
                        serde_json::from_str(raw.get()).map_err(std::io::Error::other)?;
                    serde_json::to_writer(&mut out, &typed(values, &self.types, width))
                        .map_err(std::io::Error::other)?;
                    out.push(b'\n');
                }
            }
            ExportFormat::Csv => {
                let mut writer = csv::Writer::from_writer(&mut out);
                for raw in rows {
                    let values: Value =
                        serde_json::from_str(raw.get()).map_err(std::io::Error::other)?;
                    for value in typed(values, &self.types, width) {
                        match value {
                            Value::String(s) => writer.write_field(s.as_bytes()),
                            Value::Null => writer.write_field(b""),
                            other => writer.write_field(other.to_string().as_bytes()),
                        }
                        .map_err(std::io::Error::other)?;
                    }
                    writer
                        .write_record(None::<&[u8]>)
                        .map_err(std::io::Error::other)?;
                }
                writer.flush()?;
            }
        }
        Ok(Bytes::from(out))
    }
}

/// `<file stem>-<sheet>.<ext>`, with anything but ASCII letters, digits, `.`, `-` and `_`
/// replaced, so it is safe inside the header's quotes.
fn download_name(file_name: &str, sheet: &str, extension: &str) -> String {
    let stem = file_name.rsplit_once('.').map_or(file_name, |(s, _)| s);
    let safe = |s: &str| -> String {
        s.chars()
            .take(100)
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}-{}.{extension}", safe(stem), safe(sheet))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn download_names_are_header_safe() {
        assert_eq!(
            download_name("Q3 \"report\".xlsx", "Sheet 1", "csv"),
            "Q3__report_-Sheet_1.csv"
        );
        assert_eq!(download_name("data", "data", "ndjson"), "data-data.ndjson");
    }

    #[test]
    fn csv_rows_are_typed_and_quoted() {
        let encoder = Encoder {
            format: ExportFormat::Csv,
            types: vec![ColumnType::Integer, ColumnType::Text],
            columns: vec!["n".into(), "s".into()],
        };
        let out = encoder
            .chunk(r#"[["1","a,b"],["2",null],["3"]]"#)
            .expect("encodes");
        assert_eq!(&out[..], b"1,\"a,b\"\n2,\n3,\n");
        let ndjson = Encoder {
            format: ExportFormat::Ndjson,
            ..encoder
        };
        let out = ndjson.chunk(r#"[["1","x"]]"#).expect("encodes");
        assert_eq!(&out[..], b"[1,\"x\"]\n");
    }
}
