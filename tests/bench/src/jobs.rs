//! Scenario `jobs`: the worker as scale-to-zero jobs, with production settings (release binary,
//! default leases). Four figures: a job's cold start (process start → the first task COMPLETED
//! for one small file) and its run time on an empty queue; the rescue time after `kill -9` of a
//! worker mid-work (from the kill until every task it held is terminal, a replacement started at
//! once, as a platform restarts a replica); and job executions per 1,000 uploads under the local
//! KEDA-like scaler (`harness::scaler`) set up as `deploy/` sets up Container Apps (an always-on
//! relay, `worker run --role consumer --drain` jobs, `maxExecutions` 20), with its `queueLength`
//! of 5 and with 50.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use harness::scaler::{Scaler, ScalerConfig};
use harness::worker::{Upload, WorkerEnv};
use tokio::process::Child;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::env;
use crate::report::{quantile, Run};
use crate::upload::small_csv;

/// Many workers at once on one host: each takes a free port for `/metrics`.
const ANY_PORT: (&str, &str) = ("METRICS_ADDR", "127.0.0.1:0");

pub struct Sizes {
    /// Cold starts and empty runs measured.
    pub starts: usize,
    /// `kill -9` rounds.
    pub kills: usize,
    /// Uploads under the scaler, in bursts of 100.
    pub scaled_uploads: usize,
    pub polling_interval: Duration,
}

pub async fn run(sizes: &Sizes) -> anyhow::Result<Run> {
    let mut run = Run::default();
    starts(&mut run, sizes.starts).await?;
    rescue(&mut run, sizes.kills).await?;
    // The queueLength of deploy/, and one ten times longer.
    for queue_length in [5, 50] {
        let mut scaled_run = Run::default();
        scaled(
            &mut scaled_run,
            sizes.scaled_uploads,
            sizes.polling_interval,
            queue_length,
        )
        .await?;
        run.extend(&format!("q{queue_length}."), scaled_run);
    }
    Ok(run)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// How many of `ids` are COMPLETED or FAILED.
async fn terminal(env: &WorkerEnv, ids: &[Uuid]) -> anyhow::Result<usize> {
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM tasks WHERE id = ANY($1) AND status IN ('COMPLETED', 'FAILED')",
    )
    .bind(ids)
    .fetch_one(&env.db)
    .await?;
    Ok(n as usize)
}

async fn wait_terminal(env: &WorkerEnv, ids: &[Uuid], within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    while terminal(env, ids).await? < ids.len() {
        if Instant::now() > deadline {
            bail!("tasks still not terminal after {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

async fn wait_exit(child: &mut Child, within: Duration) -> anyhow::Result<()> {
    let status = tokio::time::timeout(within, child.wait())
        .await
        .context("the job did not exit")??;
    if !status.success() {
        bail!("the job exited with {status}");
    }
    Ok(())
}

/// Cold start and empty-queue run time of `worker run --drain`.
async fn starts(run: &mut Run, n: usize) -> anyhow::Result<()> {
    let env = env::fresh_env().await;
    let (mut cold, mut exit, mut empty) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let upload = env
            .create_upload(&format!("cold-{i}.csv"), &small_csv())
            .await;
        let t0 = Instant::now();
        let mut job = env::spawn_worker(&env, "all", true, &[ANY_PORT])?;
        wait_terminal(&env, &[upload.task_id], Duration::from_secs(60)).await?;
        cold.push(ms(t0.elapsed()));
        wait_exit(&mut job, Duration::from_secs(60)).await?;
        exit.push(ms(t0.elapsed()));
    }
    for _ in 0..n {
        let t0 = Instant::now();
        let mut job = env::spawn_worker(&env, "all", true, &[ANY_PORT])?;
        wait_exit(&mut job, Duration::from_secs(60)).await?;
        empty.push(ms(t0.elapsed()));
    }
    run.put("cold_start_p50_ms", "ms", quantile(&cold, 0.5));
    run.put("cold_start_max_ms", "ms", quantile(&cold, 1.0));
    run.put("cold_job_exit_p50_ms", "ms", quantile(&exit, 0.5));
    run.put("empty_run_p50_ms", "ms", quantile(&empty, 0.5));
    run.put("empty_run_max_ms", "ms", quantile(&empty, 1.0));
    run.note(format!(
        "jobs: cold start = spawn of `worker run --drain` (release, defaults) → its one 20-row task COMPLETED (blob download, no inline copy), {n} times; empty run = spawn → exit 0 on an empty queue and outbox, {n} times"
    ));
    Ok(())
}

/// A CSV of `rows` rows (about 25 bytes each): a parse that lasts long enough to be killed.
fn csv(rows: usize) -> Vec<u8> {
    let mut s = String::from("id,name,amount\n");
    for i in 0..rows {
        s.push_str(&format!("{i},customer {i},{}.25\n", i % 1000));
    }
    s.into_bytes()
}

/// `kill -9` of a worker with tasks running, `rounds` times: the time until every task of the
/// round is terminal, and whether anything was done twice.
async fn rescue(run: &mut Run, rounds: usize) -> anyhow::Result<()> {
    const FILES: usize = 24;
    const ROWS: usize = 20_000;
    let env = env::fresh_env().await;
    let content = csv(ROWS);
    let mut worker = env::spawn_worker(&env, "all", false, &[ANY_PORT])?;
    let mut times = Vec::new();
    let mut all: Vec<Upload> = Vec::new();
    let mut held = 0usize;
    for round in 0..rounds {
        let uploads = env.create_uploads(FILES, &content, 8).await;
        let ids: Vec<Uuid> = uploads.iter().map(|u| u.task_id).collect();
        // Kill once the worker holds several running parses.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let running: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM tasks WHERE id = ANY($1) AND status = 'RUNNING'",
            )
            .bind(&ids)
            .fetch_one(&env.db)
            .await?;
            if running >= 3 {
                break;
            }
            if Instant::now() > deadline {
                bail!("round {round}: no task started");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        worker.start_kill()?;
        let killed = Instant::now();
        let _ = worker.wait().await;
        worker = env::spawn_worker(&env, "all", false, &[ANY_PORT])?;
        wait_terminal(&env, &ids, Duration::from_secs(120)).await?;
        times.push(killed.elapsed().as_secs_f64());
        let retaken: i64 =
            sqlx::query_scalar("SELECT count(*) FROM tasks WHERE id = ANY($1) AND attempts >= 2")
                .bind(&ids)
                .fetch_one(&env.db)
                .await?;
        held += retaken as usize;
        eprintln!(
            "  rescue round {}: {:.2} s after the kill, {retaken} task(s) taken over",
            round + 1,
            times[times.len() - 1]
        );
        all.extend(uploads);
    }
    env::terminate(&mut worker).await;
    let mut wrong = 0;
    for u in &all {
        let task = env.task(u.task_id).await;
        if task.status != shared::domain::TaskStatus::Completed
            || env.row_count(u.source_file_id).await != ROWS as i64
        {
            wrong += 1;
        }
    }
    run.put("rescue_p50_s", "s", quantile(&times, 0.5));
    run.put("rescue_p99_s", "s", quantile(&times, 0.99));
    run.put("rescue_max_s", "s", quantile(&times, 1.0));
    run.put("rescue_tasks_taken_over", "task", held as f64);
    run.put("rescue_not_completed_once", "task", wrong as f64);
    run.note(format!(
        "jobs: rescue = {rounds} rounds of {FILES} uploads of a {ROWS}-row CSV to one `worker run` (release, defaults); kill -9 once 3 of them are RUNNING, a replacement started at once; time from the kill until every task of the round is terminal (a platform's restart delay and a scaler's polling interval come on top); not_completed_once = tasks not COMPLETED or without exactly {ROWS} rows"
    ));
    Ok(())
}

/// Job executions per 1,000 uploads under the local scaler, in bursts of 100 with idle gaps.
async fn scaled(
    run: &mut Run,
    uploads: usize,
    polling: Duration,
    queue_length: u64,
) -> anyhow::Result<()> {
    const BURST: usize = 100;
    let env = env::fresh_env().await;
    let mut relay = env::spawn_worker(&env, "relay", false, &[ANY_PORT])?;
    let consumers = ScaledConsumers::start(&env, polling, queue_length, &[])?;
    let scaler = &consumers.scaler;
    let mut done = 0;
    while done < uploads {
        let n = BURST.min(uploads - done);
        let burst = env.create_uploads(n, &small_csv(), 16).await;
        let ids: Vec<Uuid> = burst.iter().map(|u| u.task_id).collect();
        wait_terminal(&env, &ids, Duration::from_secs(300)).await?;
        let deadline = Instant::now() + Duration::from_secs(120);
        while scaler.running() > 0 {
            if Instant::now() > deadline {
                bail!("jobs still running 120 s after their burst");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        done += n;
    }
    let report = consumers.finish().await?;
    env::terminate(&mut relay).await;
    let per_1k = 1000.0 / uploads as f64;
    run.put(
        "executions_per_1k_uploads",
        "job",
        report.executions as f64 * per_1k,
    );
    run.put(
        "job_seconds_per_1k_uploads",
        "s",
        report.job_seconds * per_1k,
    );
    run.put("most_jobs_at_once", "job", report.max_running as f64);
    run.put(
        "jobs_not_exit_0",
        "job",
        (report.executions - report.succeeded) as f64,
    );
    run.note(format!(
        "jobs: scaled = {uploads} uploads of a 20-row CSV in bursts of {BURST}, each waited out until no job runs; an always-on `worker run --role relay`; the scaler polls every {polling:?} (KEDA's default is 30 s) with queueLength {queue_length} (q5: deploy/'s setting) and maxExecutions 20, starting `worker run --role consumer --drain`; job-seconds are each job's spawn to its reaping (within 50 ms), summed"
    ));
    Ok(())
}

/// The consumers of the deployed shape: `worker run --role consumer --drain` jobs started by the
/// local scaler as `deploy/` sets up Container Apps jobs (`maxExecutions` 20), on the queue of
/// `env`, each with `extra` in its environment.
pub struct ScaledConsumers {
    pub scaler: Arc<Scaler>,
    stop: CancellationToken,
    looping: tokio::task::JoinHandle<()>,
}

impl ScaledConsumers {
    pub fn start(
        env: &WorkerEnv,
        polling: Duration,
        queue_length: u64,
        extra: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let (database_url, storage) = (env.database_url.clone(), env.storage.clone());
        let extra: Vec<(String, String)> = extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let job = move |_execution: usize| {
            let mut cmd = tokio::process::Command::new(env::worker_exe());
            cmd.args(["run", "--drain", "--role", "consumer"])
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("RUST_LOG", "info")
                .env("DATABASE_URL", &database_url)
                .env(
                    "AZURE_STORAGE_CONNECTION_STRING",
                    storage.connection_string.as_deref().unwrap_or_default(),
                )
                .env("QUEUE_NAME", &storage.queue_name)
                .env("BLOB_CONTAINER", &storage.blob_container)
                .env(ANY_PORT.0, ANY_PORT.1)
                .envs(extra.iter().map(|(k, v)| (k, v)));
            cmd
        };
        let cfg = ScalerConfig {
            polling_interval: polling,
            queue_length,
            backlog_target: None,
            max_executions: 20,
        };
        let logs = env::out_dir()
            .join("logs")
            .join(format!("jobs-{}", Uuid::new_v4().simple()));
        let scaler = Scaler::new(cfg, env.queue.clone(), env.db.clone(), Box::new(job), logs)?;
        let stop = CancellationToken::new();
        let looping = {
            let (scaler, stop) = (Arc::clone(&scaler), stop.clone());
            tokio::spawn(async move { scaler.run(&stop).await })
        };
        Ok(Self {
            scaler,
            stop,
            looping,
        })
    }

    /// Stops scaling and waits up to a minute for the jobs still running.
    pub async fn finish(self) -> anyhow::Result<harness::scaler::Report> {
        self.stop.cancel();
        self.looping.await?;
        Ok(self.scaler.finish(Duration::from_secs(60)).await)
    }
}
