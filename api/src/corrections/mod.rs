//! Corrections (contract v1.3): a templated file's bad cells fixed in place, each request one
//! revision. The rows it corrects are checked again by the engine that checked the upload
//! ([`recheck`]), against the rest of the file through the key index that the parse kept
//! ([`keys`]), so nothing of the file is read again; rows that shared a key value a correction
//! took away are checked again too (the first of them may now be the only holder). The
//! revision is written in one transaction that holds the file's task row locked from the start:
//! the rows' new state, the changed key buckets, the counts ([`counts`]) as the task's
//! `result.validation`, its `file.corrected` event and, for a rejected file whose last error
//! went, `COMPLETED` (whose `task.completed` event the status trigger writes). Two revisions of
//! one file take turns; neither is half-applied.

mod counts;
mod hooks;
mod keys;
pub use shared::db::overlay;
mod recheck;
mod revise;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shared::db;
use shared::db::corrections::{CheckedRow, Correction, CurrentRow};
use shared::domain::task_result::{TaskResult, ValidationResult};
use shared::domain::{ErrorRecord, OnInvalid, TaskErrorCode, TaskStatus};
use template::{Problem, Template};
use uuid::Uuid;

use crate::error::{ApiError, ApiErrorCode};
use crate::state::AppState;

/// The most corrections one request may carry.
pub const MAX_CORRECTIONS: usize = 10_000;

/// Rows sharing one value that a correction re-checks besides the corrected row.
const MAX_SHARING: usize = 1_000;

/// The body of `PATCH /api/v1/files/{id}/corrections`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectionsRequest {
    /// 1..10,000 corrections; a later one of the same cell wins.
    pub corrections: Vec<CorrectionItem>,
}

/// One cell's new text.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectionItem {
    /// The sheet's index, as in the error report.
    pub sheet: i32,
    /// The row number, as in the error report.
    pub row: i64,
    /// A template field's name.
    pub field: String,
    /// The cell's new text; null for an empty cell.
    pub value: Option<String>,
}

/// The answer: the revision made, and what is still wrong with the corrected rows.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CorrectionsAnswer {
    pub revision: i32,
    /// How many corrections the revision applied.
    pub applied: usize,
    /// The error records still on the corrected rows, in file order.
    pub errors: Vec<ErrorRecord>,
    /// The task's `result.validation` after the revision.
    pub validation: ValidationResult,
}

/// Each edited row's key values before and after its edits.
type Moves = BTreeMap<i64, (Vec<(i32, u128)>, Vec<(i32, u128)>)>;

/// A row's state before and after the revision.
struct Rechecked {
    before: CurrentRow,
    after: CheckedRow,
    corrected: bool,
}

/// Refuses a file whose task has no final report to correct (`409 not_parsed`).
fn correctable(task: &db::tasks::Task) -> Result<(), ApiError> {
    if task.status == TaskStatus::Completed
        || (task.status == TaskStatus::Failed
            && task.error_code == Some(TaskErrorCode::ValidationFailed))
    {
        return Ok(());
    }
    Err(ApiError::Conflict {
        code: ApiErrorCode::NotParsed,
        message: format!(
            "the file cannot be corrected: its task is {}{}",
            task.status.as_str(),
            if task.status.is_final() {
                " without a report"
            } else {
                ", not final yet"
            }
        ),
    })
}

/// The counts after the rechecked `rows`, and how many rows joined the stored ones (negative:
/// left them).
fn recount(mut counts: ValidationResult, rows: &[Rechecked]) -> (ValidationResult, i64) {
    let mut joined = 0i64;
    for r in rows {
        counts::apply(
            &mut counts,
            &counts::Change {
                before: &r.before.errors.0,
                was_valid: r.before.valid,
                after: &r.after.errors,
                valid: r.after.valid,
            },
        );
        joined += i64::from(r.after.valid && !r.after.replaces)
            - i64::from(r.before.valid && !r.after.replaces);
    }
    (counts, joined)
}

/// Applies one revision of corrections to the tenant's file `id`.
pub async fn apply(
    state: &AppState,
    tenant_id: &str,
    id: Uuid,
    items: &[CorrectionItem],
) -> Result<CorrectionsAnswer, ApiError> {
    if items.is_empty() || items.len() > MAX_CORRECTIONS {
        return Err(invalid(
            "/corrections",
            format!(
                "send 1 to {MAX_CORRECTIONS} corrections, not {}",
                items.len()
            ),
        ));
    }
    let not_found = || ApiError::NotFound(format!("no source file {id}"));
    let (source, _) = db::source_files::find_with_task(&state.db, tenant_id, id)
        .await?
        .ok_or_else(not_found)?;
    let mut tx = state.db.begin().await?;
    let task = db::corrections::lock_task(&mut tx, id)
        .await?
        .ok_or_else(not_found)?;
    correctable(&task)?;
    let no_template = || invalid("", "the file was uploaded without a template".into());
    let mut result = task.result.map(|r| r.0).ok_or_else(no_template)?;
    let validation = result.validation.clone().ok_or_else(no_template)?;
    let stored = db::templates::of_file(&mut *tx, id)
        .await?
        .ok_or_else(no_template)?;
    // With the values people mapped in reviews, as every parse applies them.
    let learned = db::learned_values::of_template(&mut *tx, tenant_id, &stored.name).await?;
    let mut template = state
        .compiler
        .compile(stored.schema.clone())
        .await
        .map_err(ApiError::Internal)?
        .map_err(|_| ApiError::Internal(anyhow::anyhow!("the file's template does not compile")))?;
    template.learn_values(&learned);
    let file = FileCtx {
        id,
        template: &template,
        sheet: i32::try_from(validation.sheet).unwrap_or(i32::MAX),
        mapping: mapping(&template, &validation),
        on_invalid: validation.on_invalid,
        workbook: !matches!(source.format.as_str(), "csv" | "tsv"),
    };
    let (revision, joined_before) = db::corrections::latest(&mut *tx, id).await?;
    let revision = revision + 1;
    let asker = hooks::Asker {
        state,
        tenant_id,
        task_id: task.id,
        source: &source,
        template: &stored,
        revision,
    };
    let rows = revised(&mut tx, (&file, &validation, items), &asker).await?;
    let (mut next, joined) = recount(validation, &rows);
    next.revision = u32::try_from(revision).unwrap_or(u32::MAX);
    let complete = task.status == TaskStatus::Failed && next.errors_total == 0;
    with_rows_joined(&mut result, &next, joined);
    let corrections: Vec<Correction> = items
        .iter()
        .map(|c| Correction {
            sheet: c.sheet,
            row_number: c.row,
            field: c.field.clone(),
            value: c.value.clone(),
        })
        .collect();
    let checked: Vec<CheckedRow> = rows.iter().map(|r| r.after.clone()).collect();
    let validation_json = serde_json::to_value(&next).map_err(|e| ApiError::Internal(e.into()))?;
    db::corrections::insert_revision(
        &mut tx,
        id,
        (revision, joined_before + joined, &validation_json),
        file.sheet,
        &corrections,
        &checked,
    )
    .await?;
    if joined != 0 {
        db::corrections::add_sheet_rows(&mut tx, id, file.sheet, joined).await?;
    }
    db::corrections::update_task(&mut tx, task.id, &result, false).await?;
    db::corrections::insert_event(&mut tx, task.id, revision).await?;
    if complete {
        db::corrections::update_task(&mut tx, task.id, &result, true).await?;
    }
    tx.commit().await?;
    tracing::info!(source_file_id = %id, revision, applied = items.len(), rows = rows.len(),
        errors_total = next.errors_total, completed = complete, "file corrected");
    Ok(CorrectionsAnswer {
        revision,
        applied: items.len(),
        errors: rows
            .iter()
            .filter(|r| r.corrected)
            .flat_map(|r| r.after.errors.iter().cloned())
            .collect(),
        validation: next,
    })
}

/// The revision's rows checked again, with the template's hooks' answers about them
/// ([`hooks`]), asked in order: each hook is asked about the rows revised with the values the
/// hooks before it wrote (as further corrections of the revision, in a savepoint rolled back
/// after the asking) and their errors; the rows are revised a last time with every written
/// value, unless the last hook wrote none (then its savepoint stands).
async fn revised(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    (file, validation, items): (&FileCtx<'_>, &ValidationResult, &[CorrectionItem]),
    asker: &hooks::Asker<'_>,
) -> Result<Vec<Rechecked>, ApiError> {
    use sqlx::Acquire as _;
    let count = asker.template.hooks.len();
    if count == 0 {
        return revise::revise(tx, file, validation, items).await;
    }
    let headers = &validation.source_columns;
    let mut all = items.to_vec();
    let mut said = hooks::Said::default();
    for n in 0..count {
        let mut asking = (&mut **tx).begin().await?;
        let mut rows = revise::revise(&mut asking, file, validation, &all).await?;
        hooks::merge_errors(&mut rows, &said.errors, file, headers);
        let this = asker.ask(n, file, &rows).await?;
        if n + 1 == count && this.written.is_empty() {
            hooks::merge_errors(&mut rows, &this.errors, file, headers);
            hooks::keep_verdicts(&mut rows);
            asking.commit().await?;
            return Ok(rows);
        }
        asking.rollback().await?;
        all.extend(this.written.iter().cloned());
        said.add(this);
    }
    let mut rows = revise::revise(tx, file, validation, &all).await?;
    hooks::merge_errors(&mut rows, &said.errors, file, headers);
    hooks::keep_verdicts(&mut rows);
    Ok(rows)
}

/// What a revision needs to know of its file.
struct FileCtx<'t> {
    id: Uuid,
    template: &'t Template,
    sheet: i32,
    /// Each field's column, in field order.
    mapping: Vec<Option<usize>>,
    on_invalid: OnInvalid,
    /// A workbook's cells were typed (its dates kept as ISO text in the report).
    workbook: bool,
}

/// Each template field's column in the file, as the upload's mapping found it.
fn mapping(template: &Template, validation: &ValidationResult) -> Vec<Option<usize>> {
    template
        .fields
        .iter()
        .map(|f| {
            validation
                .mapping
                .iter()
                .find(|m| m.field == f.name)
                .and_then(|m| m.column_index)
        })
        .collect()
}

/// A `422 invalid_correction` with one problem.
fn invalid(pointer: &str, message: String) -> ApiError {
    ApiError::InvalidCorrection(vec![Problem {
        pointer: pointer.to_owned(),
        message,
    }])
}

/// The result with the revision's counts, and the rows that joined (or left) the stored ones.
fn with_rows_joined(result: &mut TaskResult, validation: &ValidationResult, joined: i64) {
    let add = |n: u64| u64::try_from(i64::try_from(n).unwrap_or(i64::MAX) + joined).unwrap_or(0);
    result.rows_total = add(result.rows_total);
    if let Some(sheet) = result
        .sheets
        .iter_mut()
        .find(|s| s.index == validation.sheet)
    {
        sheet.rows = add(sheet.rows);
    }
    result.validation = Some(validation.clone());
}
