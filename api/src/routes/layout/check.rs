//! Whether a layout override may be applied, and whether it fits the file: the task must be
//! one whose parse ended with a verdict on the file's table (`COMPLETED`, `NEEDS_REVIEW`, or
//! `FAILED` with `validation_failed`), and every sheet it names must be one the last parse
//! read, with its rows inside that sheet and the table's last row below its header. What the
//! last parse found of each sheet (its `layout`) comes from the task's result, or from its
//! review while it waits in `NEEDS_REVIEW`. Every problem is reported, each with its JSON
//! pointer into the request.

use std::collections::BTreeSet;

use shared::db::tasks::Task;
use shared::domain::layout_override::{ForcedEnd, ForcedHeader, LayoutOverride};
use shared::domain::task_result::SheetLayout;
use shared::domain::{TaskErrorCode, TaskStatus};
use template::Problem;

use crate::error::{ApiError, ApiErrorCode};

/// A sheet the last parse read, and where it found its table (unknown for a review written
/// before reviews said).
struct Known<'a> {
    index: u32,
    layout: Option<&'a SheetLayout>,
}

/// The status the override may move the task from, or why not: `409 not_reparsable` for a
/// task whose parse has not ended or whose failure is not about its table, `422
/// invalid_layout` with every problem of the request.
pub fn check(task: &Task, layout: &LayoutOverride) -> Result<TaskStatus, ApiError> {
    let known = known_sheets(task)?;
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, sheet) in layout.sheets.iter().enumerate() {
        let problem = |key: &str, message: String| Problem {
            pointer: format!("/sheets/{i}{key}"),
            message,
        };
        if !seen.insert(sheet.sheet) {
            let message = format!("sheet {} is named twice", sheet.sheet);
            problems.push(problem("/sheet", message));
            continue;
        }
        let Some(found) = known.iter().find(|k| k.index == sheet.sheet) else {
            let indexes: Vec<String> = known.iter().map(|k| k.index.to_string()).collect();
            let message = format!(
                "the file has no sheet {} (its sheets: {})",
                sheet.sheet,
                indexes.join(", ")
            );
            problems.push(problem("/sheet", message));
            continue;
        };
        let records = found.layout.map_or(u64::MAX, |l| l.records);
        let inside = |row: u64| (1..=records).contains(&row);
        let outside = |row: u64| {
            if row == 0 {
                "rows are numbered from 1".to_owned()
            } else {
                format!("row {row} is outside the sheet, whose last row is {records}")
            }
        };
        let header = match sheet.header() {
            ForcedHeader::Row(row) if !inside(row) => {
                problems.push(problem("/header_row", outside(row)));
                continue;
            }
            ForcedHeader::Row(row) => row,
            ForcedHeader::None => 0,
            ForcedHeader::Detect => found
                .layout
                .and_then(|l| l.header_rows.last().copied())
                .unwrap_or(0),
        };
        match sheet.end() {
            ForcedEnd::Row(row) if !inside(row) => {
                problems.push(problem("/last_row", outside(row)));
            }
            ForcedEnd::Row(row) if row <= header => {
                let message =
                    format!("the table's last row ({row}) must be below its header (row {header})");
                problems.push(problem("/last_row", message));
            }
            _ => {}
        }
    }
    if problems.is_empty() {
        Ok(task.status)
    } else {
        Err(ApiError::InvalidLayout(problems))
    }
}

/// The sheets an override may name, or `409` when the task takes none.
fn known_sheets(task: &Task) -> Result<Vec<Known<'_>>, ApiError> {
    let from_result = || {
        let sheets = task.result.as_ref().map_or(&[][..], |r| &r.0.sheets[..]);
        sheets
            .iter()
            .map(|s| Known {
                index: s.index,
                layout: Some(&s.layout),
            })
            .collect()
    };
    match (task.status, task.error_code) {
        (TaskStatus::Completed, _) => Ok(from_result()),
        (TaskStatus::Failed, Some(TaskErrorCode::ValidationFailed)) => Ok(from_result()),
        (TaskStatus::NeedsReview, _) => Ok(task
            .review
            .iter()
            .map(|r| Known {
                index: r.0.sheet_index.unwrap_or(0),
                layout: r.0.layout.as_ref(),
            })
            .collect()),
        (TaskStatus::Failed, code) => Err(not_reparsable(
            task,
            format!(
                "it failed with {}, which is not about where its table lies: upload the file \
                 again instead",
                code.map_or("no code", |c| c.as_str())
            ),
        )),
        (TaskStatus::Pending | TaskStatus::Running, _) => Err(not_reparsable(
            task,
            "its parse has not ended yet: set the layout once it has".to_owned(),
        )),
    }
}

pub fn not_reparsable(task: &Task, why: String) -> ApiError {
    ApiError::Conflict {
        code: ApiErrorCode::NotReparsable,
        message: format!(
            "task {} ({}) cannot be parsed again with a layout: {why}",
            task.id,
            task.status.as_str()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::domain::task_result::TaskResult;
    use sqlx::types::Json;

    /// A COMPLETED task whose one sheet has 12 records and its header on row 3.
    fn completed() -> Task {
        let result: TaskResult = serde_json::from_value(json!({
            "rows_total": 8, "skipped_parts": [],
            "sheets": [{"column_types": ["text"], "columns": ["a"], "extra_columns": 0,
                        "header_row": 3, "hidden": false, "index": 0, "name": "Sheet1", "rows": 8,
                        "layout": {"records": 12, "header_rows": [3],
                                   "data": {"first_row": 4, "last_row": 11, "blank_rows": 0},
                                   "set_aside": [{"from_row": 1, "to_row": 2, "kind": "above", "rows": 2},
                                                 {"from_row": 12, "to_row": 12, "kind": "notes", "rows": 1}]}}]
        }))
        .expect("result");
        Task {
            id: uuid::Uuid::nil(),
            source_file_id: uuid::Uuid::nil(),
            status: TaskStatus::Completed,
            attempts: 1,
            error_code: None,
            error_message: None,
            result: Some(Json(result)),
            lease_expires_at: None,
            created_at: chrono::Utc::now(),
            started_at: None,
            finished_at: None,
            review: None,
            layout_override: None,
        }
    }

    fn layout(sheets: serde_json::Value) -> LayoutOverride {
        serde_json::from_value(json!({ "sheets": sheets })).expect("override")
    }

    fn pointers(result: Result<TaskStatus, ApiError>) -> Vec<String> {
        match result {
            Err(ApiError::InvalidLayout(problems)) => {
                problems.into_iter().map(|p| p.pointer).collect()
            }
            other => panic!("expected invalid_layout, got {other:?}"),
        }
    }

    #[test]
    fn a_header_and_an_end_inside_the_sheet_are_taken() {
        let task = completed();
        let ok = check(
            &task,
            &layout(json!([{"sheet": 0, "header_row": 1, "last_row": 12}])),
        );
        assert!(matches!(ok, Ok(TaskStatus::Completed)));
        let no_header = layout(json!([{"sheet": 0, "header_row": null, "last_row": null}]));
        assert!(check(&task, &no_header).is_ok());
    }

    #[test]
    fn every_problem_is_reported_with_its_pointer() {
        let task = completed();
        let bad = layout(json!([
            {"sheet": 0, "header_row": 13},
            {"sheet": 0},
            {"sheet": 4, "last_row": 2},
        ]));
        assert_eq!(
            pointers(check(&task, &bad)),
            ["/sheets/0/header_row", "/sheets/1/sheet", "/sheets/2/sheet"]
        );
        // The detected header (row 3) bounds a forced end, as a forced header does.
        let above = layout(json!([{"sheet": 0, "last_row": 3}]));
        assert_eq!(pointers(check(&task, &above)), ["/sheets/0/last_row"]);
        let zero = layout(json!([{"sheet": 0, "header_row": 5, "last_row": 0}]));
        assert_eq!(pointers(check(&task, &zero)), ["/sheets/0/last_row"]);
    }

    #[test]
    fn a_running_task_or_a_failure_not_about_the_table_is_a_conflict() {
        let mut task = completed();
        task.status = TaskStatus::Running;
        task.result = None;
        let any = layout(json!([]));
        let code = |r: Result<TaskStatus, ApiError>| match r {
            Err(ApiError::Conflict { code, .. }) => Some(code),
            _ => None,
        };
        assert_eq!(code(check(&task, &any)), Some(ApiErrorCode::NotReparsable));
        task.status = TaskStatus::Failed;
        task.error_code = Some(TaskErrorCode::CorruptFile);
        assert_eq!(code(check(&task, &any)), Some(ApiErrorCode::NotReparsable));
    }
}
