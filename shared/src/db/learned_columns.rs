//! `learned_columns`: the (header text → field) pairs people confirmed, per tenant and template
//! name (contract v1.3). A later file whose header holds a learned text maps that column to its
//! field with `"match": "learned"`, whatever its other columns, so a file with one column more
//! or less than a confirmed one does not wait for a review again. Bounded per template
//! ([`MAX_PER_TEMPLATE`], the least recently confirmed pruned first); a template's delete and
//! the tenant purge remove its rows. Pairs never cross tenants or templates: both are the key.

use std::collections::BTreeMap;

use sqlx::PgConnection;

/// The most pairs a template keeps, and a parse is given: the migration's
/// `learned_columns_max()`.
pub const MAX_PER_TEMPLATE: i64 = 500;

/// Longer header texts are not learned (a note in a header cell is no name to learn).
pub const MAX_TEXT_CHARS: usize = 1024;

/// What a confirmed mapping of a file with the columns `header` teaches: each of its
/// (header text, field) pairs, sorted by text. A text that is blank, too long, or heads two
/// columns given to different fields teaches nothing.
pub fn pairs(header: &[&str], mapping: &BTreeMap<String, Option<usize>>) -> Vec<(String, String)> {
    let mut by_text: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    for (field, column) in mapping {
        let Some(text) = column.and_then(|c| header.get(c)).copied() else {
            continue;
        };
        if text.trim().is_empty() || text.chars().count() > MAX_TEXT_CHARS {
            continue;
        }
        by_text
            .entry(text)
            .and_modify(|f| {
                if *f != Some(field.as_str()) {
                    *f = None;
                }
            })
            .or_insert(Some(field.as_str()));
    }
    by_text
        .into_iter()
        .filter_map(|(text, field)| field.map(|f| (text.to_owned(), f.to_owned())))
        .collect()
}

/// Teaches the template what a person just confirmed for a file with the columns `header`:
/// every text of the header forgets what it was learned as (the person has said what each
/// column is, or that it is none), then `pairs` (from [`pairs`]) are learned, and the
/// template's least recently confirmed pairs past [`MAX_PER_TEMPLATE`] are pruned. In the
/// caller's transaction: the one that records the confirmation.
pub async fn learn(
    db: &mut PgConnection,
    tenant_id: &str,
    template_name: &str,
    header: &[&str],
    pairs: &[(String, String)],
) -> sqlx::Result<()> {
    let mut texts: Vec<String> = header.iter().map(|t| (*t).to_owned()).collect();
    texts.sort();
    texts.dedup();
    sqlx::query!(
        "DELETE FROM learned_columns
         WHERE tenant_id = $1 AND template_name = $2 AND header_text = ANY($3::text[])",
        tenant_id,
        template_name,
        &texts
    )
    .execute(&mut *db)
    .await?;
    let (learned_texts, fields): (Vec<String>, Vec<String>) = pairs.iter().cloned().unzip();
    sqlx::query!(
        "INSERT INTO learned_columns (tenant_id, template_name, header_text, field)
         SELECT $1, $2, t, f FROM UNNEST($3::text[], $4::text[]) AS p(t, f)
         ON CONFLICT (tenant_id, template_name, header_text)
         DO UPDATE SET field = EXCLUDED.field, learned_at = now()",
        tenant_id,
        template_name,
        &learned_texts,
        &fields
    )
    .execute(&mut *db)
    .await?;
    sqlx::query!(
        "DELETE FROM learned_columns WHERE (tenant_id, template_name, header_text) IN (
             SELECT tenant_id, template_name, header_text FROM learned_columns
             WHERE tenant_id = $1 AND template_name = $2
             ORDER BY learned_at DESC, header_text OFFSET $3)",
        tenant_id,
        template_name,
        MAX_PER_TEMPLATE
    )
    .execute(&mut *db)
    .await?;
    Ok(())
}

/// The pairs learned for a template, (header text, field), the most recent first (at most
/// [`MAX_PER_TEMPLATE`]).
pub async fn of_template(
    db: impl sqlx::PgExecutor<'_>,
    tenant_id: &str,
    template_name: &str,
) -> sqlx::Result<Vec<(String, String)>> {
    let rows = sqlx::query!(
        "SELECT header_text, field FROM learned_columns
         WHERE tenant_id = $1 AND template_name = $2
         ORDER BY learned_at DESC, header_text LIMIT $3",
        tenant_id,
        template_name,
        MAX_PER_TEMPLATE
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.header_text, r.field)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confirmed_mapping_teaches_its_named_columns_once_each() {
        let header = ["Ref", "Sum", "  ", "Dup", "Dup", "Note"];
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        let mut with_long: Vec<&str> = header.to_vec();
        with_long.push(&long);
        let mapping = BTreeMap::from([
            ("invoice".to_owned(), Some(0)),
            ("amount".to_owned(), Some(1)),
            ("blank".to_owned(), Some(2)),
            ("first".to_owned(), Some(3)),
            ("second".to_owned(), Some(4)),
            ("note".to_owned(), None),
            ("huge".to_owned(), Some(6)),
            ("past".to_owned(), Some(60)),
        ]);
        assert_eq!(
            pairs(&with_long, &mapping),
            [
                ("Ref".to_owned(), "invoice".to_owned()),
                ("Sum".to_owned(), "amount".to_owned())
            ]
        );
    }
}
