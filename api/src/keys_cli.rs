//! `api keys create|list|revoke`: key administration from the command line, with nothing but
//! `DATABASE_URL`. `create` prints the new key as the only line on stdout, so scripts can
//! capture it (`KEY=$(api keys create --name ci)`); everything else goes to stderr.

use std::io::Write as _;

use anyhow::Context as _;

use crate::auth::{self, api_key, DEFAULT_TENANT};
use crate::config::{Config, KeysCommand};

pub async fn run(cfg: &Config, command: KeysCommand) -> anyhow::Result<()> {
    crate::migrate(cfg).await?;
    let db = cfg.database.pool().context("invalid DATABASE_URL")?;
    let mut out = std::io::stdout().lock();
    match command {
        KeysCommand::Create { name, tenant } => {
            let tenant = tenant.as_deref().unwrap_or(DEFAULT_TENANT);
            anyhow::ensure!(
                auth::valid_tenant_id(tenant),
                "--tenant must be 1-64 letters, digits, '.', '_' or '-' (a name or a GUID)"
            );
            anyhow::ensure!(
                (1..=200).contains(&name.chars().count()),
                "--name must be 1-200 characters"
            );
            let purging = shared::db::purges::find(&db, tenant)
                .await?
                .is_some_and(|p| p.finished_at.is_none());
            anyhow::ensure!(
                !purging,
                "tenant {tenant} is being purged (`api tenants show {tenant}`); create its keys \
                 once the purge has finished"
            );
            let created = api_key::create(&db, tenant, &name)
                .await
                .context("cannot create the key")?;
            eprintln!(
                "created key {} ({}) for tenant {}; it is shown only now",
                created.key.id, created.key.name, created.key.tenant_id
            );
            writeln!(out, "{}", created.secret)?;
        }
        KeysCommand::List => {
            writeln!(out, "ID\tTENANT\tNAME\tKEY\tCREATED\tREVOKED")?;
            for key in shared::db::api_keys::list(&db).await? {
                let revoked = key.revoked_at.map(|t| t.to_rfc3339()).unwrap_or_default();
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}…\t{}\t{revoked}",
                    key.id,
                    key.tenant_id,
                    key.name,
                    key.prefix,
                    key.created_at.to_rfc3339()
                )?;
            }
        }
        KeysCommand::Revoke { id } => {
            let key = shared::db::api_keys::revoke(&db, id)
                .await?
                .with_context(|| format!("no key {id}"))?;
            eprintln!(
                "revoked key {} ({}) of tenant {}",
                key.id, key.name, key.tenant_id
            );
        }
    }
    Ok(())
}
