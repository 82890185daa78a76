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

/// Drops partition `name` of every table: `DETACH ... CONCURRENTLY` (it waits for the queries
/// that use the partition, and blocks no reader or writer of the table meanwhile), then `DROP
/// TABLE`, then its entry. `conn` must not be in a transaction. Every step can be run again:
/// a crash part-way is finished by the next call (a detach left pending is finalized).
pub async fn drop_partition(conn: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    for table in TABLES {
        let part = format!("{table}_{name}");
        let pending: Option<bool> = sqlx::query_scalar(
            "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = to_regclass($1)",
        )
        .bind(&part)
        .fetch_optional(&mut *conn)
        .await?;
        let detach = match pending {
            Some(false) => Some("CONCURRENTLY"),
            Some(true) => Some("FINALIZE"),
            None => None,
        };
        if let Some(how) = detach {
            // Identifiers from TABLES and a name the registry's CHECK allows: nothing to quote.
            sqlx::query(&format!(
                "ALTER TABLE {table} DETACH PARTITION {part} {how}"
            ))
            .execute(&mut *conn)
            .await?;
        }
        sqlx::query(&format!("DROP TABLE IF EXISTS {part}"))
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query!("DELETE FROM row_store_partitions WHERE name = $1", name)
        .execute(&mut *conn)
        .await?;
    Ok(())
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
