//! Sheet access shared by the rows endpoint and the exports: the caller's parsed sheet with its
//! columns (once the file's task is `COMPLETED`), and a stored row typed as the contract shows it.

use shared::db;
use shared::db::rows::SheetColumns;
use shared::db::source_files::SourceFile;
use shared::domain::TaskStatus;
use uuid::Uuid;

use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode};
use crate::state::AppState;

/// The caller's file `id`, its parsed sheet `sheet_index` and that sheet's columns: `404` for
/// another tenant's file or no such sheet, `409 not_parsed` while the file's task is not
/// COMPLETED, and a `500` (logged) when the stored columns do not decode: typing the values by
/// no columns would answer with wrong data that looks right.
pub(crate) async fn parsed_sheet(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
    sheet_index: i32,
) -> Result<(SourceFile, db::rows::Sheet, SheetColumns), ApiError> {
    let not_found = || ApiError::NotFound(format!("no source file {id}"));
    let (file, task) = db::source_files::find_with_task(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(not_found)?;
    if task.status != TaskStatus::Completed {
        return Err(ApiError::Conflict {
            code: ApiErrorCode::NotParsed,
            message: format!(
                "the file has no rows to show: its task is {}",
                task.status.as_str()
            ),
        });
    }
    let sheet = db::rows::find_sheet(&state.db, id, sheet_index)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("file {id} has no sheet {sheet_index}")))?;
    let columns = sheet.columns();
    Ok((file, sheet, columns))
}

pub(crate) use encode::typed;
