//! What the partitioned tables share: taking a partition out of its table without stopping the
//! table's readers and writers. The row store drops its months with it ([`super::row_store`]),
//! the event log its days ([`super::event_log`]).

use sqlx::PgConnection;

/// Detaches partition `part` of `table` with `DETACH ... CONCURRENTLY` (it waits for the queries
/// that use the partition, and blocks no reader or writer of the table meanwhile), then drops
/// it. `conn` must not be in a transaction. Every step can be run again: a crash part-way is
/// finished by the next call (a detach left pending is finalized), and a partition already gone
/// is no error. Both names must be identifiers that need no quoting (the callers' registries
/// allow no other).
pub async fn detach_and_drop(conn: &mut PgConnection, table: &str, part: &str) -> sqlx::Result<()> {
    let pending: Option<bool> = sqlx::query_scalar(
        "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = to_regclass($1)",
    )
    .bind(part)
    .fetch_optional(&mut *conn)
    .await?;
    let detach = match pending {
        Some(false) => Some("CONCURRENTLY"),
        Some(true) => Some("FINALIZE"),
        None => None,
    };
    if let Some(how) = detach {
        sqlx::query(&format!(
            "ALTER TABLE {table} DETACH PARTITION {part} {how}"
        ))
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query(&format!("DROP TABLE IF EXISTS {part}"))
        .execute(&mut *conn)
        .await?;
    Ok(())
}
