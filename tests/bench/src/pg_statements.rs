//! `BENCH_PG_STATEMENTS=1`: where a scenario's Postgres time went, statement by statement. The
//! shared cluster then loads `pg_stat_statements` (tests/stack/lib.sh) and tracks the statements
//! of functions and triggers too; a scenario resets the counts when its measurement starts and
//! writes the statements that took the most time to `target/bench/pg-statements-<label>.txt`
//! when it ends. Off by default: the figures in BENCHMARKS.md are measured without it.

use anyhow::Context as _;
use sqlx::PgPool;

use crate::env;

fn enabled() -> bool {
    std::env::var_os("BENCH_PG_STATEMENTS").is_some()
}

/// Starts counting from zero (for every database of the cluster).
pub async fn reset(db: &PgPool) -> anyhow::Result<()> {
    if !enabled() {
        return Ok(());
    }
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(db)
        .await
        .context("pg_stat_statements (was the cluster started with BENCH_PG_STATEMENTS set?)")?;
    sqlx::query("SELECT pg_stat_statements_reset()")
        .execute(db)
        .await?;
    Ok(())
}

/// Writes this database's 40 costliest statements since [`reset`], per `per` units of work
/// (calls and milliseconds per unit), nested ones (in triggers and functions) marked.
pub async fn write(db: &PgPool, label: &str, per: f64) -> anyhow::Result<()> {
    if !enabled() {
        return Ok(());
    }
    let rows: Vec<(bool, i64, f64, f64, String)> = sqlx::query_as(
        "SELECT NOT toplevel, calls, total_exec_time, total_plan_time,
                regexp_replace(query, '\\s+', ' ', 'g')
         FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         ORDER BY total_exec_time + total_plan_time DESC LIMIT 40",
    )
    .fetch_all(db)
    .await?;
    let mut out = format!(
        "{label}: per unit of work ({per} units); exec and plan ms; * nested\n\
         {:>8} {:>9} {:>9}  statement\n",
        "calls", "exec ms", "plan ms"
    );
    for (nested, calls, exec, plan, query) in rows {
        let query: String = query.chars().take(220).collect();
        out.push_str(&format!(
            "{:>8.2} {:>9.4} {:>9.4} {}{query}\n",
            calls as f64 / per,
            exec / per,
            plan / per,
            if nested { "* " } else { "" }
        ));
    }
    let path = env::out_dir().join(format!("pg-statements-{label}.txt"));
    std::fs::write(&path, out)?;
    eprintln!("pg_stat_statements: {}", path.display());
    Ok(())
}
