//! `corrections`: fixing cells in place on a 1M-row file. The file is the `templates` scenario's
//! CSV in which every row's `quantity` is over its maximum, checked against that scenario's 12-field
//! template (a unique `id`: its key index holds one fingerprint per row) with
//! `drop_invalid_rows`, so the report keeps the worker's cap of rows (10,000) with their cells.
//! Through the api (a child process): `singles` PATCHes of one correction each, one after the
//! other (each a revision that re-checks its row against the whole file: p50 and p99 of the
//! answer, target p99 ≤ 200 ms), then one PATCH of 10,000 corrections; the storage each kind of
//! revision adds (its rows in `corrected_rows`, `file_revisions`, `file_corrections`), and what
//! the key index takes for the file. Every answer is checked: its revision, and the rows it made
//! valid.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::json;

use crate::env::{self, Stack};
use crate::gen;
use crate::report::Run;

/// The corrections of one request: row `row` of the file (its 1-based row number) gets a
/// quantity within the field's range.
fn corrections(rows: impl Iterator<Item = u64>) -> serde_json::Value {
    let items: Vec<serde_json::Value> = rows
        .map(|row| json!({"sheet": 0, "row": row, "field": "qty", "value": (row % 1000).to_string()}))
        .collect();
    json!({ "corrections": items })
}

/// Bytes of the tables a revision writes to.
async fn revision_bytes(db: &sqlx::PgPool) -> anyhow::Result<i64> {
    env::count(
        db,
        "SELECT (pg_total_relation_size('corrected_rows') + pg_total_relation_size('file_revisions')
                 + pg_total_relation_size('file_corrections'))::bigint",
    )
    .await
}

/// Waits until the task is final or in `status`; whether it is in `status`.
async fn wait_for(db: &sqlx::PgPool, task_id: uuid::Uuid, status: &str) -> anyhow::Result<bool> {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let now: String = sqlx::query_scalar("SELECT status::text FROM tasks WHERE id = $1")
            .bind(task_id)
            .fetch_one(db)
            .await?;
        if now == status {
            return Ok(true);
        }
        if now == "COMPLETED" || now == "FAILED" || Instant::now() > deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Answers a review with its suggested mapping.
async fn confirm_review(api: &env::ApiProcess, task_id: uuid::Uuid) -> anyhow::Result<()> {
    let task: serde_json::Value = api
        .client
        .get(format!("{}/api/v1/tasks/{task_id}", api.base_url))
        .send()
        .await?
        .json()
        .await?;
    let mut mapping = serde_json::Map::new();
    for m in task["review"]["suggested_mapping"]
        .as_array()
        .context("a review")?
    {
        let field = m["field"].as_str().context("field")?;
        mapping.insert(field.to_owned(), m["column_index"].clone());
    }
    let answer = api
        .client
        .put(format!("{}/api/v1/tasks/{task_id}/mapping", api.base_url))
        .json(&json!({ "mapping": mapping }))
        .send()
        .await?;
    if !answer.status().is_success() {
        bail!(
            "the review's answer: HTTP {} {}",
            answer.status(),
            answer.text().await?
        );
    }
    Ok(())
}

pub async fn run(_stack: &Stack, rows: u64, singles: u64) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let csv = gen::csv_bad_quantities(rows)?;
    let env = env::fresh_env().await;
    let (blob_name, size) = env::upload_file(&env, &csv, "csv").await?;
    let mut tx = env.db.begin().await?;
    let schema = crate::templates::schema();
    let version = env::insert_template(&mut tx, "bench", &schema, "drop_invalid_rows", &[]).await?;
    let template = shared::db::source_files::TemplateRef {
        name: "bench",
        version,
        on_invalid: "drop_invalid_rows",
    };
    let (_, task_id) = env::insert_upload(
        &mut tx,
        Some(&blob_name),
        "csv",
        size as i64,
        Some(template),
    )
    .await?;
    tx.commit().await?;
    let api = env::spawn_api(&env, 1 << 30).await?;
    let mut worker = env::spawn_worker(&env, "all", false, &[])?;
    // A mapping the matcher is unsure of waits for a person: the bench confirms it.
    if wait_for(&env.db, task_id, "NEEDS_REVIEW").await? {
        confirm_review(&api, task_id).await?;
    }
    let settled = env::await_task(&env.db, task_id, Duration::from_secs(900)).await?;
    env::terminate(&mut worker).await;
    if settled.status != "COMPLETED" {
        bail!("the file ended {}", settled.status);
    }
    run.put("parse_and_store_s", "s", settled.secs);
    let file_id: uuid::Uuid = sqlx::query_scalar("SELECT source_file_id FROM tasks WHERE id = $1")
        .bind(task_id)
        .fetch_one(&env.db)
        .await?;
    let key_index = env::count(
        &env.db,
        "SELECT coalesce(sum(octet_length(entries)), 0)::bigint FROM file_keys",
    )
    .await?;
    run.put("key_index_mb", "MB", key_index as f64 / 1e6);
    run.put(
        "key_index_on_disk_mb",
        "MB",
        env::count(
            &env.db,
            "SELECT pg_total_relation_size('file_keys')::bigint",
        )
        .await? as f64
            / 1e6,
    );

    let url = format!("{}/api/v1/files/{file_id}/corrections", api.base_url);
    let before = revision_bytes(&env.db).await?;
    let mut took = Vec::new();
    for k in 0..singles {
        let body = corrections(std::iter::once(k + 2));
        let started = Instant::now();
        let answer = api.client.patch(&url).json(&body).send().await?;
        took.push(started.elapsed().as_secs_f64() * 1e3);
        let status = answer.status();
        let answer: serde_json::Value = answer.json().await.context("a correction's answer")?;
        if !status.is_success()
            || answer["revision"] != json!(k + 1)
            || answer["errors"] != json!([])
        {
            bail!("correction {k}: HTTP {status} {answer}");
        }
    }
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took[((took.len() as f64 * q).ceil() as usize).clamp(1, took.len()) - 1];
    run.put("one_correction.p50_ms", "ms", at(0.50));
    run.put("one_correction.p99_ms", "ms", at(0.99));
    let after_singles = revision_bytes(&env.db).await?;
    run.put(
        "one_correction.bytes_per_revision",
        "B",
        (after_singles - before) as f64 / singles.max(1) as f64,
    );

    let body = corrections(2..10_002);
    let started = Instant::now();
    let answer = api.client.patch(&url).json(&body).send().await?;
    let secs = started.elapsed().as_secs_f64();
    let status = answer.status();
    let answer: serde_json::Value = answer.json().await.context("the big answer")?;
    if !status.is_success() || answer["applied"] != json!(10_000) {
        bail!("10,000 corrections: HTTP {status} {answer}");
    }
    run.put("ten_thousand.request_s", "s", secs);
    run.put(
        "ten_thousand.bytes_per_revision",
        "B",
        (revision_bytes(&env.db).await? - after_singles) as f64,
    );
    let valid = answer["validation"]["rows_valid"]
        .as_u64()
        .unwrap_or_default();
    if valid != 10_000 {
        bail!("10,000 corrections left {valid} rows valid");
    }
    run.note(format!(
        "corrections: a {rows}-row CSV whose every row misses a pattern (the templates scenario's template, a unique id: {rows} fingerprints in the key index), drop_invalid_rows, the report's 10,000 kept rows; {singles} PATCHes of one correction each in turn (p50/p99 of the answer), then one of 10,000; bytes_per_revision = growth of corrected_rows + file_revisions + file_corrections"
    ));
    Ok(run)
}
