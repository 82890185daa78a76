//! Corrections' storage: `file_revisions`, `file_corrections` and `corrected_rows` (see the
//! migration `20261204000001_corrections.sql`). A revision is written in one transaction that
//! first locks the file's task row ([`lock_task`]), so two corrections of one file take their
//! turns and each sees the revision before it whole. The original upload (`parsed_row_chunks`,
//! `validation_errors`, `rejected_rows`) is only read here: the latest revision is the original
//! overlaid with `corrected_rows`, whether for the error report ([`errors_page`],
//! [`rejected_page`]) or the rows ([`overlay`]).

use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::tasks::Task;
use super::validation::{Numbered, NumberedRow};
use crate::domain::layout_override::LayoutOverride;
use crate::domain::task_result::TaskResult;
use crate::domain::{ErrorRecord, TaskErrorCode, TaskStatus};

/// Locks the file's task row for the rest of the transaction and reads it.
pub async fn lock_task(
    conn: &mut PgConnection,
    source_file_id: Uuid,
) -> sqlx::Result<Option<Task>> {
    sqlx::query_as!(
        Task,
        r#"SELECT id, source_file_id, status AS "status: TaskStatus", attempts,
                  error_code AS "error_code: TaskErrorCode",
                  error_message, result AS "result: Json<TaskResult>", lease_expires_at, created_at,
                  started_at, finished_at, NULL::jsonb AS "review: Json<crate::domain::review::Review>",
                  layout_override AS "layout_override: Json<LayoutOverride>"
           FROM tasks WHERE source_file_id = $1 FOR UPDATE"#,
        source_file_id
    )
    .fetch_optional(conn)
    .await
}

/// The file's latest revision (0: none) and the rows that revisions made join the stored ones.
pub async fn latest(db: impl PgExecutor<'_>, source_file_id: Uuid) -> sqlx::Result<(i32, i64)> {
    let row = sqlx::query!(
        r#"SELECT revision, rows_joined FROM file_revisions WHERE source_file_id = $1
           ORDER BY revision DESC LIMIT 1"#,
        source_file_id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map_or((0, 0), |r| (r.revision, r.rows_joined)))
}

/// A row as the latest revision has it: its cells, its error records and where it sits.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentRow {
    pub row_number: i64,
    // Free-form: the row's cells in the file's own columns (see `RejectedRow::cells`).
    pub cells: serde_json::Value,
    // Free-form: the row's cells as uploaded (a workbook's typed cells among them).
    pub original: serde_json::Value,
    /// Where it sits among the original stored rows (`None`: parsed before this was kept).
    pub stored_index: Option<i64>,
    /// Whether it is valid now (a row never corrected is not: it is in the report).
    pub valid: bool,
    pub errors: Json<Vec<ErrorRecord>>,
}

/// The rows `rows` of `sheet` that the error report has kept the cells of, as the latest
/// revision has them; a row missing from the answer has no kept cells (a valid row, one past
/// the report's cap, or no row of the file).
pub async fn current_rows(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet: i32,
    rows: &[i64],
) -> sqlx::Result<Vec<CurrentRow>> {
    sqlx::query_as!(
        CurrentRow,
        r#"SELECT c.row_number AS "row_number!", c.cells AS "cells!",
                  COALESCE(o.cells, c.cells) AS "original!", c.stored_index,
                  c.valid AS "valid!", c.errors AS "errors!: Json<Vec<ErrorRecord>>"
           FROM corrected_rows c
           LEFT JOIN rejected_rows o ON o.source_file_id = c.source_file_id
                                    AND o.sheet = c.sheet AND o.row_number = c.row_number
           WHERE c.source_file_id = $1 AND c.sheet = $2 AND c.row_number = ANY($3)
           UNION ALL
           SELECT r.row_number, r.cells, r.cells, r.stored_index, false,
                  COALESCE((SELECT jsonb_agg(jsonb_build_object(
                                'sheet', e.sheet, 'row', e.row_number, 'column', e.column_name,
                                'field', e.field, 'value', e.value, 'code', e.code,
                                'constraint', e.constraint_name, 'message', e.message)
                                ORDER BY e.seq)
                            FROM validation_errors e
                            WHERE e.source_file_id = r.source_file_id AND e.sheet = r.sheet
                              AND e.row_number = r.row_number), '[]'::jsonb)
           FROM rejected_rows r
           WHERE r.source_file_id = $1 AND r.sheet = $2 AND r.row_number = ANY($3)
             AND NOT EXISTS (SELECT 1 FROM corrected_rows c
                             WHERE c.source_file_id = r.source_file_id AND c.sheet = r.sheet
                               AND c.row_number = r.row_number)"#,
        source_file_id,
        sheet,
        rows
    )
    .fetch_all(db)
    .await
}

/// A row re-checked by a revision, as it is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedRow {
    pub row_number: i64,
    pub cells: serde_json::Value,
    /// The typed values, a JSON array in the template's field order.
    pub values: serde_json::Value,
    pub valid: bool,
    pub stored_index: i64,
    pub replaces: bool,
    pub errors: Vec<ErrorRecord>,
}

/// One correction as it was sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Correction {
    pub sheet: i32,
    pub row_number: i64,
    pub field: String,
    pub value: Option<String>,
}

/// Rows written per statement.
const BATCH: usize = 1000;

/// Writes revision `revision`: its record, the corrections it applied and the rows it
/// re-checked (replacing their earlier state).
pub async fn insert_revision(
    conn: &mut PgConnection,
    source_file_id: Uuid,
    (revision, rows_joined, validation): (i32, i64, &serde_json::Value),
    sheet: i32,
    corrections: &[Correction],
    rows: &[CheckedRow],
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"INSERT INTO file_revisions (source_file_id, revision, applied, validation, rows_joined)
           VALUES ($1, $2, $3, $4, $5)"#,
        source_file_id,
        revision,
        i32::try_from(corrections.len()).unwrap_or(i32::MAX),
        validation,
        rows_joined
    )
    .execute(&mut *conn)
    .await?;
    for (n, batch) in corrections.chunks(BATCH).enumerate() {
        let first = n * BATCH;
        let seqs: Vec<i32> = (first..first + batch.len())
            .map(|s| i32::try_from(s).unwrap_or(i32::MAX))
            .collect();
        sqlx::query!(
            r#"INSERT INTO file_corrections (source_file_id, revision, seq, sheet, row_number,
                   field, value)
               SELECT $1, $2, * FROM UNNEST($3::int[], $4::int[], $5::bigint[], $6::text[],
                   $7::text[])"#,
            source_file_id,
            revision,
            &seqs,
            &batch.iter().map(|c| c.sheet).collect::<Vec<_>>(),
            &batch.iter().map(|c| c.row_number).collect::<Vec<_>>(),
            &batch.iter().map(|c| c.field.clone()).collect::<Vec<_>>(),
            &batch.iter().map(|c| c.value.clone()).collect::<Vec<_>>() as &[Option<String>],
        )
        .execute(&mut *conn)
        .await?;
    }
    for batch in rows.chunks(BATCH) {
        let errors: Vec<serde_json::Value> = batch
            .iter()
            .map(|r| serde_json::to_value(&r.errors).unwrap_or_default())
            .collect();
        sqlx::query!(
            r#"INSERT INTO corrected_rows (source_file_id, sheet, row_number, revision, cells,
                   "values", valid, stored_index, replaces, errors)
               SELECT $1, $2, n.row_number, $3, n.cells, n.vals, n.valid, n.stored_index,
                      n.replaces, n.errors
               FROM UNNEST($4::bigint[], $5::jsonb[], $6::jsonb[], $7::bool[], $8::bigint[],
                           $9::bool[], $10::jsonb[])
                    AS n (row_number, cells, vals, valid, stored_index, replaces, errors)
               ON CONFLICT (source_file_id, sheet, row_number) DO UPDATE
               SET revision = EXCLUDED.revision, cells = EXCLUDED.cells,
                   "values" = EXCLUDED."values", valid = EXCLUDED.valid,
                   stored_index = EXCLUDED.stored_index, replaces = EXCLUDED.replaces,
                   errors = EXCLUDED.errors"#,
            source_file_id,
            sheet,
            revision,
            &batch.iter().map(|r| r.row_number).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.cells.clone()).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.values.clone()).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.valid).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.stored_index).collect::<Vec<_>>(),
            &batch.iter().map(|r| r.replaces).collect::<Vec<_>>(),
            &errors,
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Sets the task's result to the latest revision's, and the validated sheet's row count;
/// `complete`: a rejected file's task becomes `COMPLETED` (its status trigger writes
/// `task.completed`).
pub async fn update_task(
    conn: &mut PgConnection,
    task_id: Uuid,
    result: &TaskResult,
    complete: bool,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"UPDATE tasks
           SET result = $2,
               status = CASE WHEN $3 THEN 'COMPLETED'::task_status ELSE status END,
               error_code = CASE WHEN $3 THEN NULL ELSE error_code END,
               error_message = CASE WHEN $3 THEN NULL ELSE error_message END
           WHERE id = $1"#,
        task_id,
        Json(result) as _,
        complete
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Adds `delta` rows to a sheet's stored row count.
pub async fn add_sheet_rows(
    conn: &mut PgConnection,
    source_file_id: Uuid,
    sheet: i32,
    delta: i64,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE parsed_sheets SET row_count = row_count + $3
         WHERE source_file_id = $1 AND sheet_index = $2",
        source_file_id,
        sheet,
        delta
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Writes the `file.corrected` event of revision `revision`: the task's event data as it now
/// is (its `summary` with the new counts), the file's metadata, and the revision.
pub async fn insert_event(
    conn: &mut PgConnection,
    task_id: Uuid,
    revision: i32,
) -> sqlx::Result<()> {
    super::event_log::ensure(&mut *conn).await?;
    sqlx::query!(
        r#"INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, trace_id)
           SELECT gen_random_uuid(), f.tenant_id, 'file.corrected', t.source_file_id, t.id,
                  task_event_data(t)
                      || jsonb_build_object('metadata', f.metadata, 'end_user', f.end_user,
                                            'revision', $2::int),
                  t.trace_id
           FROM tasks t JOIN source_files f ON f.id = t.source_file_id
           WHERE t.id = $1"#,
        task_id,
        revision
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether the file has corrected rows (else the original report is the latest).
pub async fn has_rows(db: impl PgExecutor<'_>, source_file_id: Uuid) -> sqlx::Result<bool> {
    let any = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM corrected_rows WHERE source_file_id = $1) AS "any!""#,
        source_file_id
    )
    .fetch_one(db)
    .await?;
    Ok(any)
}

/// A page of the latest revision's error report: the original records of the rows no revision
/// touched and the records of the corrected rows, in file order, numbered in that order (the
/// number is the page's cursor).
pub async fn errors_page(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    after: Option<i32>,
    limit: i64,
    field: Option<&str>,
    code: Option<&str>,
) -> sqlx::Result<Vec<Numbered>> {
    let rows = sqlx::query_as!(
        NumberedRow,
        r#"SELECT ord AS "seq!", sheet AS "sheet!", row_number AS "row!", column_name AS "column",
                  field, value, code AS "code!", constraint_name AS "constraint",
                  message AS "message!", transformed
           FROM (SELECT (row_number() OVER (ORDER BY sheet, row_number, k) - 1)::int AS ord, *
                 FROM (SELECT e.sheet, e.row_number, e.seq::bigint AS k, e.column_name, e.field,
                              e.value, e.code, e.constraint_name, e.message, e.transformed
                       FROM validation_errors e
                       WHERE e.source_file_id = $1
                         AND NOT EXISTS (SELECT 1 FROM corrected_rows c
                                         WHERE c.source_file_id = e.source_file_id
                                           AND c.sheet = e.sheet
                                           AND c.row_number = e.row_number)
                       UNION ALL
                       SELECT c.sheet, c.row_number, x.k, x.e ->> 'column', x.e ->> 'field',
                              x.e ->> 'value', x.e ->> 'code', x.e ->> 'constraint',
                              x.e ->> 'message', x.e ->> 'transformed'
                       FROM corrected_rows c,
                            jsonb_array_elements(c.errors) WITH ORDINALITY AS x (e, k)
                       WHERE c.source_file_id = $1) merged) numbered
           WHERE ord > $2 AND ($3::text IS NULL OR field = $3) AND ($4::text IS NULL OR code = $4)
           ORDER BY ord LIMIT $5"#,
        source_file_id,
        after.unwrap_or(-1),
        field,
        code,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Numbered::from).collect())
}

/// A row that has errors, with its cells and its error records.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedWithErrors {
    pub sheet: i32,
    pub row_number: i64,
    // Free-form: the row's cells in the file's own columns (see `RejectedRow::cells`), as
    // corrected when the latest revision is read.
    pub cells: serde_json::Value,
    /// How many of the sheet's rows were stored before it (`None`: parsed before this was kept).
    pub stored_index: Option<i64>,
    /// The row's error records, in file order.
    pub errors: Json<Vec<ErrorRecord>>,
}

/// Up to `limit` rows that have errors after (`sheet`, `row_number`) `after`, in file order,
/// with their cells and error records: as the latest revision has them when `latest` (rows a
/// revision made valid are gone, the others' cells are as corrected), else as uploaded. One
/// query for both, so the rejected-rows export and the grid's rows read the same rows.
pub async fn rejected_page(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    latest: bool,
    after: Option<(i32, i64)>,
    limit: i64,
) -> sqlx::Result<Vec<RejectedWithErrors>> {
    let (sheet, row) = after.unwrap_or((-1, 0));
    sqlx::query_as!(
        RejectedWithErrors,
        r#"SELECT sheet AS "sheet!", row_number AS "row_number!", cells AS "cells!",
                  stored_index, errors AS "errors!: Json<Vec<ErrorRecord>>"
           FROM (SELECT r.sheet, r.row_number, r.cells, r.stored_index,
                        COALESCE((SELECT jsonb_agg(jsonb_build_object(
                                      'sheet', e.sheet, 'row', e.row_number,
                                      'column', e.column_name, 'field', e.field,
                                      'value', e.value, 'code', e.code,
                                      'constraint', e.constraint_name, 'message', e.message,
                                      'transformed', e.transformed)
                                      ORDER BY e.seq)
                                  FROM validation_errors e
                                  WHERE e.source_file_id = r.source_file_id
                                    AND e.sheet = r.sheet
                                    AND e.row_number = r.row_number), '[]'::jsonb) AS errors
                 FROM rejected_rows r
                 WHERE r.source_file_id = $1 AND (r.sheet, r.row_number) > ($2, $3)
                   AND NOT ($5 AND EXISTS (SELECT 1 FROM corrected_rows c
                                           WHERE c.source_file_id = r.source_file_id
                                             AND c.sheet = r.sheet
                                             AND c.row_number = r.row_number))
                 UNION ALL
                 SELECT c.sheet, c.row_number, c.cells, c.stored_index, c.errors
                 FROM corrected_rows c
                 WHERE $5 AND c.source_file_id = $1 AND (c.sheet, c.row_number) > ($2, $3)
                   AND NOT c.valid) merged
           ORDER BY sheet, row_number LIMIT $4"#,
        source_file_id,
        sheet,
        row,
        limit,
        latest
    )
    .fetch_all(db)
    .await
}

/// A corrected row that changes the sheet's stored rows: it replaces the stored row at
/// `stored_index` (`replaces`), or joins them before it (valid, not stored at first).
#[derive(Debug, Clone, PartialEq)]
pub struct OverlayRow {
    pub stored_index: i64,
    pub row_number: i64,
    pub replaces: bool,
    // Free-form: the typed values, as a stored row's.
    pub values: serde_json::Value,
}

/// The sheet's corrected rows that change its stored rows, in file order.
pub async fn overlay(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
    sheet: i32,
) -> sqlx::Result<Vec<OverlayRow>> {
    sqlx::query_as!(
        OverlayRow,
        r#"SELECT stored_index, row_number, replaces, "values"
           FROM corrected_rows
           WHERE source_file_id = $1 AND sheet = $2 AND (replaces OR valid)
           ORDER BY stored_index, row_number"#,
        source_file_id,
        sheet
    )
    .fetch_all(db)
    .await
}
