//! Streaming parse events into `COPY parsed_row_chunks`, and the result summary.

use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;
use shared::db;
use shared::domain::task_result::{SheetResult, TaskResult, ValidationResult};
use shared::domain::{ErrorRecord, FileFormat};
use uuid::Uuid;

use crate::parse::isolate::{self, EventSink, Isolation};
use crate::parse::{LayoutOverride, ParseEvent, ParseFailure, ParseSummary, TemplateJob};

use super::progress::Progress;

/// What to parse: the downloaded file, its format, and its template if it has one.
pub(super) struct FileToParse<'a> {
    pub path: &'a Path,
    pub format: FileFormat,
    pub template: Option<&'a TemplateJob>,
    /// Where a person said the file's tables lie.
    pub layout: Option<&'a LayoutOverride>,
}

/// A templated file's error report as it arrives from the child, already capped there.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// In file order, as the child sent them.
    pub errors: Vec<ErrorRecord>,
    pub rejected: Vec<db::validation::RejectedRow>,
    /// The key index, a bucket at a time (on disk until the rows are in).
    pub keys: super::keys::KeySpill,
    /// The mapping needs a person: the review document (then no rows came).
    pub review: Option<shared::domain::review::Review>,
}

impl Report {
    /// Keeps what a templated parse reports besides its rows: error records, rejected rows, the
    /// key index's buckets and the review. Rows and sheet boundaries are the caller's.
    pub fn note(&mut self, event: ParseEvent<'_>) -> anyhow::Result<()> {
        match event {
            ParseEvent::Invalid(e) => self.errors.push(e),
            ParseEvent::Rejected {
                sheet,
                row,
                cells,
                stored,
            } => self.rejected.push(db::validation::RejectedRow {
                sheet: i32::try_from(sheet).unwrap_or(i32::MAX),
                row_number: i64::try_from(row).unwrap_or(i64::MAX),
                cells: serde_json::from_str(&cells).context("a rejected row's cells")?,
                stored_index: i64::try_from(stored).ok(),
            }),
            ParseEvent::Keys {
                sheet,
                slot,
                bucket,
                buckets,
                entries,
            } => {
                let int = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
                self.keys
                    .push(&db::keys::Bucket {
                        sheet: int(sheet),
                        slot,
                        bucket: int(bucket),
                        buckets: int(buckets),
                        entries,
                    })
                    .context("keeping the key index")?;
            }
            ParseEvent::NeedsReview(review) => self.review = Some(review),
            ParseEvent::SheetStart { .. }
            | ParseEvent::SheetEnd(_)
            | ParseEvent::Row { .. }
            | ParseEvent::Origin { .. } => {}
        }
        Ok(())
    }
}

/// Runs the isolated parse, turning its row events into binary COPY tuples of row chunks that are
/// sent to Postgres a buffer at a time. Sending waits while Postgres is behind, and the parse
/// child waits on its full socket meanwhile, so however fast the parser is, at most about one
/// buffer and one row chunk are held here (and a templated file's report, which the child caps).
pub(super) async fn stream_rows(
    isolation: &Isolation,
    file: &FileToParse<'_>,
    source_file_id: Uuid,
    copy: &mut sqlx::postgres::PgCopyIn<&mut sqlx::PgConnection>,
    progress: &Progress,
    report: &mut Report,
) -> anyhow::Result<Result<ParseSummary, ParseFailure>> {
    let mut sink = CopySink::new(source_file_id, copy, progress, report);
    let started = Instant::now();
    let parsed = isolate::parse_isolated_into(
        isolation,
        file.path,
        file.format,
        file.template,
        file.layout,
        &mut sink,
    )
    .await?;
    if parsed.is_ok() {
        sink.finish().await?;
    } else {
        sink.progress.add_rows(std::mem::take(&mut sink.counted));
    }
    super::metrics::parsed(
        file.format,
        started.elapsed(),
        parsed.as_ref().ok().map(|s| s.rows_total),
    );
    Ok(parsed)
}

/// Rows into `COPY`, a buffer at a time, and what else the parse reports into the [`Report`].
pub(super) struct CopySink<'c, 'conn> {
    rows: db::rows::CopyRows,
    buf: Vec<u8>,
    copy: &'c mut sqlx::postgres::PgCopyIn<&'conn mut sqlx::PgConnection>,
    progress: &'c Progress,
    /// Rows since the last chunk, added to `progress` a chunk at a time.
    counted: u64,
    report: &'c mut Report,
}

impl<'c, 'conn> CopySink<'c, 'conn> {
    /// COPY data sent to Postgres at a time.
    const SEND_BYTES: usize = 256 * 1024;

    pub(super) fn new(
        source_file_id: Uuid,
        copy: &'c mut sqlx::postgres::PgCopyIn<&'conn mut sqlx::PgConnection>,
        progress: &'c Progress,
        report: &'c mut Report,
    ) -> Self {
        let rows = db::rows::CopyRows::new(source_file_id);
        let mut buf = Vec::with_capacity(Self::SEND_BYTES + db::rows::CopyRows::MAX_BYTES);
        rows.begin(&mut buf);
        Self {
            rows,
            buf,
            copy,
            progress,
            counted: 0,
            report,
        }
    }

    /// After the last row: the rows counted, the last chunk ended and everything sent.
    pub(super) async fn finish(&mut self) -> anyhow::Result<()> {
        self.progress.add_rows(std::mem::take(&mut self.counted));
        self.rows.end(&mut self.buf);
        self.flush().await
    }

    async fn flush(&mut self) -> anyhow::Result<()> {
        self.copy
            .send(&self.buf[..])
            .await
            .context("streaming rows into COPY")?;
        self.buf.clear();
        Ok(())
    }
}

impl EventSink for CopySink<'_, '_> {
    fn event(&mut self, event: ParseEvent<'_>) -> anyhow::Result<()> {
        match event {
            ParseEvent::Row {
                sheet,
                index,
                values,
            } => {
                self.rows.push(&mut self.buf, sheet, index, &values);
                self.counted += 1;
                Ok(())
            }
            other => self.report.note(other),
        }
    }

    fn child_started(&mut self, pid: Option<u32>) {
        self.progress.child_started(pid);
    }

    async fn pause(&mut self) -> anyhow::Result<()> {
        self.progress.add_rows(std::mem::take(&mut self.counted));
        if self.buf.len() >= Self::SEND_BYTES {
            self.flush().await?;
        }
        Ok(())
    }
}

/// The task's result summary, as the api returns it: the contract's [`TaskResult`], built
/// field by field so the wire format does not follow the parser's structs by accident.
pub(super) fn task_result(
    summary: &ParseSummary,
    template: Option<&db::templates::FileTemplate>,
) -> TaskResult {
    let validation = match (&summary.validation, template) {
        (Some(v), Some(t)) => Some(ValidationResult {
            errors_by_code: v.errors_by_code.clone(),
            errors_by_field: v.errors_by_field.clone(),
            errors_total: v.errors_total,
            errors_truncated: v.errors_truncated,
            header_row: v.header_row,
            mapping: v.mapping.clone(),
            on_invalid: t.on_invalid,
            rows_rejected: v.rows_rejected,
            revision: 0,
            rows_valid: v.rows_valid,
            sheet: v.sheet,
            skipped_sheets: v.skipped_sheets.clone(),
            source_columns: v.source_columns.clone(),
            template: t.name.clone(),
            template_version: t.version,
        }),
        _ => None,
    };
    TaskResult {
        rows_total: summary.rows_total,
        sheets: summary
            .sheets
            .iter()
            .map(|s| SheetResult {
                column_types: s.column_types.clone(),
                columns: s.columns.clone(),
                extra_columns: s.extra_columns,
                header_row: s.header_row,
                hidden: s.hidden,
                index: s.index,
                layout: s.layout.clone(),
                name: s.name.clone(),
                rows: s.rows,
            })
            .collect(),
        skipped_parts: summary.skipped_parts.clone(),
        validation,
    }
}
