//! The sources scenario: a Blob source on a container of the bench's Azurite, imported by a
//! release `worker run --role sources` child.
//! - **Drop**: `blobs` small CSV blobs written at once (32 writes in flight); imports per second
//!   from the first write to the last file recorded, and the duplicates (files and tasks beyond
//!   one per blob), which must be 0.
//! - **Latency**: blobs written one at a time at a steady pace; for each, from its write's
//!   answer to its file and `PENDING` task committed (`source_files.created_at`, the same host
//!   clock), found by listing (`SOURCE_POLL_INTERVAL` given) and by an Event Grid event put on
//!   the events queue as soon as the write answered (listing off: one pass an hour). Event
//!   Grid's own delivery time in Azure (typically under a second) is not in it.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use harness::worker::WorkerEnv;
use shared::db;
use shared::storage::{BlobStore, ConnectionString, QueueClient, StorageConfig};
use shared::webhooks::SealingKey;
use uuid::Uuid;

use crate::env;
use crate::report::{quantile, Run};

const KEY: [u8; 32] = [11; 32];
const CSV: &[u8] = b"id,name\n1,Ada\n2,Grace\n";

pub struct Sizes {
    pub blobs: usize,
    pub latency_blobs: usize,
    /// Between two blobs of the latency runs.
    pub pace: Duration,
    pub poll_interval: Duration,
}

pub async fn run(sizes: &Sizes) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let key = SealingKey::from_bytes(&KEY).map_err(anyhow::Error::msg)?;
    let (store, url, cs) = container(&env).await?;
    source(&env, &key, &url, &cs).await?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(KEY);
    let poll = format!("{}ms", sizes.poll_interval.as_millis());
    let mut run = Run::default();

    let listing = [
        ("WEBHOOK_SECRET_KEY", b64.as_str()),
        ("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true"),
        ("SOURCE_POLL_INTERVAL", poll.as_str()),
    ];
    let mut worker = env::spawn_worker(&env, "sources", false, &listing)?;
    let dropped = drop_at_once(&env, &store, sizes.blobs).await;
    let by_listing = match dropped {
        Ok(()) => latency(&env, &store, "listing", sizes, None).await,
        Err(e) => Err(e),
    };
    env::terminate(&mut worker).await;
    by_listing?;
    let (rate, seconds) = drop_result(&env, sizes.blobs).await?;
    run.put("drop_imports_per_s", "blobs/s", rate);
    run.put("drop_seconds", "s", seconds);
    run.put("drop_duplicates", "files", 0.0);
    let listed = lags(&env, "listing/").await?;
    run.put("listing_p50_s", "s", quantile(&listed, 0.5));
    run.put("listing_p95_s", "s", quantile(&listed, 0.95));

    let events = [
        ("WEBHOOK_SECRET_KEY", b64.as_str()),
        ("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true"),
        ("SOURCE_POLL_INTERVAL", "1h"),
    ];
    let queue = QueueClient::new(&env.storage, "source-events")?;
    queue.ensure_exists().await?;
    let before = passes(&env).await?;
    let mut worker = env::spawn_worker(&env, "sources", false, &events)?;
    // Its first pass over the container (at start) must end before the blobs are written, so
    // that their events, not that listing, find them.
    let deadline = Instant::now() + Duration::from_secs(600);
    while passes(&env).await? <= before {
        ensure!(
            Instant::now() < deadline,
            "the first listing pass did not end"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let by_event = latency(&env, &store, "event", sizes, Some((&queue, &url))).await;
    env::terminate(&mut worker).await;
    by_event?;
    let evented = lags(&env, "event/").await?;
    run.put("event_p50_s", "s", quantile(&evented, 0.5));
    run.put("event_p95_s", "s", quantile(&evented, 0.95));
    let found_by_event: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM source_blobs WHERE blob LIKE 'event/%' AND found_by = 'event'",
    )
    .fetch_one(&env.db)
    .await?;
    ensure!(
        found_by_event == sizes.latency_blobs as i64,
        "{found_by_event} of the event blobs were found by their event"
    );
    run.note(format!(
        "sources: target/release/worker --role sources (SOURCE_* defaults but SOURCE_POLL_INTERVAL) on a container of the bench's Azurite. Drop: {} CSV blobs of {} bytes written at once (32 in flight), imports/s = blobs / (first write → last file recorded), duplicates = files + tasks beyond one per blob (required 0). Latency: {} blobs written one every {:?}, each from its write's answer to its file and PENDING task committed; by listing with SOURCE_POLL_INTERVAL={poll}; by event with an Event Grid BlobCreated event put on the events queue as soon as the write answered and the listing off (SOURCE_POLL_INTERVAL=1h), Event Grid's own delivery time not included",
        sizes.blobs,
        CSV.len(),
        sizes.latency_blobs,
        sizes.pace
    ));
    Ok(run)
}

async fn passes(env: &WorkerEnv) -> anyhow::Result<i32> {
    Ok(sqlx::query_scalar("SELECT passes FROM sources")
        .fetch_one(&env.db)
        .await?)
}

/// A fresh container of the bench's Azurite: its client, URL and connection string.
async fn container(env: &WorkerEnv) -> anyhow::Result<(BlobStore, String, String)> {
    let cs = env
        .storage
        .connection_string
        .clone()
        .context("a connection string")?;
    let endpoint = ConnectionString::parse(&cs)?.blob_endpoint;
    let name = format!("drop-{}", Uuid::new_v4().simple());
    let store = BlobStore::new(&StorageConfig::from_connection_string(
        cs.clone(),
        name.clone(),
        "",
    ))?;
    store.ensure_container().await?;
    let url = format!("{}/{name}", endpoint.as_str().trim_end_matches('/'));
    Ok((store, url, cs))
}

/// The source, inserted as the api would.
async fn source(env: &WorkerEnv, key: &SealingKey, url: &str, cs: &str) -> anyhow::Result<()> {
    let id = Uuid::now_v7();
    let sealed = key.seal_bytes(id, cs.as_bytes());
    let mut tx = env.db.begin().await?;
    let new = db::sources::NewSource {
        id,
        tenant_id: env::TENANT,
        container_url: url,
        prefix: "",
        credential_kind: "connection_string",
        sealed_secret: Some(&sealed),
        template_name: None,
        on_invalid: None,
        metadata: None,
        description: None,
        import_existing: true,
        after_import: "keep",
        // Unique per source; the bench posts no events with a token.
        events_token_hash: id.as_bytes(),
    };
    db::sources::insert(&mut tx, &new, 100)
        .await?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    tx.commit().await?;
    Ok(())
}

async fn put(store: &BlobStore, name: &str) -> anyhow::Result<()> {
    let body = futures::stream::iter([Ok::<_, std::convert::Infallible>(
        bytes::Bytes::from_static(CSV),
    )]);
    store.upload(name, "text/csv", body).await?;
    Ok(())
}

async fn imported(env: &WorkerEnv, prefix: &str) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM source_files WHERE starts_with(origin->>'blob', $1)",
    )
    .bind(prefix)
    .fetch_one(&env.db)
    .await?)
}

async fn wait_imported(env: &WorkerEnv, prefix: &str, n: usize) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(1800);
    while imported(env, prefix).await? < n as i64 {
        ensure!(Instant::now() < deadline, "not imported in 30 minutes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Writes `n` blobs under `drop/`, 32 at a time, and waits for all of them to be imported.
async fn drop_at_once(env: &WorkerEnv, store: &BlobStore, n: usize) -> anyhow::Result<()> {
    sqlx::query("CREATE TABLE IF NOT EXISTS bench_marks (what text PRIMARY KEY, at timestamptz)")
        .execute(&env.db)
        .await?;
    sqlx::query("INSERT INTO bench_marks VALUES ('drop', clock_timestamp())")
        .execute(&env.db)
        .await?;
    let writes = futures::stream::iter(0..n)
        .map(|i| async move { put(store, &format!("drop/{i:06}.csv")).await })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    for w in writes {
        w?;
    }
    wait_imported(env, "drop/", n).await
}

/// The drop's imports per second and seconds, once every duplicate check passed.
async fn drop_result(env: &WorkerEnv, n: usize) -> anyhow::Result<(f64, f64)> {
    let (files, distinct, tasks, seconds): (i64, i64, i64, f64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT f.origin->>'blob'),
                (SELECT count(*) FROM tasks t JOIN source_files g ON g.id = t.source_file_id
                 WHERE starts_with(g.origin->>'blob', 'drop/')),
                extract(epoch FROM max(f.created_at)
                        - (SELECT at FROM bench_marks WHERE what = 'drop'))::float8
         FROM source_files f WHERE starts_with(f.origin->>'blob', 'drop/')",
    )
    .fetch_one(&env.db)
    .await?;
    ensure!(
        files == n as i64 && distinct == n as i64 && tasks == n as i64,
        "{files} files, {distinct} blobs, {tasks} tasks for {n} blobs"
    );
    Ok((n as f64 / seconds, seconds))
}

/// Writes `sizes.latency_blobs` blobs under `<label>/` one every `sizes.pace` (with their
/// event, when a queue is given), recording when each write answered, and waits for them.
async fn latency(
    env: &WorkerEnv,
    store: &BlobStore,
    label: &str,
    sizes: &Sizes,
    events: Option<(&QueueClient, &str)>,
) -> anyhow::Result<()> {
    sqlx::query("CREATE TABLE IF NOT EXISTS bench_written (blob text PRIMARY KEY, at timestamptz)")
        .execute(&env.db)
        .await?;
    let mut tick = tokio::time::interval(sizes.pace);
    for i in 0..sizes.latency_blobs {
        tick.tick().await;
        let name = format!("{label}/{i:05}.csv");
        put(store, &name).await?;
        let written: DateTime<Utc> = Utc::now();
        if let Some((queue, url)) = events {
            let etag = store
                .properties(&name)
                .await?
                .context("the blob just written")?
                .etag;
            let event = serde_json::json!({
                "eventType": "Microsoft.Storage.BlobCreated",
                "data": {"eTag": etag, "contentLength": CSV.len(), "url": format!("{url}/{name}")}
            });
            let text = base64::engine::general_purpose::STANDARD.encode(event.to_string());
            queue.send(&text).await?;
        }
        sqlx::query("INSERT INTO bench_written VALUES ($1, $2)")
            .bind(&name)
            .bind(written)
            .execute(&env.db)
            .await?;
    }
    wait_imported(env, &format!("{label}/"), sizes.latency_blobs).await
}

/// Each blob under `prefix`: seconds from its write's answer to its file committed.
async fn lags(env: &WorkerEnv, prefix: &str) -> anyhow::Result<Vec<f64>> {
    Ok(sqlx::query_scalar(
        "SELECT extract(epoch FROM f.created_at - w.at)::float8
         FROM bench_written w JOIN source_files f ON f.origin->>'blob' = w.blob
         WHERE starts_with(w.blob, $1)",
    )
    .bind(prefix)
    .fetch_all(&env.db)
    .await?)
}
