//! Streaming parse events into `COPY parsed_rows`, the result summary, and the download file.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use shared::db;
use shared::domain::FileFormat;
use uuid::Uuid;

use crate::parse::isolate::{self, Isolation};
use crate::parse::{ParseEvent, ParseFailure, ParseSummary};

/// Runs the isolated parse, turning its row events into COPY lines. The parser calls back
/// synchronously, so lines are gathered into chunks and handed through a channel to a writer
/// running alongside (in this task) that feeds COPY while the parse goes on. A failed COPY drops
/// the receiver, which makes the next callback fail and stops the parse child.
pub(super) async fn stream_rows(
    isolation: &Isolation,
    path: &Path,
    format: FileFormat,
    source_file_id: Uuid,
    copy: &mut sqlx::postgres::PgCopyIn<&mut sqlx::PgConnection>,
) -> anyhow::Result<Result<ParseSummary, ParseFailure>> {
    const CHUNK: usize = 256 * 1024;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    let on_event = move |event: ParseEvent| -> anyhow::Result<()> {
        let flush = match event {
            ParseEvent::Row {
                sheet,
                index,
                values,
            } => {
                db::rows::copy_line(&mut buf, source_file_id, sheet, index, &values);
                buf.len() >= CHUNK
            }
            // Rows come before their sheet's end: nothing is left behind after the last one.
            ParseEvent::SheetEnd(_) => !buf.is_empty(),
            ParseEvent::SheetStart { .. } => false,
        };
        if flush {
            let full = std::mem::replace(&mut buf, Vec::with_capacity(CHUNK));
            tx.send(full)
                .map_err(|_| anyhow::anyhow!("the COPY into parsed_rows ended early"))?;
        }
        Ok(())
    };
    let parse = isolate::parse_isolated(isolation, path, format, on_event);
    let write = async move {
        let mut rx = rx;
        while let Some(chunk) = rx.recv().await {
            copy.send(chunk).await?;
        }
        Ok::<_, sqlx::Error>(())
    };
    let (parsed, written) = tokio::join!(parse, write);
    written.context("streaming rows into COPY")?;
    parsed
}

/// The task's result summary, as the api returns it.
pub(super) fn result_json(summary: &ParseSummary) -> serde_json::Value {
    serde_json::json!({
        "rows_total": summary.rows_total,
        "sheets": summary.sheets.iter().map(|s| serde_json::json!({
            "index": s.index,
            "name": s.name,
            "rows": s.rows,
            "columns": s.columns,
        })).collect::<Vec<_>>(),
    })
}

/// A downloaded blob, deleted when dropped.
pub(super) struct TempFile(PathBuf);

impl TempFile {
    pub(super) fn new(dir: Option<&Path>, task_id: Uuid) -> Self {
        let dir = dir
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        Self(dir.join(format!("sheetrelay-{task_id}-{}", Uuid::new_v4().simple())))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
