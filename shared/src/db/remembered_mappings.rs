//! `remembered_mappings`: the mappings people confirmed, per tenant, template name and header
//! set, so the next file with the same header set goes through without a review. One row per
//! key (a new confirmation replaces the old); a template's delete removes its rows.

use std::collections::BTreeMap;

use sqlx::types::Json;
use sqlx::PgExecutor;

use crate::domain::review::RememberedMapping;

/// How many remembered header sets of one template a parse is given, the most recently
/// confirmed first: a bound on the parse request, far above what a template meets in practice.
pub const MAX_PER_TEMPLATE: i64 = 200;

/// Remembers `mapping` for the header set `header_key`.
pub async fn remember(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    template_name: &str,
    header_key: &str,
    mapping: &RememberedMapping,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"INSERT INTO remembered_mappings (tenant_id, template_name, header_key, mapping)
           VALUES ($1, $2, $3, $4)
           ON CONFLICT (tenant_id, template_name, header_key)
           DO UPDATE SET mapping = EXCLUDED.mapping, confirmed_at = now()"#,
        tenant_id,
        template_name,
        header_key,
        Json(mapping) as _
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The remembered mappings of a template, by header key (at most [`MAX_PER_TEMPLATE`]). A row
/// another version wrote in another shape is skipped with a warning, not fatal: it is a hint
/// that saves a review, and failing every upload of the template over it would cost more.
pub async fn of_template(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    template_name: &str,
) -> sqlx::Result<BTreeMap<String, RememberedMapping>> {
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
        .filter_map(
            |r| match serde_json::from_value::<RememberedMapping>(r.mapping) {
                Ok(mapping) => Some((r.header_key, mapping)),
                Err(e) => {
                    tracing::warn!(tenant_id, template_name, header_key = %r.header_key,
                        error = %e, "a remembered mapping that does not decode is skipped");
                    None
                }
            },
        )
        .collect())
}
