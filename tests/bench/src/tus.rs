//! Scenario `tus`: one large generated CSV (`BENCH_TUS_BYTES`, default 1 GiB) through the
//! resumable-upload endpoint with three connections cut mid-way (each `PATCH` body fails after a
//! quarter of the file more, and the client resumes from `HEAD`'s offset), checked by the
//! SHA-256 the api computed from the committed blob; the api's RSS growth over it; the worker
//! parsing and storing it, with its memory and its parse child's; then the same file through tus
//! without cuts and through one multipart request, for their throughput.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use harness::worker::WorkerEnv;
use uuid::Uuid;

use crate::body::{Generated, CHUNK};
use crate::env::{self, ApiProcess};
use crate::procs::{self, MB};
use crate::report::Run;
use crate::upload;
/// Connections cut per upload in the first measurement.
const CUTS: u64 = 3;

/// The file's size: `BENCH_TUS_BYTES`, else `default` (the file rounds it down to whole chunks).
pub fn size(default: u64) -> u64 {
    std::env::var("BENCH_TUS_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const TUS: (&str, &str) = ("Tus-Resumable", "1.0.0");

async fn create(api: &ApiProcess, total: u64) -> anyhow::Result<String> {
    let resp = api
        .client
        .post(format!("{}/api/v1/uploads", api.base_url))
        .header(TUS.0, TUS.1)
        .header("Upload-Length", total)
        .header("Upload-Metadata", "filename YmVuY2guY3N2") // bench.csv
        .send()
        .await?;
    if resp.status() != reqwest::StatusCode::CREATED {
        bail!("tus create answered {}", resp.status());
    }
    let location = resp
        .headers()
        .get("location")
        .context("Location")?
        .to_str()?;
    Ok(format!("{}{location}", api.base_url))
}

async fn offset(api: &ApiProcess, url: &str) -> anyhow::Result<u64> {
    let resp = api.client.head(url).header(TUS.0, TUS.1).send().await?;
    if !resp.status().is_success() {
        bail!("HEAD answered {}", resp.status());
    }
    Ok(resp
        .headers()
        .get("upload-offset")
        .context("Upload-Offset")?
        .to_str()?
        .parse()?)
}

/// One `PATCH` of `file` from `from` to `to`; `cut` drops it at `to`. Returns whether the
/// server answered `204` (`false`: cut, or sent at an offset the server had moved past).
async fn patch(
    api: &ApiProcess,
    url: &str,
    file: &Generated,
    from: u64,
    to: u64,
    cut: bool,
) -> anyhow::Result<bool> {
    let body = reqwest::Body::wrap_stream(file.range(from, to, cut));
    let mut req = api
        .client
        .patch(url)
        .header(TUS.0, TUS.1)
        .header("Upload-Offset", from)
        .header("Content-Type", "application/offset+octet-stream")
        .timeout(Duration::from_secs(3600))
        .body(body);
    if !cut {
        req = req.header("Content-Length", to - from);
    }
    match req.send().await {
        Ok(resp) if resp.status() == reqwest::StatusCode::NO_CONTENT => Ok(true),
        // The server was still storing a cut request's last block when we asked for the offset:
        // ask again, as tus clients do.
        Ok(resp) if resp.status() == reqwest::StatusCode::CONFLICT => {
            eprintln!("  PATCH at {from} answered 409: the offset moved on, HEAD again");
            Ok(false)
        }
        Ok(resp) if cut => {
            eprintln!("  cut PATCH answered {}", resp.status());
            Ok(false)
        }
        Ok(resp) => bail!("PATCH answered {}: {}", resp.status(), resp.text().await?),
        Err(_) if cut => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What the api recorded for a finished upload.
struct Recorded {
    secs: f64,
    sha256: String,
    task_id: Uuid,
}

/// Uploads `file` through tus, cutting `cuts` connections at even points; returns the seconds
/// taken, the SHA-256 the api reports for the recorded file and its task.
async fn upload(api: &ApiProcess, file: &Generated, cuts: u64) -> anyhow::Result<Recorded> {
    let t0 = Instant::now();
    let url = create(api, file.total).await?;
    for k in 1..=cuts {
        let from = offset(api, &url).await?;
        let to = file.total * k / (cuts + 1);
        if to > from {
            patch(api, &url, file, from, to, true).await?;
        }
    }
    // Resume from where the server is; a 409 means a cut request's last block counted late.
    loop {
        let from = offset(api, &url).await?;
        if from == file.total || patch(api, &url, file, from, file.total, false).await? {
            break;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let resp = api.client.get(&url).send().await?;
    if !resp.status().is_success() {
        bail!("GET upload answered {}", resp.status());
    }
    let body: serde_json::Value = resp.json().await?;
    let sha256 = body["source_file"]["sha256"]
        .as_str()
        .context("sha256")?
        .to_owned();
    let task_id = body["task"]["id"].as_str().context("task id")?.parse()?;
    Ok(Recorded {
        secs,
        sha256,
        task_id,
    })
}

/// What parsing the uploaded file cost the worker.
struct Parsed {
    rows: i64,
    secs: f64,
    worker_peak: u64,
    child_peak: u64,
}

/// Lets a `worker run` child parse and store the upload's task, sampling its memory and its parse
/// child's.
async fn parse(env: &WorkerEnv, task_id: Uuid) -> anyhow::Result<Parsed> {
    let mut worker = env::spawn_worker(env, "all", false, &[])?;
    let wpid = worker.id().context("worker pid")?;
    let sampler = procs::PeakSampler::start(wpid);
    let settled = env::await_task(&env.db, task_id, Duration::from_secs(1800)).await;
    let peaks = sampler.finish();
    env::terminate(&mut worker).await;
    let settled = settled?;
    if settled.status != "COMPLETED" {
        bail!("the uploaded file's task ended {}", settled.status);
    }
    let rows: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(c.row_count), 0)::bigint
         FROM parsed_row_chunks c JOIN tasks t USING (source_file_id)
         WHERE t.id = $1",
    )
    .bind(task_id)
    .fetch_one(&env.db)
    .await?;
    Ok(Parsed {
        rows,
        secs: settled.secs,
        worker_peak: peaks.of(wpid),
        child_peak: peaks.max_child(wpid),
    })
}

pub async fn run(bytes: u64) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let file = Generated::new(bytes);
    let mut api = env::spawn_api(&env, file.total + 1024 * 1024).await?;
    let expected = file.sha256();
    // A small upload first, so lazily built state (pool, clients) is in the baseline.
    let warm = Generated::new(CHUNK as u64);
    upload(&api, &warm, 0).await.context("warm-up")?;
    let (rss0, _) = procs::rss(api.pid).context("api rss")?;
    let sampler = procs::PeakSampler::start(api.pid);
    let cut = upload(&api, &file, CUTS).await;
    let peaks = sampler.finish();
    let (_, hwm) = procs::rss(api.pid).context("api rss")?;
    let measured = async {
        let cut = cut?;
        if cut.sha256 != expected {
            bail!(
                "the committed blob's SHA-256 {} is not the file's {expected}",
                cut.sha256
            );
        }
        let parsed = parse(&env, cut.task_id).await?;
        let tus = upload(&api, &file, 0).await?;
        let multipart_secs =
            upload::multipart(&api, &file, "bench.csv", Duration::from_secs(3600)).await?;
        Ok((cut.secs, parsed, tus.secs, multipart_secs))
    }
    .await;
    env::terminate(&mut api.child).await;
    let (cut_secs, parsed, tus_secs, multipart_secs) = measured?;
    let peak = hwm.max(peaks.of(api.pid));
    let mib = file.total as f64 / MB;
    let mut run = Run::default();
    run.put("size_mib", "MiB", mib);
    run.put("sha256_matches", "", 1.0);
    run.put("cut_mib_per_s", "MiB/s", mib / cut_secs);
    run.put("tus_mib_per_s", "MiB/s", mib / tus_secs);
    run.put("multipart_mib_per_s", "MiB/s", mib / multipart_secs);
    run.put("tus_vs_multipart", "×", multipart_secs / tus_secs);
    run.put("api_rss_before_mb", "MB", rss0 as f64 / MB);
    run.put(
        "api_rss_growth_mb",
        "MB",
        peak.saturating_sub(rss0) as f64 / MB,
    );
    run.put("parse.rows", "rows", parsed.rows as f64);
    run.put("parse.rows_expected", "rows", file.lines() as f64);
    run.put(
        "parse.rows_per_s",
        "rows/s",
        parsed.rows as f64 / parsed.secs,
    );
    run.put("parse.worker_peak_mb", "MB", parsed.worker_peak as f64 / MB);
    run.put("parse.child_peak_mb", "MB", parsed.child_peak as f64 / MB);
    run.note(format!(
        "tus: a {mib:.0} MiB generated CSV (BENCH_TUS_BYTES) through /api/v1/uploads with {CUTS} PATCH connections cut at even points and resumed from HEAD (cut_mib_per_s, checked by the SHA-256 the api read back from the committed blob; RSS growth = VmHWM after − VmRSS before over that upload), then parsed and stored by a `worker run` (parse.*: rows stored against the file's lines, started → seen COMPLETED, peak VmHWM of the worker and of its parse child), then without cuts in one PATCH (tus_mib_per_s) and as one multipart request (multipart_mib_per_s); tus_vs_multipart = multipart time / tus time"
    ));
    Ok(run)
}
