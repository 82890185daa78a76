//! `learned_values`: the texts people mapped to an `enum` or `boolean` field's values while
//! answering a review, per tenant and template name (contract v1.3). Every later parse with the
//! template applies them after the field's own transforms, so next month's file with `Y` or
//! `Calif.` goes through without a review. Bounded per template ([`MAX_PER_TEMPLATE`], the
//! least recently confirmed pruned first); a template's delete and the tenant purge remove its
//! rows. Values never cross tenants or templates: both are the key.

use std::collections::BTreeMap;

use sqlx::PgConnection;

/// The most values a template keeps, and a parse is given: the migration's
/// `learned_values_max()`.
pub const MAX_PER_TEMPLATE: i64 = 10_000;

/// The longest text a person may map (a review shows texts cut to this many characters).
pub const MAX_TEXT_CHARS: usize = 200;

/// field name → (text → allowed value).
pub type ValueMaps = BTreeMap<String, BTreeMap<String, String>>;

/// Teaches the template `maps`, a review's answer: each (field, text) pair takes its new
/// value, then the template's least recently confirmed values past [`MAX_PER_TEMPLATE`] are
/// pruned. In the caller's transaction: the one that records the confirmation.
pub async fn learn(
    db: &mut PgConnection,
    tenant_id: &str,
    template_name: &str,
    maps: &ValueMaps,
) -> sqlx::Result<()> {
    let (mut fields, mut texts, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for (field, map) in maps {
        for (text, value) in map {
            fields.push(field.clone());
            texts.push(text.clone());
            values.push(value.clone());
        }
    }
    if fields.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO learned_values (tenant_id, template_name, field, text, value)
         SELECT $1, $2, f, t, v FROM UNNEST($3::text[], $4::text[], $5::text[]) AS p(f, t, v)
         ON CONFLICT (tenant_id, template_name, field, text)
         DO UPDATE SET value = EXCLUDED.value, learned_at = now()",
        tenant_id,
        template_name,
        &fields,
        &texts,
        &values
    )
    .execute(&mut *db)
    .await?;
    sqlx::query!(
        "DELETE FROM learned_values WHERE (tenant_id, template_name, field, text) IN (
             SELECT tenant_id, template_name, field, text FROM learned_values
             WHERE tenant_id = $1 AND template_name = $2
             ORDER BY learned_at DESC, field, text OFFSET $3)",
        tenant_id,
        template_name,
        MAX_PER_TEMPLATE
    )
    .execute(&mut *db)
    .await?;
    Ok(())
}

/// The values learned for a template (at most [`MAX_PER_TEMPLATE`], the most recent).
pub async fn of_template(
    db: impl sqlx::PgExecutor<'_>,
    tenant_id: &str,
    template_name: &str,
) -> sqlx::Result<ValueMaps> {
    let rows = sqlx::query!(
        "SELECT field, text, value FROM learned_values
         WHERE tenant_id = $1 AND template_name = $2
         ORDER BY learned_at DESC, field, text LIMIT $3",
        tenant_id,
        template_name,
        MAX_PER_TEMPLATE
    )
    .fetch_all(db)
    .await?;
    let mut maps = ValueMaps::new();
    for r in rows {
        maps.entry(r.field).or_default().insert(r.text, r.value);
    }
    Ok(maps)
}
