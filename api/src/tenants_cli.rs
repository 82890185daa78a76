//! `api tenants set|show|purge`: a tenant's limits and retention from the command line, with
//! nothing but `DATABASE_URL` (and the defaults the api would use, from the same settings), and
//! the purge of a tenant. `show` prints one JSON object on stdout, for scripts. A purge is a
//! request the worker's purge job carries out ([`shared::db::purges`]); asking revokes the
//! tenant's keys in the same transaction.

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;
use shared::db::limits;
use shared::db::purges;
use sqlx::PgPool;

use crate::auth;
use crate::config::{Config, TenantsCommand};

/// How often `purge --wait` looks at the purge's progress.
const WAIT_POLL: Duration = Duration::from_secs(1);

pub async fn run(cfg: &Config, command: TenantsCommand) -> anyhow::Result<()> {
    crate::migrate(cfg).await?;
    let db = cfg.database.pool().context("invalid DATABASE_URL")?;
    match command {
        TenantsCommand::Set {
            tenant,
            upload_rate,
            storage_quota,
            retention,
            new,
        } => {
            valid(&tenant)?;
            anyhow::ensure!(
                upload_rate.is_some() || storage_quota.is_some() || retention.is_some(),
                "nothing to set: give --upload-rate, --storage-quota and/or --retention"
            );
            anyhow::ensure!(
                new || purges::owns_anything(&db, &tenant).await?,
                "unknown tenant {tenant:?}: it owns no key, file, template, webhook or limits \
                 (check the id, or pass --new to set the limits of a tenant before its first \
                 request)"
            );
            let quota = storage_quota
                .map(i64::try_from)
                .transpose()
                .context("--storage-quota is too large")?;
            let mut tx = db.begin().await?;
            if upload_rate.is_some() || quota.is_some() {
                limits::set(&mut *tx, &tenant, upload_rate, quota).await?;
            }
            if let Some(retention) = retention {
                limits::set_retention(&mut *tx, &tenant, retention).await?;
            }
            tx.commit().await?;
            eprintln!("set the limits of tenant {tenant}");
        }
        TenantsCommand::Show { tenant } => {
            valid(&tenant)?;
            writeln!(
                std::io::stdout().lock(),
                "{}",
                shown(cfg, &db, &tenant).await?
            )?;
        }
        TenantsCommand::Purge { tenant, wait } => {
            valid(&tenant)?;
            purge(&db, &tenant, wait).await?;
        }
    }
    Ok(())
}

/// What `show` prints.
async fn shown(cfg: &Config, db: &PgPool, tenant: &str) -> anyhow::Result<serde_json::Value> {
    let own = limits::overrides(db, tenant).await?;
    let used = limits::usage(db, tenant).await?;
    let (rows, row_bytes) = shared::db::row_store::of_tenant(db, tenant).await?;
    let purge = match purges::find(db, tenant).await? {
        Some(p) => json!({
            "requested_at": p.requested_at,
            "finished_at": p.finished_at,
            "files_left": purges::files_left(db, tenant).await?,
        }),
        None => serde_json::Value::Null,
    };
    Ok(json!({
        "tenant": tenant,
        "upload_rate": own.upload_rate.unwrap_or(cfg.limits.upload_rate).to_string(),
        "upload_rate_is_default": own.upload_rate.is_none(),
        "storage_quota_bytes": own.storage_quota_bytes
            .map_or(cfg.limits.storage_quota_bytes, |q| q.unsigned_abs()),
        "storage_quota_is_default": own.storage_quota_bytes.is_none(),
        "retention": own.retention.unwrap_or(cfg.limits.retention).to_string(),
        "retention_is_default": own.retention.is_none(),
        "stored_bytes": used,
        "row_store_rows": rows,
        "row_store_bytes": row_bytes,
        "updated_at": own.updated_at,
        "purge": purge,
    }))
}

/// Records the purge of `tenant` (revoking its keys) and, with `wait`, follows it until the
/// worker has finished it. A tenant that owns nothing is refused: nothing is recorded.
async fn purge(db: &PgPool, tenant: &str, wait: bool) -> anyhow::Result<()> {
    let mut tx = db.begin().await?;
    anyhow::ensure!(
        purges::owns_anything(&mut *tx, tenant).await?,
        "unknown tenant {tenant:?}: it owns no key, file, template, webhook or limits; \
         nothing to purge"
    );
    purges::request(&mut tx, tenant).await?;
    tx.commit().await?;
    eprintln!(
        "purge of tenant {tenant} requested: its keys are revoked; the worker removes the rest \
         (`api tenants show {tenant}` shows the progress)"
    );
    if !wait {
        return Ok(());
    }
    let mut last_left = None;
    loop {
        let finished = purges::find(db, tenant)
            .await?
            .is_some_and(|p| p.finished_at.is_some());
        if finished {
            eprintln!("purge of tenant {tenant} finished");
            return Ok(());
        }
        let left = purges::files_left(db, tenant).await?;
        if last_left != Some(left) {
            eprintln!("purging tenant {tenant}: {left} files left");
            last_left = Some(left);
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}

fn valid(tenant: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        auth::valid_tenant_id(tenant),
        "the tenant must be 1-64 letters, digits, '.', '_' or '-' (a name or a GUID)"
    );
    Ok(())
}
