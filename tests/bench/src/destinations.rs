//! The destinations scenario: the export scenario's sheet (the parse scenario's 12-column CSV,
//! parsed by a `worker run` child) delivered by a release `worker run --role webhooks` to an
//! Azurite container as Parquet, twice (a redelivery must write the same bytes), and to a local
//! receiver as row webhooks at chunk 1000. Rows/s is rows over the time from queueing the
//! delivery (`redeliver`, one commit) to the row reading `DELIVERED`; the worker's resident
//! memory (`VmRSS`) is sampled every 10 ms through the blob deliveries, to show it stays flat.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use base64::Engine as _;
use futures::StreamExt as _;
use harness::receiver::Receiver;
use harness::worker::WorkerEnv;
use shared::db::{self, destination_deliveries::Redelivery, destinations::NewDestination};
use shared::storage::{BlobStore, ConnectionString, StorageConfig};
use shared::webhooks::{SealingKey, SigningSecret};
use uuid::Uuid;

use crate::env;
use crate::procs::{self, RssSampler, MB};
use crate::report::Run;

const KEY: [u8; 32] = [9; 32];
pub const CHUNK: i32 = 1000;
/// Times the receiver process is killed during the last delivery.
const KILLS: usize = 50;

pub async fn run(rows: u64) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let file = crate::gen::csv(rows, false)?;
    let file_id = crate::export::parsed(&env, &file, rows).await?;
    let tenant: String = sqlx::query_scalar("SELECT tenant_id FROM source_files WHERE id = $1")
        .bind(file_id)
        .fetch_one(&env.db)
        .await?;
    let key = SealingKey::from_bytes(&KEY).map_err(anyhow::Error::msg)?;
    let (store, blob_dest) = container_destination(&env, &tenant, &key).await?;
    let receiver = Receiver::start().await;
    let rows_dest = row_destination(&env, &tenant, &key, &receiver.url()).await?;
    let mut killed_receiver =
        crate::destination_kills::KilledReceiver::start(&env::out_dir().join("logs")).await?;
    let killed_dest = row_destination(&env, &tenant, &key, &killed_receiver.url()).await?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(KEY);
    let settings = [
        ("WEBHOOK_SECRET_KEY", b64.as_str()),
        ("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true"),
        // Only the receiver-kills part fails deliveries: tried again soon.
        (
            "WEBHOOK_RETRY_SCHEDULE",
            crate::destination_kills::RETRY_SCHEDULE,
        ),
    ];
    let mut worker = env::spawn_worker(&env, "webhooks", false, &settings)?;
    let pid = worker.id().context("worker pid")?;
    crate::events::wait_for_listener(&env, "destination_deliveries").await?;
    let result = measure(
        &env,
        (&tenant, file_id, rows),
        pid,
        (blob_dest, &store),
        rows_dest,
    )
    .await;
    let requests = receiver.received().len();
    let killed = match &result {
        Ok(_) => Some(
            crate::destination_kills::measure(
                &env,
                (&tenant, file_id, rows),
                killed_dest,
                &mut killed_receiver,
                KILLS,
            )
            .await,
        ),
        Err(_) => None,
    };
    env::terminate(&mut worker).await;
    let mut run = result?;
    ensure!(
        requests as u64 == rows.div_ceil(CHUNK as u64),
        "{requests} row requests for {rows} rows"
    );
    if let Some(killed) = killed {
        run.extend("", killed?);
    }
    run.note(format!(
        "destinations: the export scenario's {rows}-row, 12-column sheet delivered by target/release/worker --role webhooks (DESTINATION_* defaults) to an Azurite container as Parquet, twice (the second a redelivery: same sha256 required), then to a local receiver as webhook_rows at chunk {CHUNK}, then to a receiver process of its own (`bench __receive`) killed with SIGKILL {KILLS} times during the delivery, each time started again on its port 300 ms later ( WEBHOOK_RETRY_SCHEDULE={}; every chunk required, in order, repeats with the same webhook-id and body); rows/s = rows / (redeliver committed → DELIVERED read, polled every 20 ms), the first delivery and the redelivery apart; worker RSS = VmRSS sampled every 10 ms through both blob deliveries",
        crate::destination_kills::RETRY_SCHEDULE
    ));
    Ok(run)
}

/// An `azure_blob` destination on a fresh container of the bench's Azurite.
async fn container_destination(
    env: &WorkerEnv,
    tenant: &str,
    key: &SealingKey,
) -> anyhow::Result<(BlobStore, Uuid)> {
    let cs = env
        .storage
        .connection_string
        .clone()
        .context("a connection string")?;
    let endpoint = ConnectionString::parse(&cs)?.blob_endpoint;
    let name = format!("lake-{}", Uuid::new_v4().simple());
    let store = BlobStore::new(&StorageConfig::from_connection_string(
        cs.clone(),
        name.clone(),
        "",
    ))?;
    store.ensure_container().await?;
    let id = Uuid::now_v7();
    let url = format!("{}/{name}", endpoint.as_str().trim_end_matches('/'));
    let sealed = key.seal_bytes(id, cs.as_bytes());
    insert(
        env,
        tenant,
        id,
        ("azure_blob", &url),
        (Some("parquet"), None),
        Some(&sealed),
    )
    .await?;
    Ok((store, id))
}

async fn row_destination(
    env: &WorkerEnv,
    tenant: &str,
    key: &SealingKey,
    url: &str,
) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    let sealed = key.seal(id, &SigningSecret::generate());
    insert(
        env,
        tenant,
        id,
        ("webhook_rows", url),
        (None, Some(CHUNK)),
        Some(&sealed),
    )
    .await?;
    Ok(id)
}

/// Inserts a destination as the api would. The file is parsed already, so nothing is queued
/// for it until [`deliver`] asks.
async fn insert(
    env: &WorkerEnv,
    tenant: &str,
    id: Uuid,
    (kind, url): (&str, &str),
    (format, chunk_size): (Option<&str>, Option<i32>),
    sealed: Option<&[u8]>,
) -> anyhow::Result<()> {
    let new = NewDestination {
        id,
        tenant_id: tenant,
        kind,
        url,
        prefix: "",
        format,
        chunk_size,
        credential_kind: format.map(|_| "connection_string"),
        sealed_secret: sealed,
        templates: None,
        description: None,
    };
    db::destinations::insert(&env.db, &new, 100)
        .await?
        .context("the destination")?;
    Ok(())
}

/// Queues the file to `dest` and waits for it to be delivered: the seconds it took.
async fn deliver(env: &WorkerEnv, tenant: &str, dest: Uuid, file: Uuid) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    let queued = db::destination_deliveries::redeliver(&env.db, tenant, dest, file).await?;
    ensure!(queued == Redelivery::Queued, "{queued:?}");
    let deadline = t0 + Duration::from_secs(900);
    loop {
        let (status, error): (String, Option<String>) = sqlx::query_as(
            "SELECT status::text, last_error FROM destination_deliveries
             WHERE destination_id = $1 AND source_file_id = $2",
        )
        .bind(dest)
        .bind(file)
        .fetch_one(&env.db)
        .await?;
        match status.as_str() {
            "DELIVERED" => return Ok(t0.elapsed().as_secs_f64()),
            "FAILED" | "DEAD" => bail!("the delivery failed: {error:?}"),
            _ if Instant::now() > deadline => bail!("not delivered in 15 minutes"),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

async fn manifest_sha(store: &BlobStore, file: Uuid) -> anyhow::Result<(String, u64)> {
    let mut out = Vec::new();
    store
        .download_to(&format!("untemplated/{file}/manifest.json"), &mut out)
        .await?;
    let manifest: serde_json::Value = serde_json::from_slice(&out)?;
    let sheet = &manifest["sheets"][0];
    Ok((
        sheet["sha256"].as_str().unwrap_or_default().to_owned(),
        sheet["bytes"].as_u64().unwrap_or_default(),
    ))
}

async fn measure(
    env: &WorkerEnv,
    (tenant, file, rows): (&str, Uuid, u64),
    pid: u32,
    (blob_dest, store): (Uuid, &BlobStore),
    rows_dest: Uuid,
) -> anyhow::Result<Run> {
    let (rss_before, _) = procs::rss(pid).context("worker rss")?;
    let sampler = RssSampler::start(pid);
    let first = deliver(env, tenant, blob_dest, file).await?;
    let (sha, bytes) = manifest_sha(store, file).await?;
    let second = deliver(env, tenant, blob_dest, file).await?;
    let trace = sampler.finish();
    ensure!(
        manifest_sha(store, file).await?.0 == sha,
        "a redelivery wrote other bytes"
    );
    let webhook = deliver(env, tenant, rows_dest, file).await?;
    let mut run = Run::default();
    run.put(
        "parquet_to_azurite_rows_per_s",
        "rows/s",
        rows as f64 / first,
    );
    run.put(
        "parquet_redelivery_rows_per_s",
        "rows/s",
        rows as f64 / second,
    );
    run.put(
        "parquet_to_azurite_mib_per_s",
        "MiB/s",
        bytes as f64 / MB / first,
    );
    run.put("parquet_size_mib", "MiB", bytes as f64 / MB);
    run.put("webhook_rows_per_s", "rows/s", rows as f64 / webhook);
    let peak = trace.iter().map(|(_, b)| *b).max().unwrap_or(rss_before);
    run.put("worker_rss_before_mb", "MB", rss_before as f64 / MB);
    run.put("worker_rss_max_mb", "MB", peak as f64 / MB);
    Ok(run)
}

/// The destinations-lag scenario: `files` small CSV uploads recorded at `per_second` (as the
/// api records them, each in its own statement), parsed by a `worker run` with every role and
/// each delivered to an `azure_blob` destination on the bench's Azurite as Parquet with its
/// manifest. For each file: from its task `COMPLETED` to its delivery `DELIVERED` (the manifest
/// written last, so delivered means the manifest is there), both stamped by Postgres.
pub async fn lag(files: usize, per_second: u32) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let key = SealingKey::from_bytes(&KEY).map_err(anyhow::Error::msg)?;
    let (store, dest) = container_destination(&env, env::TENANT, &key).await?;
    // A file's blob is its own (`source_files.blob_name` is unique): written before the clock
    // starts.
    let csv =
        bytes::Bytes::from_static(b"id,name,amount\n1,Ada,10.5\n2,Grace,20\n3,Edsger,30.25\n");
    let blobs: Vec<String> = (0..files)
        .map(|_| format!("{}/bench.csv", Uuid::now_v7()))
        .collect();
    let uploads = &env.blobs;
    let written = futures::stream::iter(&blobs)
        .map(|blob| {
            let body = futures::stream::iter([Ok::<_, std::convert::Infallible>(csv.clone())]);
            async move { uploads.upload(blob, "text/csv", body).await }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    for w in written {
        w.map_err(|e| anyhow::anyhow!("blob upload: {e}"))?;
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(KEY);
    let settings = [
        ("WEBHOOK_SECRET_KEY", b64.as_str()),
        ("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true"),
    ];
    let mut worker = env::spawn_worker(&env, "all", false, &settings)?;
    crate::events::wait_for_listener(&env, "destination_deliveries").await?;
    let measured = record_and_wait(&env, &blobs, per_second).await;
    env::terminate(&mut worker).await;
    measured?;
    let lags: Vec<f64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM d.delivered_at - t.finished_at)::float8 * 1000
         FROM destination_deliveries d JOIN tasks t ON t.id = d.task_id
         WHERE d.destination_id = $1",
    )
    .bind(dest)
    .fetch_all(&env.db)
    .await?;
    ensure!(
        lags.len() == files,
        "{} deliveries for {files} files",
        lags.len()
    );
    let manifests = store
        .list_names()
        .await?
        .iter()
        .filter(|n| n.ends_with("/manifest.json"))
        .count();
    ensure!(
        manifests == files,
        "{manifests} manifests for {files} files"
    );
    let mut run = Run::default();
    run.put(
        "completion_to_manifest_p50_ms",
        "ms",
        crate::report::quantile(&lags, 0.5),
    );
    run.put(
        "completion_to_manifest_p99_ms",
        "ms",
        crate::report::quantile(&lags, 0.99),
    );
    run.put(
        "completion_to_manifest_max_ms",
        "ms",
        crate::report::quantile(&lags, 1.0),
    );
    run.note(format!(
        "destinations-lag: {files} uploads of a 3-row CSV recorded at {per_second}/s (one statement each, as the api does), parsed by target/release/worker --role all (defaults) and each delivered to an azure_blob destination on the bench's Azurite as Parquet + manifest; lag = delivered_at − the task's finished_at, both Postgres's clock; {manifests} manifests counted in the container"
    ));
    Ok(run)
}

/// Records an upload of each of `blobs` at `per_second`, then waits for every delivery.
async fn record_and_wait(env: &WorkerEnv, blobs: &[String], per_second: u32) -> anyhow::Result<()> {
    let files = blobs.len();
    let mut tick = tokio::time::interval(Duration::from_secs(1) / per_second);
    for blob in blobs {
        tick.tick().await;
        let mut conn = env.db.acquire().await?;
        env::insert_upload(&mut conn, Some(blob), "csv", 60, None).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let delivered = env::count(
            &env.db,
            "SELECT count(*) FROM destination_deliveries WHERE status = 'DELIVERED'",
        )
        .await?;
        if delivered as usize >= files {
            return Ok(());
        }
        let failed = env::count(
            &env.db,
            "SELECT count(*) FROM tasks WHERE status = 'FAILED'",
        )
        .await?;
        ensure!(failed == 0, "{failed} tasks failed");
        ensure!(
            Instant::now() < deadline,
            "{delivered} of {files} delivered in 15 minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
