//! `bench scaler`: the local KEDA-like scaler ([`harness::scaler`]) run by hand against a running
//! stack (`tests/stack/scaler.sh` sets it up against the `up.sh` stack). It reads the stack from
//! the environment the worker reads (`DATABASE_URL`, `AZURE_STORAGE_CONNECTION_STRING`,
//! `QUEUE_NAME`, `BLOB_CONTAINER`), starts `worker run --drain` jobs as uploads arrive, prints a
//! line whenever what it sees changes, and on Ctrl-C (or after `--for`) stops polling, lets the
//! running jobs finish and prints how many executions there were.
//!
//! ```text
//! bench scaler --worker target/release/worker [--polling-interval 1s] [--queue-length 5]
//!              [--backlog-target 5|none] [--max-executions 20] [--role all|consumer]
//!              [--logs DIR] [--for DURATION]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use harness::scaler::{Scaler, ScalerConfig, Tick};
use shared::config::parse_duration;
use shared::storage::{QueueClient, StorageConfig};

struct Args {
    worker: PathBuf,
    cfg: ScalerConfig,
    role: String,
    logs: PathBuf,
    run_for: Option<Duration>,
}

fn args(argv: &[String]) -> anyhow::Result<Args> {
    let mut out = Args {
        worker: crate::env::worker_exe(),
        cfg: ScalerConfig {
            polling_interval: Duration::from_secs(1),
            queue_length: 5,
            backlog_target: Some(5),
            max_executions: 20,
        },
        role: "all".into(),
        logs: crate::env::out_dir().join("logs").join("jobs"),
        run_for: None,
    };
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--worker" => out.worker = value()?.into(),
            "--polling-interval" => {
                out.cfg.polling_interval = parse_duration(value()?).map_err(anyhow::Error::msg)?
            }
            "--queue-length" => out.cfg.queue_length = value()?.parse()?,
            "--backlog-target" => {
                out.cfg.backlog_target = match value()?.as_str() {
                    "none" => None,
                    n => Some(n.parse()?),
                }
            }
            "--max-executions" => out.cfg.max_executions = value()?.parse()?,
            "--role" => out.role = value()?.clone(),
            "--logs" => out.logs = value()?.into(),
            "--for" => out.run_for = Some(parse_duration(value()?).map_err(anyhow::Error::msg)?),
            other => bail!("unknown argument {other:?} (see tests/bench/src/scaler_cli.rs)"),
        }
    }
    if !out.worker.is_file() {
        bail!(
            "{} is missing: build it (cargo build --release -p worker)",
            out.worker.display()
        );
    }
    Ok(out)
}

fn var(name: &str) -> anyhow::Result<String> {
    std::env::var(name).with_context(|| format!("{name} is not set"))
}

pub async fn main(argv: &[String]) -> anyhow::Result<()> {
    let args = args(argv)?;
    let storage = StorageConfig::from_connection_string(
        var("AZURE_STORAGE_CONNECTION_STRING")?,
        std::env::var("BLOB_CONTAINER").unwrap_or_else(|_| "uploads".into()),
        std::env::var("QUEUE_NAME").unwrap_or_else(|_| "parse-tasks".into()),
    );
    let queue = QueueClient::new(&storage, &storage.queue_name)?;
    queue.ensure_exists().await.context("reaching the queue")?;
    let db = shared::db::DatabaseConfig::new(&var("DATABASE_URL")?).pool()?;
    let (worker, role) = (args.worker.clone(), args.role.clone());
    let job = move |_execution: usize| {
        // The environment is the stack's; many jobs at once each need their own metrics port.
        let mut cmd = tokio::process::Command::new(&worker);
        cmd.args(["run", "--drain", "--role", &role])
            .env("METRICS_ADDR", "127.0.0.1:0");
        cmd
    };
    eprintln!(
        "scaler: {:?}, jobs `{} run --drain --role {}`, logs in {}; Ctrl-C stops",
        args.cfg,
        args.worker.display(),
        args.role,
        args.logs.display()
    );
    let scaler = Scaler::new(args.cfg.clone(), queue, db, Box::new(job), args.logs)?;
    let started = Instant::now();
    let mut last: Option<Tick> = None;
    loop {
        match scaler.poll().await {
            Ok(tick) => {
                let changed = last.is_none_or(|l| {
                    (l.queue_length, l.backlog, l.running)
                        != (tick.queue_length, tick.backlog, tick.running)
                });
                if changed || tick.started > 0 {
                    eprintln!(
                        "{:>8.1}s  queue {:>5}  backlog {:>5}  started {:>2}  running {:>2}  executions {}",
                        started.elapsed().as_secs_f64(),
                        tick.queue_length,
                        tick.backlog,
                        tick.started,
                        tick.running,
                        scaler.report().executions
                    );
                }
                last = Some(tick);
            }
            Err(e) => eprintln!("scaler: poll failed: {e:#}"),
        }
        let until_end = args
            .run_for
            .map_or(Duration::MAX, |d| d.saturating_sub(started.elapsed()));
        if until_end.is_zero() {
            break;
        }
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            () = tokio::time::sleep(args.cfg.polling_interval.min(until_end)) => {}
        }
    }
    eprintln!(
        "scaler: stopped polling; waiting for {} running job(s)",
        scaler.running()
    );
    let report = scaler.finish(Duration::from_secs(600)).await;
    println!(
        "executions {}  succeeded {}  failed {:?}  killed {}  most at once {}  job-seconds {:.1}  polls {}",
        report.executions,
        report.succeeded,
        report.failed,
        report.killed,
        report.max_running,
        report.job_seconds,
        report.polls
    );
    Ok(())
}
