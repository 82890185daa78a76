//! One revision's rows: the request checked against the file, its edits applied to the rows'
//! cells, the key index's values moved, and every row touched checked again.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use shared::db;
use shared::db::corrections::{CheckedRow, CurrentRow};
use shared::domain::task_result::ValidationResult;
use shared::domain::OnInvalid;
use sqlx::PgConnection;
use template::validate::PRIMARY_KEY_SLOT;
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
    duplicates(file, items, &moves, &index)?;
    let sharing = sharing_rows(&moves, &index, &edited);
    let mut others: HashMap<i64, CurrentRow> = HashMap::new();
    if !sharing.is_empty() {
        for r in db::corrections::current_rows(&mut *conn, file.id, file.sheet, &sharing).await? {
            others.insert(r.row_number, r);
        }
    }
    let mut out = Vec::new();
    for (row, cells) in &edited {
        let after = check_row(file, &mut checker, &index, *row, cells, &current[row]);
        out.push(Rechecked {
            before: current[row].clone(),
            after,
            corrected: true,
        });
    }
    for (row, before) in others {
        let after = check_row(file, &mut checker, &index, row, &before.cells, &before);
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

/// Refuses the request if a corrected row's new key value is held by another row: the
/// correction would make a duplicate (`422`, the rows named).
fn duplicates(
    file: &FileCtx<'_>,
    items: &[CorrectionItem],
    moves: &Moves,
    index: &KeyIndex,
) -> Result<(), ApiError> {
    let mut problems = Vec::new();
    for (&row, (old, new)) in moves {
        let number = u64::try_from(row).unwrap_or(0);
        for &(slot, f) in new.iter().filter(|v| !old.contains(v)) {
            let others: Vec<u64> = index
                .holders(slot, f)
                .into_iter()
                .filter(|&h| h != number)
                .collect();
            let Some(&other) = others.first() else {
                continue;
            };
            let names: Vec<&str> = if slot == PRIMARY_KEY_SLOT {
                file.template
                    .primary_key
                    .iter()
                    .map(|&i| file.template.fields[i].name.as_str())
                    .collect()
            } else {
                usize::try_from(slot)
                    .ok()
                    .and_then(|i| file.template.fields.get(i))
                    .map(|f| vec![f.name.as_str()])
                    .unwrap_or_default()
            };
            let item = items
                .iter()
                .position(|c| c.row == row && names.contains(&c.field.as_str()))
                .or_else(|| items.iter().position(|c| c.row == row))
                .unwrap_or(0);
            let what = if slot == PRIMARY_KEY_SLOT {
                format!("the primary key ({})", names.join(", "))
            } else {
                format!("the unique field \"{}\"", names.join(", "))
            };
            problems.push(Problem {
                pointer: format!("/corrections/{item}/value"),
                message: format!(
                    "row {row}: {what} would have the same value as row {other} (a duplicate key)"
                ),
            });
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ApiError::InvalidCorrection(problems))
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

/// Checks one row with its cells `cells`, the first earlier holder of each of its key values
/// seeded.
fn check_row(
    file: &FileCtx<'_>,
    checker: &mut Rechecker<'_>,
    index: &KeyIndex,
    row: i64,
    cells: &serde_json::Value,
    before: &CurrentRow,
) -> CheckedRow {
    let number = u64::try_from(row).unwrap_or(0);
    let held = json_cells::cells(cells, file.workbook.then_some(&before.original));
    let earlier: Vec<(i32, u128, u64)> = checker
        .keys(number, &held)
        .into_iter()
        .filter_map(|(slot, f)| {
            let first = index.holders(slot, f).into_iter().find(|&h| h != number)?;
            (first < number).then_some((slot, f, first))
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
