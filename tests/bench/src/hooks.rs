//! `hooks`: rows per second through a template's validation hook (contract v1.3), target
//! ≥ 200k rows/s. The `templates` scenario's CSV and 12-field template, once with a hook at
//! batch 1,000 whose receiver (in this process, on loopback) answers each batch after 5 ms with
//! no error, and once without it, side by side: the parse, the hook's batches and the store, from
//! the task's start to `COMPLETED`. Every row must come out valid and every batch must have been
//! asked exactly once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use shared::db;
use shared::domain::hook::Hook;
use shared::webhooks::{SealingKey, SigningSecret};

use crate::env::{self, Stack};
use crate::gen;
use crate::report::Run;

/// How long the receiver takes over each batch.
const ANSWER_AFTER: Duration = Duration::from_millis(5);
const BATCH: u32 = 1000;

/// A receiver that answers every batch with no error after [`ANSWER_AFTER`]; its URL and the
/// count of requests it answered.
async fn receiver() -> anyhow::Result<(String, Arc<AtomicU64>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/validate", listener.local_addr()?);
    let asked = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&asked);
    let app = axum::Router::new().fallback(move || {
        let counter = Arc::clone(&counter);
        async move {
            tokio::time::sleep(ANSWER_AFTER).await;
            counter.fetch_add(1, Ordering::Relaxed);
            axum::Json(serde_json::json!({"errors": []}))
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, asked))
}

/// Parses the file once against `template` (its hooks or none): seconds from the task's start to
/// `COMPLETED`.
async fn parse_once(
    env: &harness::worker::WorkerEnv,
    csv: &std::path::Path,
    name: &str,
    hooks: &[Hook],
    worker_env: &[(&str, &str)],
) -> anyhow::Result<(f64, u64)> {
    let (blob, size) = env::upload_file(env, csv, "csv").await?;
    let mut tx = env.db.begin().await?;
    let schema = crate::templates::schema();
    let version = env::insert_template(&mut tx, name, &schema, "drop_invalid_rows", hooks).await?;
    let template = db::source_files::TemplateRef {
        name,
        version,
        on_invalid: "drop_invalid_rows",
    };
    let (_, task_id) =
        env::insert_upload(&mut tx, Some(&blob), "csv", size as i64, Some(template)).await?;
    tx.commit().await?;
    let mut worker = env::spawn_worker(env, "all", false, worker_env)?;
    let settled = env::await_task(&env.db, task_id, Duration::from_secs(1800)).await?;
    env::terminate(&mut worker).await;
    if settled.status != "COMPLETED" {
        bail!("the file ended {}", settled.status);
    }
    let valid: Option<i64> = sqlx::query_scalar(
        "SELECT (result->'validation'->>'rows_valid')::bigint FROM tasks WHERE id = $1",
    )
    .bind(task_id)
    .fetch_one(&env.db)
    .await?;
    Ok((settled.secs, valid.unwrap_or_default() as u64))
}

pub async fn run(_stack: &Stack, rows: u64) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let csv = gen::csv(rows, false)?;
    let env = env::fresh_env().await;
    let (url, asked) = receiver().await?;
    let key_bytes = [7u8; 32];
    let key = SealingKey::from_bytes(&key_bytes).map_err(anyhow::Error::msg)?;
    let endpoint = uuid::Uuid::now_v7();
    let sealed = key.seal(endpoint, &SigningSecret::generate());
    db::webhooks::insert(
        &env.db,
        &db::webhooks::NewEndpoint {
            id: endpoint,
            tenant_id: env::TENANT,
            url: &url,
            events: &[],
            description: None,
            sealed_secret: &sealed,
            sealed_event_grid_key: None,
        },
        10,
    )
    .await?
    .context("the hook's endpoint")?;
    let hook = Hook {
        webhook: endpoint,
        fields: None,
        batch_size: Some(BATCH),
        timeout: None,
    };
    use base64::Engine as _;
    let key_b64 = base64::engine::general_purpose::STANDARD.encode(key_bytes);
    let worker_env = [
        ("WEBHOOK_SECRET_KEY", key_b64.as_str()),
        ("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true"),
    ];

    let (plain_secs, plain_valid) = parse_once(&env, &csv, "plain", &[], &worker_env).await?;
    let (hooked_secs, hooked_valid) =
        parse_once(&env, &csv, "hooked", &[hook], &worker_env).await?;
    let batches = asked.load(Ordering::Relaxed);
    if plain_valid != rows || hooked_valid != rows || batches != rows.div_ceil(u64::from(BATCH)) {
        bail!("{rows} rows: {plain_valid} and {hooked_valid} valid, {batches} batches asked");
    }
    run.put("rows", "rows", rows as f64);
    run.put("without_hook.s", "s", plain_secs);
    run.put("with_hook.s", "s", hooked_secs);
    run.put(
        "without_hook.rows_per_s",
        "rows/s",
        rows as f64 / plain_secs,
    );
    run.put("with_hook.rows_per_s", "rows/s", rows as f64 / hooked_secs);
    println!(
        "hooks: {rows} rows at batch {BATCH}, the hook answering after {ANSWER_AFTER:?}: \
         {:.0} rows/s with the hook, {:.0} rows/s without",
        rows as f64 / hooked_secs,
        rows as f64 / plain_secs
    );
    Ok(run)
}
