//! `remembered_mappings`: the mappings people confirmed, per tenant, template name and header
//! set, so the next file with the same header set goes through without a review. One row per
//! key (a new confirmation replaces the old); a template's delete removes its rows.

use std::collections::BTreeMap;

use sqlx::PgExecutor;

/// How many remembered header sets of one template a parse is given, the most recently
/// confirmed first: a bound on the parse request, far above what a template meets in practice.
pub const MAX_PER_TEMPLATE: i64 = 200;

/// Remembers `mapping` (`{"<field>": "<header text>"|null}`) for the header set `header_key`.
pub async fn remember(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    template_name: &str,
    header_key: &str,
    mapping: &serde_json::Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"INSERT INTO remembered_mappings (tenant_id, template_name, header_key, mapping)
           VALUES ($1, $2, $3, $4)
           ON CONFLICT (tenant_id, template_name, header_key)
           DO UPDATE SET mapping = EXCLUDED.mapping, confirmed_at = now()"#,
        tenant_id,
        template_name,
        header_key,
        mapping
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The remembered mappings of a template, by header key (at most [`MAX_PER_TEMPLATE`]).
pub async fn of_template(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    template_name: &str,
) -> sqlx::Result<BTreeMap<String, serde_json::Value>> {
    let rows = sqlx::query!(
        r#"SELECT header_key, mapping FROM remembered_mappings
           WHERE tenant_id = $1 AND template_name = $2
           ORDER BY confirmed_at DESC LIMIT $3"#,
        tenant_id,
        template_name,
        MAX_PER_TEMPLATE
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.header_key, r.mapping))
        .collect())
}
