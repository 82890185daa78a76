//! One revision's rows: the request checked against the file, its edits applied to the rows'
//! cells, the key index's values moved, and every row touched checked again.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use shared::db;
use shared::db::corrections::{CheckedRow, CurrentRow};
use shared::domain::task_result::ValidationResult;
use shared::domain::OnInvalid;
use sqlx::PgConnection;
use template::Problem;

use super::keys::KeyIndex;
use super::recheck::Rechecker;
use super::{CorrectionItem, FileCtx, Moves, Rechecked, MAX_SHARING};
use crate::error::ApiError;
use template::json_cells;

/// Checks the request against the file, applies its edits to the rows' cells and checks every
/// row they touch again: the corrected rows, and the rows that shared a key value they left.
pub(super) async fn revise(
    conn: &mut PgConnection,
    file: &FileCtx<'_>,
    validation: &ValidationResult,
    items: &[CorrectionItem],
) -> Result<Vec<Rechecked>, ApiError> {
    let wanted: Vec<i64> = items
        .iter()
        .map(|c| c.row)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let current: HashMap<i64, CurrentRow> =
        db::corrections::current_rows(&mut *conn, file.id, file.sheet, &wanted)
            .await?
            .into_iter()
            .map(|r| (r.row_number, r))
            .collect();
    let edited = edit(file, validation, items, &current)?;
    let mut checker = Rechecker::new(
        file.template,
        &validation.source_columns,
        file.mapping.clone(),
        validation.header_row,
        file.sheet,
    );
    let mut moves: Moves = BTreeMap::new();
    for (&row, cells) in &edited {
        let number = u64::try_from(row).unwrap_or(0);
        let before = &current[&row];
        let typed = file.workbook.then_some(&before.original);
        let old = checker.keys(number, &json_cells::cells(&before.cells, typed));
        let new = checker.keys(number, &json_cells::cells(cells, typed));
        moves.insert(row, (old, new));
    }
    let values = moves.values().flat_map(|(o, n)| o.iter().chain(n)).copied();
    let mut index = KeyIndex::load(
        &mut *conn,
        file.id,
        file.sheet,
        values.collect::<Vec<_>>().into_iter(),
    )
    .await?;
    for (&row, (old, new)) in &moves {
        let number = u64::try_from(row).unwrap_or(0);
        for &(slot, f) in old {
            index.remove(slot, f, number);
        }
        for &(slot, f) in new {
            index.add(slot, f, number);
        }
    }
    let sharing = sharing_rows(&moves, &index, &edited);
    let mut others: HashMap<i64, CurrentRow> = HashMap::new();
    if !sharing.is_empty() {
        for r in db::corrections::current_rows(&mut *conn, file.id, file.sheet, &sharing).await? {
            others.insert(r.row_number, r);
        }
    }
    let mut out = Vec::new();
    for (row, cells) in &edited {
        let after = check_row(
            file,
            &mut checker,
            &index,
            (*row, cells),
            &current[row],
            true,
        );
        out.push(Rechecked {
            before: current[row].clone(),
            after,
            corrected: true,
        });
    }
    for (row, before) in others {
        let after = check_row(
            file,
            &mut checker,
            &index,
            (row, &before.cells),
            &before,
            false,
        );
        out.push(Rechecked {
            before,
            after,
            corrected: false,
        });
    }
    out.sort_by_key(|r| r.after.row_number);
    let changed = index.changed();
    db::keys::rewrite(&mut *conn, file.id, &changed).await?;
    Ok(out)
}

/// The rows' cells with the request's edits applied, or every problem of the request.
fn edit(
    file: &FileCtx<'_>,
    validation: &ValidationResult,
    items: &[CorrectionItem],
    current: &HashMap<i64, CurrentRow>,
) -> Result<BTreeMap<i64, serde_json::Value>, ApiError> {
    let mut problems = Vec::new();
    let mut edited: BTreeMap<i64, serde_json::Value> = BTreeMap::new();
    let last_row = validation.header_row;
    for (i, item) in items.iter().enumerate() {
        let at = |part: &str| format!("/corrections/{i}/{part}");
        let mut problem = |pointer: String, message: String| {
            problems.push(Problem { pointer, message });
        };
        if item.sheet != file.sheet {
            problem(
                at("sheet"),
                format!(
                    "sheet {} was not checked against the template (sheet {} was)",
                    item.sheet, file.sheet
                ),
            );
            continue;
        }
        let Some(field) = file
            .template
            .fields
            .iter()
            .position(|f| f.name == item.field)
        else {
            problem(
                at("field"),
                format!("the template has no field \"{}\"", item.field),
            );
            continue;
        };
        let Some(column) = file.mapping[field] else {
            problem(
                at("field"),
                format!("the field \"{}\" has no column in the file", item.field),
            );
            continue;
        };
        let Some(row) = current.get(&item.row) else {
            let message = if item.row <= i64::try_from(last_row).unwrap_or(i64::MAX) {
                format!("row {} is not a data row of the file", item.row)
            } else {
                format!(
                    "row {} is not in the file's error report (a row without errors, one past \
                     the report's cap, or no row of the file)",
                    item.row
                )
            };
            problem(at("row"), message);
            continue;
        };
        let cells = edited.entry(item.row).or_insert_with(|| row.cells.clone());
        set_cell(cells, column, item.value.as_deref());
    }
    if problems.is_empty() {
        Ok(edited)
    } else {
        Err(ApiError::InvalidCorrection(problems))
    }
}

/// Sets a row's cell (padding a short row with empty cells).
fn set_cell(cells: &mut serde_json::Value, column: usize, value: Option<&str>) {
    if !cells.is_array() {
        *cells = serde_json::Value::Array(vec![cells.take()]);
    }
    if let serde_json::Value::Array(cells) = cells {
        if cells.len() <= column {
            cells.resize(column + 1, serde_json::Value::Null);
        }
        cells[column] = value.map_or(serde_json::Value::Null, |v| v.into());
    }
}

/// The rows besides the corrected ones that hold a key value a corrected row left: their
/// duplicate errors may have gone or now name another first row.
fn sharing_rows(
    moves: &Moves,
    index: &KeyIndex,
    edited: &BTreeMap<i64, serde_json::Value>,
) -> Vec<i64> {
    let mut rows = BTreeSet::new();
    for (old, new) in moves.values() {
        for &(slot, f) in old.iter().filter(|v| !new.contains(v)) {
            for h in index.holders(slot, f).into_iter().take(MAX_SHARING) {
                let h = i64::try_from(h).unwrap_or(i64::MAX);
                if !edited.contains_key(&h) {
                    rows.insert(h);
                }
            }
        }
    }
    rows.into_iter().collect()
}

/// Checks one row with its cells, the first other holder of each of its key values seeded: for
/// a row a person just `corrected`, any other holder, so the value they typed is the duplicate
/// (with the row that holds it named) and the request still applies; for a row checked again
/// because a value it shares moved, only an earlier one, as at upload.
fn check_row(
    file: &FileCtx<'_>,
    checker: &mut Rechecker<'_>,
    index: &KeyIndex,
    (row, cells): (i64, &serde_json::Value),
    before: &CurrentRow,
    corrected: bool,
) -> CheckedRow {
    let number = u64::try_from(row).unwrap_or(0);
    let held = json_cells::cells(cells, file.workbook.then_some(&before.original));
    let earlier: Vec<(i32, u128, u64)> = checker
        .keys(number, &held)
        .into_iter()
        .filter_map(|(slot, f)| {
            let first = index.holders(slot, f).into_iter().find(|&h| h != number)?;
            (corrected || first < number).then_some((slot, f, first))
        })
        .collect();
    let checked = checker.check(number, &held, &earlier);
    let replaces = file.on_invalid == OnInvalid::KeepInvalidRows && before.stored_index.is_some();
    CheckedRow {
        row_number: row,
        cells: cells.clone(),
        values: checked.values,
        valid: checked.valid,
        stored_index: before.stored_index.unwrap_or(i64::MAX),
        replaces,
        errors: checked.errors,
    }
}
