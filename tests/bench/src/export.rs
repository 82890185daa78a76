//! The export scenario: a 1M-row sheet, parsed by a real `worker run` child from the
//! bench's 12-column CSV, exported whole by the release `api` as CSV, NDJSON and Parquet
//! (`GET /api/v1/files/{id}/rows/export`). Rows/s is rows over the time from sending the request
//! to reading the last byte, measured here on loopback: it includes the client's own reading,
//! so it bounds the server's rate from below. The api's resident memory (`VmRSS`) is sampled
//! every 10 ms during the exports, to show it stays flat whatever the sheet's size.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use futures::StreamExt as _;
use uuid::Uuid;

use crate::env::{self, ApiProcess, Stack};
use crate::gen;
use crate::procs::{self, CpuMeter, RssSampler, MB};
use crate::report::{median, Run};

const FORMATS: [&str; 3] = ["csv", "ndjson", "parquet"];

/// `rows` rows exported `rounds` times in each format (after one untimed export of each).
pub async fn run(stack: &Stack, rows: u64, rounds: usize) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let file = gen::csv(rows, false)?;
    let file_id = parsed(&env, &file, rows).await?;
    let mut api = env::spawn_api(&env, 100 * 1024 * 1024).await?;
    let result = measure(stack, &api, file_id, rows, rounds).await;
    env::terminate(&mut api.child).await;
    let mut run = result?;
    run.note(format!(
        "export: the parse scenario's {rows}-row, 12-column CSV ({:.0} MiB; 7 typed columns: integers, a decimal, a date, a datetime, a boolean) parsed by `worker run`, then exported by target/release/api; rows/s = rows / (request sent → last byte read) on loopback, median of {rounds} exports per format after one untimed export of each; api RSS = VmRSS sampled every 10 ms from before the first export to after the last",
        std::fs::metadata(&file).map(|m| m.len() as f64 / MB).unwrap_or(0.0)
    ));
    Ok(run)
}

/// Uploads `file` straight to the container, records it as the api would, and lets a
/// `worker run` child parse it; returns the source file id once its task is COMPLETED.
pub(crate) async fn parsed(
    env: &harness::worker::WorkerEnv,
    file: &Path,
    rows: u64,
) -> anyhow::Result<Uuid> {
    let (blob_name, size) = env::upload_file(env, file, "csv").await?;
    let mut tx = env.db.begin().await?;
    let (_, task_id) =
        env::insert_upload(&mut tx, Some(&blob_name), "csv", size as i64, None).await?;
    tx.commit().await?;
    let mut worker = env::spawn_worker(env, "all", false, &[])?;
    let status = env::await_task(&env.db, task_id, Duration::from_secs(900))
        .await?
        .status;
    let file_id: Uuid = sqlx::query_scalar("SELECT source_file_id FROM tasks WHERE id = $1")
        .bind(task_id)
        .fetch_one(&env.db)
        .await?;
    env::terminate(&mut worker).await;
    ensure!(status == "COMPLETED", "the export's sheet ended {status}");
    let stored = env::count(
        &env.db,
        "SELECT coalesce(sum(row_count), 0)::bigint FROM parsed_row_chunks",
    )
    .await?;
    ensure!(
        stored as u64 == rows,
        "{stored} rows stored, {rows} expected"
    );
    Ok(file_id)
}

/// One whole export: (seconds from request to last byte, bytes, newlines).
async fn export_once(api: &ApiProcess, id: Uuid, format: &str) -> anyhow::Result<(f64, u64, u64)> {
    let url = format!(
        "{}/api/v1/files/{id}/rows/export?sheet=0&format={format}",
        api.base_url
    );
    let t0 = Instant::now();
    let resp = api.client.get(url).send().await?;
    let status = resp.status();
    if !status.is_success() {
        bail!("{format} export answered {status}");
    }
    let mut body = resp.bytes_stream();
    let (mut bytes, mut lines) = (0u64, 0u64);
    while let Some(piece) = body.next().await {
        let piece = piece.context("export body")?;
        bytes += piece.len() as u64;
        lines += piece.iter().filter(|&&b| b == b'\n').count() as u64;
    }
    Ok((t0.elapsed().as_secs_f64(), bytes, lines))
}

async fn measure(
    stack: &Stack,
    api: &ApiProcess,
    id: Uuid,
    rows: u64,
    rounds: usize,
) -> anyhow::Result<Run> {
    let (rss_before, _) = procs::rss(api.pid).context("api rss")?;
    let rss = RssSampler::start(api.pid);
    let mut sizes = [0u64; 3];
    for (i, format) in FORMATS.iter().enumerate() {
        let (_, bytes, lines) = export_once(api, id, format).await?;
        // NDJSON has one line per row (newlines inside values are escaped); the CSV's line
        // count depends on its quoted line breaks, so only its size is compared across rounds.
        if *format == "ndjson" {
            ensure!(lines == rows, "NDJSON export: {lines} lines, {rows} rows");
        }
        sizes[i] = bytes;
    }
    let cpu = CpuMeter::start(vec![
        ("api", vec![api.pid]),
        ("postgres", vec![stack.pg_pid]),
    ]);
    let self0 = procs::self_secs();
    let mut secs: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (i, format) in FORMATS.iter().enumerate() {
            let (s, bytes, _) = export_once(api, id, format).await?;
            ensure!(
                bytes == sizes[i],
                "{format} export: {bytes} bytes, {} the first time",
                sizes[i]
            );
            secs[i].push(s);
        }
    }
    let mut cpu = cpu.finish();
    cpu.push(("bench_client", procs::self_secs() - self0));
    let trace = rss.finish();
    let (rss_after, _) = procs::rss(api.pid).context("api rss")?;

    let mut run = Run::default();
    for (i, format) in FORMATS.iter().enumerate() {
        let s = median(&secs[i]);
        run.put(format!("{format}_rows_per_s"), "rows/s", rows as f64 / s);
        run.put(
            format!("{format}_mib_per_s"),
            "MiB/s",
            sizes[i] as f64 / MB / s,
        );
        run.put(format!("{format}_size_mib"), "MiB", sizes[i] as f64 / MB);
    }
    run.put(
        "parquet_size_pct_of_csv",
        "%",
        100.0 * sizes[2] as f64 / sizes[0].max(1) as f64,
    );
    let exports = (rounds * FORMATS.len()) as f64;
    for (role, s) in cpu {
        run.put(
            format!("cpu_s_per_1m_rows.{role}"),
            "s",
            s / exports / (rows as f64 / 1e6),
        );
    }
    let peak = trace.iter().map(|(_, b)| *b).max().unwrap_or(rss_before);
    run.put("api_rss_before_mb", "MB", rss_before as f64 / MB);
    run.put("api_rss_max_mb", "MB", peak as f64 / MB);
    run.put("api_rss_after_mb", "MB", rss_after as f64 / MB);
    run.put(
        "api_rss_growth_mb",
        "MB",
        peak.saturating_sub(rss_before) as f64 / MB,
    );
    Ok(run)
}
