//! Scenarios 3, 4 and the scale-out half of 6: uploads through the real api (a release child
//! process), one streamed 1 GiB upload, and end to end with `worker run` children.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::StreamExt as _;

use crate::body::Generated;
use crate::env::{self, ApiProcess, Stack};
use crate::pg_statements;
use crate::procs::{self, CpuMeter, MB};
use crate::report::{quantile, Run};

/// A 20-row CSV.
pub fn small_csv() -> Vec<u8> {
    let mut s = String::from("id,name,amount,date\n");
    for i in 1..=20 {
        s.push_str(&format!(
            "{i},customer {i},{}.50,2024-01-{:02}\n",
            i * 10,
            i
        ));
    }
    s.into_bytes()
}

pub async fn upload_once(
    client: &reqwest::Client,
    api: &str,
    body: &[u8],
    i: usize,
) -> anyhow::Result<f64> {
    let part = reqwest::multipart::Part::bytes(body.to_vec())
        .file_name(format!("bench-{i}.csv"))
        .mime_str("text/csv")?;
    let form = reqwest::multipart::Form::new().part("file", part);
    let t0 = Instant::now();
    let resp = client
        .post(format!("{api}/api/v1/files"))
        .multipart(form)
        .send()
        .await?;
    let status = resp.status();
    let _ = resp.bytes().await?;
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    if !status.is_success() {
        bail!("upload answered {status}");
    }
    Ok(ms)
}

/// `n` uploads at `concurrency`; returns (wall seconds, latencies in ms, failures).
pub async fn upload_many(api: &ApiProcess, n: usize, concurrency: usize) -> (f64, Vec<f64>, usize) {
    let client = api.client.clone();
    let api = api.base_url.as_str();
    let body = small_csv();
    let t0 = Instant::now();
    let results: Vec<anyhow::Result<f64>> = futures::stream::iter(0..n)
        .map(|i| {
            let (client, body) = (&client, &body);
            async move { upload_once(client, api, body, i).await }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let secs = t0.elapsed().as_secs_f64();
    let failures = results.iter().filter(|r| r.is_err()).count();
    if let Some(Err(e)) = results.iter().find(|r| r.is_err()) {
        eprintln!("  upload failure (first of {failures}): {e:#}");
    }
    (secs, results.into_iter().flatten().collect(), failures)
}

/// Scenario 3: `n` uploads of a 20-row CSV at concurrency 16.
pub async fn uploads(stack: &Stack, n: usize) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let mut api = env::spawn_api(&env, 100 * 1024 * 1024).await?;
    // Warm the pool and the container.
    let _ = upload_many(&api, 16, 16).await;
    let cpu = CpuMeter::start(vec![
        ("api", vec![api.pid]),
        ("postgres", vec![stack.pg_pid]),
        ("azurite", vec![stack.azurite_pid]),
    ]);
    pg_statements::reset(&env.db).await?;
    let self0 = procs::self_secs();
    let scraped = [api.metrics_url.clone()];
    let storage0 = env::storage_requests(&scraped).await?;
    let (secs, lat, failures) = upload_many(&api, n, 16).await;
    let mut cpu = cpu.finish();
    pg_statements::write(&env.db, "upload", n as f64).await?;
    cpu.push(("bench_client", procs::self_secs() - self0));
    let storage1 = env::storage_requests(&scraped).await?;
    let mut run = Run::default();
    env::storage_per_task(&mut run, &storage0, &storage1, n as f64);
    run.put("uploads_per_s", "upl/s", lat.len() as f64 / secs);
    run.put("p50_ms", "ms", quantile(&lat, 0.50));
    run.put("p99_ms", "ms", quantile(&lat, 0.99));
    run.put("failures", "upl", failures as f64);
    env::cpu_per_1k(&mut run, &cpu, n as f64);
    run.note(format!(
        "upload: {n} uploads of a 20-row CSV (~0.5 KB) at concurrency 16 against target/release/api (RUST_LOG=info, log to a file), after 16 warm-up uploads"
    ));
    env::terminate(&mut api.child).await;
    Ok(run)
}

/// Scenario 3b: one upload of `bytes` streamed from a generator; the api's RSS growth.
pub async fn one_big(bytes: u64) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let mut api = env::spawn_api(&env, bytes + 1024 * 1024).await?;
    // One small upload first, so lazily built state (pool, clients) is in the baseline.
    let (_, _, failures) = upload_many(&api, 4, 2).await;
    if failures > 0 {
        bail!("warm-up uploads failed");
    }
    let (rss0, _) = procs::rss(api.pid).context("api rss")?;
    let sampler = procs::PeakSampler::start(api.pid);

    let file = Generated::new(bytes);
    let secs = multipart(&api, &file, "big.csv", Duration::from_secs(900)).await;
    let peaks = sampler.finish();
    let (_, hwm) = procs::rss(api.pid).context("api rss")?;
    env::terminate(&mut api.child).await;
    let (secs, total) = (secs?, file.total);
    let peak = hwm.max(peaks.of(api.pid));
    let mut run = Run::default();
    run.put("size_mib", "MiB", total as f64 / MB);
    run.put("mib_per_s", "MiB/s", total as f64 / MB / secs);
    run.put("api_rss_before_mb", "MB", rss0 as f64 / MB);
    run.put("api_peak_rss_mb", "MB", peak as f64 / MB);
    run.put(
        "api_rss_growth_mb",
        "MB",
        (peak.saturating_sub(rss0)) as f64 / MB,
    );
    run.note("upload-1gib: growth = VmHWM after − VmRSS before, of the api child (MB = MiB)");
    Ok(run)
}

/// `file` as one multipart request named `name`; returns the seconds from sending it to reading
/// the answer.
pub async fn multipart(
    api: &ApiProcess,
    file: &Generated,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<f64> {
    let body = reqwest::Body::wrap_stream(file.range(0, file.total, false));
    let part = reqwest::multipart::Part::stream_with_length(body, file.total)
        .file_name(name.to_owned())
        .mime_str("text/csv")?;
    let form = reqwest::multipart::Form::new().part("file", part);
    let t0 = Instant::now();
    let resp = api
        .client
        .post(format!("{}/api/v1/files", api.base_url))
        .multipart(form)
        .timeout(timeout)
        .send()
        .await?;
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let secs = t0.elapsed().as_secs_f64();
    if !status.is_success() {
        bail!("multipart upload of {name} answered {status}: {text}");
    }
    Ok(secs)
}

/// Scenario 4 (and its scale-out form): api + `workers` × `worker run --role all`; `n` uploads
/// at concurrency 16, then a steady `rate`/s for `steady`.
pub async fn e2e(
    stack: &Stack,
    n: usize,
    workers: usize,
    steady: Option<(u32, Duration)>,
) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let api = env::spawn_api(&env, 100 * 1024 * 1024).await?;
    let mut children = Vec::new();
    let mut scraped = vec![api.metrics_url.clone()];
    for _ in 0..workers {
        let (child, metrics_url) = env::spawn_worker_scraped(&env, "all", false, &[])?;
        children.push(child);
        scraped.push(metrics_url);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let result = e2e_inner(stack, &env, &api, n, steady, &mut children, &scraped).await;
    let mut api = api;
    env::terminate(&mut api.child).await;
    for c in &mut children {
        env::terminate(c).await;
    }
    result
}

async fn e2e_inner(
    stack: &Stack,
    env: &harness::worker::WorkerEnv,
    api: &ApiProcess,
    n: usize,
    steady: Option<(u32, Duration)>,
    children: &mut [tokio::process::Child],
    scraped: &[String],
) -> anyhow::Result<Run> {
    let worker_pids: Vec<u32> = children.iter().filter_map(|c| c.id()).collect();
    let storage0 = env::storage_requests(scraped).await?;
    pg_statements::reset(&env.db).await?;
    let cpu = CpuMeter::start(vec![
        ("api", vec![api.pid]),
        ("worker", worker_pids.clone()),
        ("postgres", vec![stack.pg_pid]),
        ("azurite", vec![stack.azurite_pid]),
    ]);
    let (_, _, failures) = upload_many(api, n, 16).await;
    wait_final(env, n as i64, Duration::from_secs(300)).await?;
    let cpu = cpu.finish();
    pg_statements::write(&env.db, "e2e", n as f64).await?;
    let storage1 = storage_settled(scraped, &storage0, n).await?;
    let mut run = Run::default();
    env::storage_per_task(&mut run, &storage0, &storage1, n as f64);
    let (span, p50, p99): (f64, f64, f64) = sqlx::query_as(
        "SELECT extract(epoch FROM max(finished_at) - min(created_at))::float8,
                (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)))::float8 * 1000,
                (percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)))::float8 * 1000
         FROM tasks",
    )
    .fetch_one(&env.db)
    .await?;
    let completed = env::count(
        &env.db,
        "SELECT count(*) FROM tasks WHERE status = 'COMPLETED'",
    )
    .await?;
    run.put("tasks_per_s", "task/s", completed as f64 / span);
    run.put("p50_ms", "ms", p50);
    run.put("p99_ms", "ms", p99);
    run.put(
        "not_completed",
        "task",
        (n as i64 - completed) as f64 + failures as f64,
    );
    env::cpu_per_1k(&mut run, &cpu, n as f64);
    duplicates(env, &mut run).await?;
    run.note("e2e: storage_requests_per_task = the Azure Storage requests of the api and the workers (sheetrelay_storage_requests_total on their /metrics) from the first upload until every task is final and its message deleted, over the tasks; the workers' idle receives and gauge reads in that time are included");

    if let Some((rate, dur)) = steady {
        let total = (rate as f64 * dur.as_secs_f64()) as usize;
        let client = api.client.clone();
        let body = small_csv();
        let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
        let mut set = tokio::task::JoinSet::new();
        let t_start = chrono::Utc::now();
        for i in 0..total {
            tick.tick().await;
            let (client, body, url) = (client.clone(), body.clone(), api.base_url.clone());
            set.spawn(async move { upload_once(&client, &url, &body, i).await });
        }
        while let Some(r) = set.join_next().await {
            r??;
        }
        wait_final(env, (n + total) as i64, Duration::from_secs(300)).await?;
        let (p50, p99): (f64, f64) = sqlx::query_as(
            "SELECT (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)))::float8 * 1000,
                    (percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)))::float8 * 1000
             FROM tasks WHERE created_at >= $1",
        )
        .bind(t_start)
        .fetch_one(&env.db)
        .await?;
        run.put("steady_p50_ms", "ms", p50);
        run.put("steady_p99_ms", "ms", p99);
        run.note(format!(
            "e2e: steady phase = {total} uploads at {rate}/s through the api, latency = tasks.finished_at − created_at"
        ));
    }
    Ok(run)
}

/// The storage requests once the consumers have deleted the messages of `n` tasks (they delete
/// a message after its task's commit, so a task can be final before its Delete Message).
async fn storage_settled(
    scraped: &[String],
    before: &std::collections::BTreeMap<String, f64>,
    n: usize,
) -> anyhow::Result<std::collections::BTreeMap<String, f64>> {
    const DELETE: &str = "queue.delete_message";
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = env::storage_requests(scraped).await?;
        let deleted =
            now.get(DELETE).copied().unwrap_or(0.0) - before.get(DELETE).copied().unwrap_or(0.0);
        if deleted >= n as f64 || Instant::now() > deadline {
            return Ok(now);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `n` tasks are final.
pub async fn wait_final(
    env: &harness::worker::WorkerEnv,
    n: i64,
    within: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let done = env::count(
            &env.db,
            "SELECT count(*) FROM tasks WHERE status IN ('COMPLETED', 'FAILED')",
        )
        .await?;
        if done >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {done} of {n} tasks finished within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Proof that nothing ran twice: every task started exactly once, every file has exactly its 20
/// rows, and no outbox message was sent twice.
async fn duplicates(env: &harness::worker::WorkerEnv, run: &mut Run) -> anyhow::Result<()> {
    let twice = env::count(&env.db, "SELECT count(*) FROM tasks WHERE attempts <> 1").await?;
    let wrong_rows = env::count(
        &env.db,
        "SELECT count(*) FROM tasks t
         WHERE (SELECT coalesce(sum(row_count), 0) FROM parsed_row_chunks r
                WHERE r.source_file_id = t.source_file_id) <> 20",
    )
    .await?;
    let resent = env::count(
        &env.db,
        "SELECT count(*) FROM outbox_messages WHERE attempts <> 1",
    )
    .await?;
    run.put("duplicates", "task", (twice + wrong_rows + resent) as f64);
    Ok(())
}
