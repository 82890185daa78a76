//! The row store's partitions. `parsed_row_chunks`, `validation_errors` and `rejected_rows` are
//! partitioned by RANGE (source_file_id), one partition per month of uploads (file ids are
//! UUIDv7, so a month is a range of ids), plus `legacy` for what was stored before partitioning
//! (migrations `20261129*`, which say why and how). `row_store_partitions` lists the ranges.
//!
//! Months are added ahead ([`add_months_ahead`]), and by a consumer about to store the rows of a
//! month that has none ([`Months::ensure`]). A month whose files are all gone or being removed is
//! dropped whole ([`emptied`], [`drop_partition`]): one catalog change per table instead of a
//! `DELETE` per batch of rows, and no dead tuples left for VACUUM.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Datelike as _, Utc};
use sqlx::{PgConnection, PgExecutor, PgPool};
use uuid::Uuid;

/// The partitioned tables, each with one partition per range.
pub const TABLES: [&str; 3] = ["parsed_row_chunks", "validation_errors", "rejected_rows"];

/// The month (UTC) in which the UUIDv7 `id` was made, as `year * 12 + month0`: the key of the
/// months a process knows to have partitions. `None` for an id with no timestamp.
fn month_of(id: Uuid) -> Option<i32> {
    let (secs, nanos) = id.get_timestamp()?.to_unix();
    let at = DateTime::<Utc>::from_timestamp(i64::try_from(secs).ok()?, nanos)?;
    Some(at.year() * 12 + at.month0() as i32)
}

/// The months this process has seen partitions for: a consumer asks Postgres once per month,
/// not once per file.
#[derive(Debug, Default)]
pub struct Months(Mutex<HashSet<i32>>);

impl Months {
    /// Makes sure the partitions that will hold the rows of file `id` exist.
    pub async fn ensure(&self, db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<()> {
        let month = month_of(id);
        let known = |m| {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&m)
        };
        if month.is_some_and(known) {
            return Ok(());
        }
        sqlx::query_scalar!(
            r#"SELECT row_store_add_month(row_store_month_of($1)) AS "added!""#,
            id
        )
        .fetch_one(db)
        .await?;
        if let Some(m) = month {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(m);
        }
        Ok(())
    }
}

/// Adds the partitions of this month and the next `ahead` months that have none. Returns how
/// many months it added.
pub async fn add_months_ahead(db: &PgPool, ahead: i32) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) FILTER (WHERE row_store_add_month(
                      (date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => n))
                      AT TIME ZONE 'UTC')) AS "added!"
           FROM generate_series(0, $1::int) n"#,
        ahead
    )
    .fetch_one(db)
    .await
}

/// The partitions that can be dropped whole: wholly before the current month, and holding no
/// file that is still in place, or being removed while a consumer parses it (its rows would be
/// committed into a partition on its way out). Oldest first.
pub async fn emptied(db: impl PgExecutor<'_>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT p.name FROM row_store_partitions p
           WHERE p.to_id <= row_store_bound(
                     date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
             AND NOT EXISTS (
                 SELECT 1 FROM source_files f LEFT JOIN tasks t ON t.source_file_id = f.id
                 WHERE f.id < p.to_id
                   AND f.id >= coalesce(p.from_id, '00000000-0000-0000-0000-000000000000')
                   AND (f.deleting_at IS NULL
                        OR (t.status = 'RUNNING' AND t.lease_expires_at >= now())))
           ORDER BY p.to_id"#
    )
    .fetch_all(db)
    .await
}

/// Drops partition `name` of every table ([`super::partitions::detach_and_drop`]), then its
/// entry. `conn` must not be in a transaction; a crash part-way is finished by the next call.
pub async fn drop_partition(conn: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    for table in TABLES {
        super::partitions::detach_and_drop(conn, table, &format!("{table}_{name}")).await?;
    }
    sqlx::query!("DELETE FROM row_store_partitions WHERE name = $1", name)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Records what file `id`'s rows take (`rows` parsed rows), in the transaction that stored
/// them: its chunks as stored, its error records and rejected rows, plus [`TUPLE_OVERHEAD`]
/// per chunk (the SQL function `row_store_file_bytes`). The tenant's sums follow by trigger.
pub async fn record_usage(db: impl PgExecutor<'_>, id: Uuid, rows: i64) -> sqlx::Result<()> {
    sqlx::query!(
        r#"INSERT INTO file_row_usage (source_file_id, tenant_id, row_count, row_bytes)
           SELECT f.id, f.tenant_id, $2, row_store_file_bytes(f.id, $3)
           FROM source_files f WHERE f.id = $1
           ON CONFLICT (source_file_id) DO UPDATE
               SET row_count = EXCLUDED.row_count, row_bytes = EXCLUDED.row_bytes"#,
        id,
        rows,
        TUPLE_OVERHEAD
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Bytes a chunk takes besides its rows: a 24-byte tuple header, a 4-byte line pointer, 32
/// bytes of fixed columns, and about 40 for its primary-key entry.
pub const TUPLE_OVERHEAD: i64 = 100;

/// Measures up to `limit` files with a final task and no usage yet (stored before usage was
/// recorded), in id order after `after`. Returns the last id measured, `None` when none was
/// left: the caller starts again from the lowest id next time.
pub async fn measure_unmeasured(
    db: impl PgExecutor<'_>,
    after: Uuid,
    limit: i64,
) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar!(
        r#"WITH todo AS (
               SELECT f.id, f.tenant_id FROM source_files f
               JOIN tasks t ON t.source_file_id = f.id
               WHERE f.id > $1 AND t.status IN ('COMPLETED', 'FAILED')
                 AND NOT EXISTS (SELECT 1 FROM file_row_usage u WHERE u.source_file_id = f.id)
               ORDER BY f.id
               LIMIT $2
           ), measured AS (
               INSERT INTO file_row_usage (source_file_id, tenant_id, row_count, row_bytes)
               SELECT id, tenant_id,
                      coalesce((SELECT sum(s.row_count) FROM parsed_sheets s
                                WHERE s.source_file_id = todo.id), 0),
                      row_store_file_bytes(id, $3)
               FROM todo
               ON CONFLICT (source_file_id) DO NOTHING
           )
           SELECT (SELECT id FROM todo ORDER BY id DESC LIMIT 1) AS last"#,
        after,
        limit,
        TUPLE_OVERHEAD
    )
    .fetch_one(db)
    .await
}

/// The parsed rows `tenant` stores and the row store bytes recorded for them.
pub async fn of_tenant(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<(i64, i64)> {
    let row = sqlx::query!(
        r#"SELECT coalesce(sum(row_count), 0)::bigint AS "row_count!",
                  coalesce(sum(row_bytes), 0)::bigint AS "row_bytes!"
           FROM tenant_row_usage WHERE tenant_id = $1"#,
        tenant
    )
    .fetch_one(db)
    .await?;
    Ok((row.row_count, row.row_bytes))
}

/// The row store as the gauges show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// On disk: every partition of the three tables, with TOAST and indexes.
    pub bytes_on_disk: i64,
    pub rows: i64,
    /// The tenants that store the most, by recorded bytes, most first: (tenant, rows, bytes).
    pub top: Vec<(String, i64, i64)>,
    /// The recorded bytes and rows of every other tenant together.
    pub other_rows: i64,
    pub other_bytes: i64,
}

/// The row store's size on disk and what the `top` tenants that store the most have recorded.
pub async fn usage(db: &PgPool, top: i64) -> sqlx::Result<Usage> {
    let totals = sqlx::query!(
        r#"SELECT (SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)::bigint
                   FROM pg_inherits i
                   WHERE i.inhparent IN ('parsed_row_chunks'::regclass,
                                         'validation_errors'::regclass,
                                         'rejected_rows'::regclass)) AS "bytes_on_disk!",
                  coalesce(sum(row_count), 0)::bigint AS "rows!",
                  coalesce(sum(row_bytes), 0)::bigint AS "bytes!"
           FROM tenant_row_usage"#
    )
    .fetch_one(db)
    .await?;
    let top: Vec<(String, i64, i64)> = sqlx::query!(
        r#"SELECT tenant_id, sum(row_count)::bigint AS "row_count!",
                  sum(row_bytes)::bigint AS "row_bytes!"
           FROM tenant_row_usage GROUP BY tenant_id
           HAVING sum(row_bytes) > 0 ORDER BY 3 DESC, tenant_id LIMIT $1"#,
        top
    )
    .fetch_all(db)
    .await?
    .into_iter()
    .map(|r| (r.tenant_id, r.row_count, r.row_bytes))
    .collect();
    let (top_rows, top_bytes) = top.iter().fold((0, 0), |(r, b), t| (r + t.1, b + t.2));
    Ok(Usage {
        bytes_on_disk: totals.bytes_on_disk,
        rows: totals.rows,
        top,
        other_rows: totals.rows - top_rows,
        other_bytes: totals.bytes - top_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_month_comes_from_its_uuid_v7_timestamp() {
        let at = |secs| Uuid::new_v7(uuid::Timestamp::from_unix(uuid::NoContext, secs, 0));
        // 2026-11-30T23:59:59Z and a second later.
        assert_eq!(month_of(at(1_796_083_199)), Some(2026 * 12 + 10));
        assert_eq!(month_of(at(1_796_083_200)), Some(2026 * 12 + 11));
        assert_eq!(month_of(Uuid::new_v4()), None, "a v4 id has no time");
    }
}
