//! A sheet's rows as the latest revision has them: the stored rows, each replaced by its
//! corrected values where a revision re-checked it (`keep_invalid_rows`), and the rows a
//! correction made valid joined in their place in file order (a dropped or rejected row comes
//! back before the stored row that followed it in the file). Indices count the rows so merged
//! from 0, as the original ones do, so pages and exports read the same.

use std::collections::HashMap;

use crate::db;
use crate::db::corrections::OverlayRow;
use crate::db::rows::Row;
use futures::stream::{BoxStream, StreamExt as _};
use serde_json::value::RawValue;
use sqlx::PgPool;
use uuid::Uuid;

/// The corrected rows of one sheet that change its rows.
pub struct Overlay {
    /// Rows that joined, in file order, each with the original index it comes before.
    joined: Vec<OverlayRow>,
    /// Stored rows' new values, by original index.
    replaced: HashMap<i64, serde_json::Value>,
    /// How many rows were stored at first.
    originals: i64,
}

impl Overlay {
    /// The sheet's overlay; `None` when no revision changed its rows. `rows` is the sheet's
    /// row count now (the original rows and those that joined).
    pub async fn load(
        db: &PgPool,
        source_file_id: Uuid,
        sheet: i32,
        rows: i64,
    ) -> sqlx::Result<Option<Self>> {
        let changed = db::corrections::overlay(db, source_file_id, sheet).await?;
        if changed.is_empty() {
            return Ok(None);
        }
        let (replacing, joined): (Vec<OverlayRow>, Vec<OverlayRow>) =
            changed.into_iter().partition(|r| r.replaces);
        let originals = rows - i64::try_from(joined.len()).unwrap_or(0);
        let mut joined = joined;
        for j in &mut joined {
            j.stored_index = j.stored_index.min(originals);
        }
        joined.sort_by_key(|j| (j.stored_index, j.row_number));
        Ok(Some(Self {
            joined,
            replaced: replacing
                .into_iter()
                .map(|r| (r.stored_index, r.values))
                .collect(),
            originals,
        }))
    }

    /// How many joined rows come before original row `i` (or at the end, for `originals`).
    fn joined_before(&self, i: i64) -> i64 {
        let n = self.joined.partition_point(|j| j.stored_index <= i);
        i64::try_from(n).unwrap_or(i64::MAX)
    }

    /// The index a row of the file takes among the rows as merged: `stored_index` rows were
    /// stored before it (its own index, when it is stored itself) and `row_number` is its
    /// number in the file, so it follows every joined row that comes before it in the file.
    /// Where the grid puts a row that has errors among the rows the rows endpoint pages.
    pub fn index_of(&self, stored_index: i64, row_number: i64) -> i64 {
        let at = stored_index.min(self.originals);
        let before = self
            .joined
            .partition_point(|j| (j.stored_index, j.row_number) < (at, row_number));
        at + i64::try_from(before).unwrap_or(i64::MAX)
    }

    /// Up to `limit` rows after `after`, in order.
    pub async fn page(
        &self,
        db: &PgPool,
        source_file_id: Uuid,
        sheet: i32,
        after: Option<i64>,
        limit: i64,
    ) -> sqlx::Result<Vec<Row>> {
        let start = after.map_or(0, |a| a.saturating_add(1));
        let end = start.saturating_add(limit);
        // The first original row at or past `start` once merged: indices only grow by merging.
        let (mut lo, mut hi) = (0i64, start.min(self.originals));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if mid + self.joined_before(mid) >= start {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let first = lo;
        let originals =
            db::rows::page(db, source_file_id, sheet, first.checked_sub(1), limit).await?;
        let mut rows: Vec<Row> = originals
            .into_iter()
            .map(|r| {
                let index = r.row_index + self.joined_before(r.row_index);
                let values = self.replaced.get(&r.row_index).cloned().unwrap_or(r.values);
                Row {
                    row_index: index,
                    values,
                }
            })
            .collect();
        for (p, j) in self.joined.iter().enumerate() {
            let index = j.stored_index + i64::try_from(p).unwrap_or(i64::MAX);
            if (start..end).contains(&index) {
                rows.push(Row {
                    row_index: index,
                    values: j.values.clone(),
                });
            }
        }
        rows.retain(|r| (start..end).contains(&r.row_index));
        rows.sort_by_key(|r| r.row_index);
        Ok(rows)
    }

    /// A stored chunk (the JSON array of the rows from original index `first_row`) as the
    /// latest revision has it: joined rows put before the row they precede, replaced rows'
    /// values swapped in ([`Overlay::trailing`] follows the last chunk).
    pub fn chunk(&self, first_row: i64, rows_json: &str) -> serde_json::Result<String> {
        let rows: Vec<&RawValue> = serde_json::from_str(rows_json)?;
        let mut out: Vec<String> = Vec::with_capacity(rows.len());
        for (i, raw) in (first_row..).zip(rows) {
            for j in self.joined.iter().filter(|j| j.stored_index == i) {
                out.push(j.values.to_string());
            }
            match self.replaced.get(&i) {
                Some(values) => out.push(values.to_string()),
                None => out.push(raw.get().to_owned()),
            }
        }
        Ok(format!("[{}]", out.join(",")))
    }

    /// The rows that join after every stored row, as one chunk's JSON array (`None`: none).
    pub fn trailing(&self) -> Option<String> {
        let rows: Vec<String> = self
            .joined
            .iter()
            .filter(|j| j.stored_index >= self.originals)
            .map(|j| j.values.to_string())
            .collect();
        (!rows.is_empty()).then(|| format!("[{}]", rows.join(",")))
    }
}

/// Every row of one sheet as the latest revision has it, as stored chunks (the JSON text of an
/// array of rows), in order: the stored chunks with `overlay` applied, then its trailing rows.
/// What an export and a destination encode, so both give the same bytes for one revision.
pub fn latest_chunks<'a>(
    db: &'a PgPool,
    source_file_id: Uuid,
    sheet: i32,
    overlay: Option<&'a Overlay>,
) -> BoxStream<'a, sqlx::Result<String>> {
    let stored = db::rows::chunks(db, source_file_id, sheet).map(move |chunk| match overlay {
        Some(o) => chunk.and_then(|c| {
            o.chunk(c.first_row, &c.rows)
                .map_err(|e| sqlx::Error::Decode(e.into()))
        }),
        None => chunk.map(|c| c.rows),
    });
    let trailing = futures::stream::iter(overlay.and_then(Overlay::trailing).map(Ok));
    stored.chain(trailing).boxed()
}

/// Up to `limit` rows of the sheet after `after`, as the latest revision has them.
pub async fn latest_page(
    db: &PgPool,
    source_file_id: Uuid,
    sheet: i32,
    overlay: Option<&Overlay>,
    (after, limit): (Option<i64>, i64),
) -> sqlx::Result<Vec<Row>> {
    match overlay {
        Some(o) => o.page(db, source_file_id, sheet, after, limit).await,
        None => db::rows::page(db, source_file_id, sheet, after, limit).await,
    }
}
