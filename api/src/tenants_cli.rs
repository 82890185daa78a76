//! `api tenants set|show`: a tenant's limits from the command line, with nothing but
//! `DATABASE_URL` (and the defaults the api would use, from the same settings). `show` prints
//! one JSON object on stdout, for scripts.

use std::io::Write as _;

use anyhow::Context as _;
use serde_json::json;
use shared::db::limits;

use crate::auth;
use crate::config::{Config, TenantsCommand};

pub async fn run(cfg: &Config, command: TenantsCommand) -> anyhow::Result<()> {
    crate::migrate(cfg).await?;
    let db = cfg.database.pool().context("invalid DATABASE_URL")?;
    match command {
        TenantsCommand::Set {
            tenant,
            upload_rate,
            storage_quota,
        } => {
            valid(&tenant)?;
            anyhow::ensure!(
                upload_rate.is_some() || storage_quota.is_some(),
                "nothing to set: give --upload-rate and/or --storage-quota"
            );
            let quota = storage_quota
                .map(i64::try_from)
                .transpose()
                .context("--storage-quota is too large")?;
            limits::set(&db, &tenant, upload_rate, quota).await?;
            eprintln!("set the limits of tenant {tenant}");
        }
        TenantsCommand::Show { tenant } => {
            valid(&tenant)?;
            let own = limits::overrides(&db, &tenant).await?;
            let used = limits::usage(&db, &tenant).await?;
            let shown = json!({
                "tenant": tenant,
                "upload_rate": own.upload_rate.unwrap_or(cfg.limits.upload_rate).to_string(),
                "upload_rate_is_default": own.upload_rate.is_none(),
                "storage_quota_bytes": own.storage_quota_bytes
                    .map_or(cfg.limits.storage_quota_bytes, |q| q.unsigned_abs()),
                "storage_quota_is_default": own.storage_quota_bytes.is_none(),
                "stored_bytes": used,
                "updated_at": own.updated_at,
            });
            writeln!(std::io::stdout().lock(), "{shown}")?;
        }
    }
    Ok(())
}

fn valid(tenant: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        auth::valid_tenant_id(tenant),
        "the tenant must be 1-64 letters, digits, '.', '_' or '-' (a name or a GUID)"
    );
    Ok(())
}
