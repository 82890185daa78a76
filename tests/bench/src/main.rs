//! `bench`: the benchmark suite (its scenarios and targets are in `BENCHMARKS.md`). Starts its own Postgres and Azurite exactly as the
//! integration tests do (`harness::services`), runs each scenario against the release `api` and
//! `worker` binaries (each measurement in a child process with its own Postgres and Azurite),
//! prints a table (median of the runs with min–max, targets met or not) and
//! writes `target/bench/results.json`.
//!
//! ```text
//! cargo run -p bench --release -- all                # every scenario, full sizes
//! cargo run -p bench --release -- relay-latency      # one scenario
//! cargo run -p bench --release -- telemetry-overhead # tracing and progress, on against off
//! cargo run -p bench --release -- events             # webhook delivery latency, outage, slow endpoint
//! cargo run -p bench --release -- templates          # uploads checked against a template
//! cargo run -p bench --release -- fairness           # a tenant's upload beside another's backlog
//! cargo run -p bench --release -- limits             # a tenant over its upload rate beside another
//! cargo run -p bench --release -- template-compile   # /healthz while 1,000-pattern templates compile
//! cargo run -p bench --release -- purge              # retention and a purge of 10M rows
//!                                                    # (BENCH_PURGE_ROWS sets the rows)
//! cargo run -p bench --release -- tus                # resumable upload, cut connections (BENCH_TUS_BYTES)
//! cargo run -p bench --release -- keyset             # a file's rows pages beside 100M other rows
//!                                                    # (BENCH_KEYSET_ROWS sets the other rows)
//! cargo run -p bench --release -- row-store-migration # partitioning a populated row store
//!                                                    # (BENCH_MIGRATION_ROWS, default 20M)
//! cargo run -p bench --release -- event-log          # event retention: batches, migration, days
//!                                                    # (BENCH_EVENT_LOG_EVENTS a day, default 1M)
//! cargo run -p bench --release -- corrections        # one correction on a 1M-row file, 10,000
//!                                                    # in one request, storage per revision
//! cargo run -p bench --release -- hooks              # rows/s through a validation hook
//!                                                    # answering in 5 ms at batch 1,000
//! cargo run -p bench --release -- destinations       # a 1M-row sheet to Azurite as Parquet and
//!                                                    # to a receiver as row webhooks
//! cargo run -p bench --release -- destinations-lag   # task COMPLETED → manifest written, 50 files/s
//! cargo run -p bench --release -- sources            # 10,000 blobs dropped into a watched
//!                                                    # container; blob written → task PENDING
//! cargo run -p bench --release -- all --quick        # small sizes, one run: a smoke test
//! cargo run -p bench -- scaler --worker …            # the local scaler, by hand (scaler_cli)
//! options: --runs N (default 3), --out FILE
//! ```
#![allow(clippy::print_stdout)]

mod body;
mod bulk;
mod corrections;
mod destination_kills;
mod destinations;
mod env;
mod event_log;
mod events;
mod export;
mod fairness;
mod gen;
mod hooks;
mod jobs;
mod keyset;
mod limits;
mod overhead;
mod parse;
mod pg_statements;
mod procs;
mod purge;
mod relay;
mod report;
mod row_store_migration;
mod scaler_cli;
mod sources;
mod template_compile;
mod templates;
mod tus;
mod upload;

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use report::{Run, ScenarioResult};

const SCENARIOS: &[&str] = &[
    "relay-throughput",
    "relay-latency",
    "upload",
    "upload-1gib",
    "e2e",
    "parse",
    "export",
    "scale-out",
    "jobs",
    "telemetry-overhead",
    "events",
    "templates",
    "template-compile",
    "fairness",
    "limits",
    "purge",
    "tus",
    "keyset",
    "row-store-migration",
    "event-log",
    "corrections",
    "hooks",
    "destinations",
    "destinations-lag",
    "sources",
];

struct Options {
    scenarios: Vec<String>,
    quick: bool,
    runs: usize,
    out: std::path::PathBuf,
}

fn options() -> anyhow::Result<Options> {
    let mut args = std::env::args().skip(1);
    let mut scenarios = Vec::new();
    let mut quick = false;
    let mut runs = None;
    let mut out = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--runs" => runs = Some(args.next().context("--runs N")?.parse()?),
            "--out" => out = Some(args.next().context("--out FILE")?.into()),
            "all" => scenarios.extend(SCENARIOS.iter().map(|s| s.to_string())),
            s if SCENARIOS.contains(&s) => scenarios.push(s.to_owned()),
            other => bail!(
                "unknown argument {other:?}; usage: bench all|{} [--quick] [--runs N] [--out FILE]",
                SCENARIOS.join("|")
            ),
        }
    }
    if scenarios.is_empty() {
        bail!("name a scenario or `all`: {}", SCENARIOS.join(", "));
    }
    Ok(Options {
        scenarios,
        quick,
        runs: runs.unwrap_or(if quick { 1 } else { 3 }),
        out: out.unwrap_or_else(|| env::out_dir().join("results.json")),
    })
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__parse") {
        return parse::child_main(&args[2..]);
    }
    if args.get(1).map(String::as_str) == Some("__receive") {
        // The destinations scenario's receiver that is killed (destination_kills.rs).
        return destination_kills::serve(&args[2..]);
    }
    if args.get(1).map(String::as_str) == Some("scaler") {
        // By hand, against a running stack (tests/stack/scaler.sh).
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        return rt.block_on(scaler_cli::main(&args[2..]));
    }
    if args.get(1).map(String::as_str) == Some("__run") {
        // One measurement in a process of its own, with its own Postgres and Azurite.
        let unit_name = args
            .get(2)
            .context("__run <unit> <run index> [--quick]")?
            .clone();
        let index: usize = args.get(3).context("run index")?.parse()?;
        let quick = args.iter().any(|a| a == "--quick");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let run: Run = rt.block_on(async {
            let stack = env::Stack::start().await?;
            unit(&stack, &unit_name, quick, index).await
        })?;
        println!("{}", serde_json::to_string(&run)?);
        return Ok(());
    }
    let opts = options()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(opts))
}

async fn run(opts: Options) -> anyhow::Result<()> {
    env::build_binaries()?;
    let started = chrono::Utc::now();
    let mut results: Vec<ScenarioResult> = Vec::new();
    for name in &opts.scenarios {
        let t0 = Instant::now();
        let mut runs = Vec::new();
        let mut error = None;
        let n_runs = opts.runs.min(max_runs(name));
        for i in 0..n_runs {
            eprintln!("[{name}] run {}/{n_runs}", i + 1);
            match scenario(name, opts.quick, i).await {
                Ok(r) => runs.push(r),
                Err(e) => {
                    eprintln!("[{name}] failed: {e:#}");
                    error = Some(format!("{e:#}"));
                    break;
                }
            }
        }
        let mut res = report::aggregate(name, &runs, t0.elapsed());
        res.error = error;
        println!("{}", report::table(std::slice::from_ref(&res)));
        results.push(res);
    }
    let table = report::table(&results);
    println!("\n{table}");
    let json = serde_json::json!({
        "started_at": started,
        "finished_at": chrono::Utc::now(),
        "quick": opts.quick,
        "runs": opts.runs,
        "machine": machine(),
        "results": results,
    });
    if let Some(dir) = opts.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&opts.out, serde_json::to_string_pretty(&json)?)?;
    std::fs::write(opts.out.with_extension("md"), &table)?;
    println!("results written to {}", opts.out.display());
    Ok(())
}

/// The slowest scenarios run fewer times (`--runs` is an upper bound for them).
fn max_runs(name: &str) -> usize {
    match name {
        "relay-throughput" | "e2e" | "parse" | "scale-out" => 2,
        // Each run is four measurements (two units, on and off), about 40 s; pairs are compared,
        // and the host's swing between the two halves of a pair is ±10 %: more pairs than usual.
        "telemetry-overhead" => 9,
        // Ten kills and a thousand scaled uploads in one run.
        "jobs" => 1,
        // A 1M-row sheet parsed, then delivered three times.
        "destinations" => 1,
        // 1,500 uploads at 50/s, each delivered.
        "destinations-lag" => 1,
        // 10,000 blobs dropped, then two latency runs of a minute or more.
        "sources" => 1,
        // 10M rows generated and deleted per run.
        "purge" => 1,
        // Three uploads of a large file (1 GiB by default) in one run.
        "tus" => 1,
        // 100M rows generated per run.
        "keyset" => 1,
        // 20M rows generated per run.
        "row-store-migration" => 1,
        // 3M events, deliveries and attempts generated per run.
        "event-log" => 1,
        // A 1M-row file parsed, then 201 revisions.
        "corrections" => 1,
        // A 1M-row file parsed twice, with the hook and without.
        "hooks" => 1,
        _ => usize::MAX,
    }
}

/// Runs `unit` in a child process (`bench __run`), which starts its own Postgres and Azurite:
/// Azurite slows down with every message it holds (in any queue), so no measurement may inherit
/// the messages of another.
async fn in_child(unit: &str, quick: bool, index: usize) -> anyhow::Result<Run> {
    in_child_with(unit, quick, index, &[]).await
}

/// [`in_child`] with `envs` set in the child, for the api and worker it starts
/// (`env::FORWARDED`).
async fn in_child_with(
    unit: &str,
    quick: bool,
    index: usize,
    envs: &[(&str, String)],
) -> anyhow::Result<Run> {
    eprintln!("  {unit}: fresh Postgres + Azurite");
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.args(["__run", unit, &index.to_string()]);
    cmd.envs(envs.iter().map(|(k, v)| (k, v)));
    if quick {
        cmd.arg("--quick");
    }
    // Not `output()`: tokio's pipes stderr too, which would hide the child's progress and
    // panics.
    let out = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()?
        .wait_with_output()
        .await?;
    if !out.status.success() {
        bail!("{unit} failed ({})", out.status);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).with_context(|| format!("{unit} result: {last}"))
}

async fn scenario(name: &str, quick: bool, index: usize) -> anyhow::Result<Run> {
    if name == "telemetry-overhead" {
        return overhead::run(index, |unit, envs| async move {
            in_child_with(unit, quick, index, &envs).await
        })
        .await;
    }
    if name != "scale-out" {
        return in_child(name, quick, index).await;
    }
    let mut run = Run::default();
    for (unit, prefix) in [
        ("scale-relay-1", "relay.1w."),
        ("scale-relay-2", "relay.2w."),
        ("scale-e2e-1", "e2e.1w."),
        ("scale-e2e-2", "e2e.2w."),
    ] {
        run.extend(prefix, in_child(unit, quick, index).await?);
    }
    let dup: f64 = run
        .metrics
        .iter()
        .filter(|(k, _, _)| {
            k.ends_with("duplicates")
                || k.ends_with("queue_messages_minus_rows")
                || k.ends_with("rows_not_completed_once")
        })
        .map(|(_, _, v)| v.abs())
        .sum();
    run.put("duplicates", "", dup);
    run.note("scale-out: 1w/2w = one or two `worker run` processes (relay: --role relay --drain; e2e: --role all, api in front); each measurement on a fresh Postgres + Azurite; duplicates = tasks with attempts ≠ 1 + files without exactly 20 rows + outbox rows sent ≠ once + queue length ≠ rows");
    Ok(run)
}

/// One measurement, in this process, against `stack`.
async fn unit(stack: &env::Stack, name: &str, quick: bool, index: usize) -> anyhow::Result<Run> {
    let q = |quick_value: u64, full_value: u64| if quick { quick_value } else { full_value };
    let relay_rows = q(2_000, 20_000) as i64;
    let e2e_uploads = q(100, 500) as usize;
    match name {
        "relay-throughput" => relay::throughput(stack, relay_rows, 1, true, index).await,
        "relay-latency" => relay::latency(stack, 50, Duration::from_secs(q(5, 30))).await,
        "upload" => upload::uploads(stack, q(200, 2_000) as usize).await,
        "upload-1gib" => upload::one_big(q(64, 1024) * 1024 * 1024).await,
        "e2e" => {
            let steady = Some((50, Duration::from_secs(q(5, 20))));
            upload::e2e(stack, e2e_uploads, 1, steady).await
        }
        "parse" => {
            let sizes = parse::Sizes {
                csv_rows: q(50_000, 1_000_000),
                xlsx_rows: q(20_000, 1_000_000),
                ods_rows: q(10_000, 1_000_000),
                xls_rows: q(10_000, 65_535),
                xlsb_rows: q(10_000, 1_000_000),
                big_csv_rows: q(0, 7_500_000),
                store: true,
            };
            parse::run(stack, &sizes).await
        }
        "export" => export::run(stack, q(50_000, 1_000_000), 3).await,
        "destinations" => destinations::run(q(50_000, 1_000_000)).await,
        "destinations-lag" => destinations::lag(q(200, 1_500) as usize, 50).await,
        "sources" => {
            let sizes = sources::Sizes {
                blobs: q(1_000, 10_000) as usize,
                latency_blobs: q(30, 100) as usize,
                pace: Duration::from_millis(500),
                poll_interval: Duration::from_secs(5),
            };
            sources::run(&sizes).await
        }
        "jobs" => {
            let sizes = jobs::Sizes {
                starts: q(3, 10) as usize,
                kills: q(3, 12) as usize,
                scaled_uploads: q(200, 1_000) as usize,
                polling_interval: Duration::from_secs(2),
            };
            jobs::run(&sizes).await
        }
        "scale-relay-1" => relay::throughput(stack, relay_rows, 1, false, index).await,
        "scale-relay-2" => relay::throughput(stack, relay_rows, 2, false, index).await,
        "scale-e2e-1" => upload::e2e(stack, e2e_uploads, 1, None).await,
        "scale-e2e-2" => upload::e2e(stack, e2e_uploads, 2, None).await,
        "overhead-e2e" => upload::e2e(stack, e2e_uploads, 1, None).await,
        "overhead-parse" => parse::store_csv(stack, q(100_000, 1_000_000)).await,
        "events" => {
            let sizes = events::Sizes {
                steady_secs: q(5, 30),
                outage_events: q(200, 1_000) as usize,
                outage: Duration::from_secs(q(15, 30)),
            };
            events::run(&sizes).await
        }
        "templates" => {
            let sizes = templates::Sizes {
                rows: q(50_000, 1_000_000),
                unique_rows: q(200_000, 10_000_000),
            };
            templates::run(stack, &sizes, index).await
        }
        "fairness" => fairness::run(q(300, 2_000) as usize, index).await,
        "limits" => limits::run(q(10, 60), index).await,
        "template-compile" => template_compile::run(q(5, 20), index).await,
        "purge" => {
            let rows = match std::env::var("BENCH_PURGE_ROWS") {
                Ok(n) => n.parse().context("BENCH_PURGE_ROWS")?,
                Err(_) => q(200_000, 10_000_000) as i64,
            };
            purge::run(rows).await
        }
        "tus" => tus::run(tus::size(q(64, 1024) * 1024 * 1024)).await,
        "corrections" => corrections::run(stack, q(50_000, 1_000_000), q(50, 200)).await,
        "hooks" => hooks::run(stack, q(100_000, 1_000_000)).await,
        "keyset" => {
            let rows = match std::env::var("BENCH_KEYSET_ROWS") {
                Ok(n) => n.parse().context("BENCH_KEYSET_ROWS")?,
                Err(_) => q(2_000_000, 100_000_000) as i64,
            };
            keyset::run(rows).await
        }
        "row-store-migration" => {
            let rows = match std::env::var("BENCH_MIGRATION_ROWS") {
                Ok(n) => n.parse().context("BENCH_MIGRATION_ROWS")?,
                Err(_) => q(1_000_000, 20_000_000) as i64,
            };
            row_store_migration::run(rows).await
        }
        "event-log" => {
            let per_day = match std::env::var("BENCH_EVENT_LOG_EVENTS") {
                Ok(n) => n.parse().context("BENCH_EVENT_LOG_EVENTS")?,
                Err(_) => q(50_000, 1_000_000) as i64,
            };
            event_log::run(per_day).await
        }
        other => bail!("unknown scenario {other}"),
    }
}

fn machine() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("")
        .trim()
        .to_owned();
    let mem_kb: u64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    serde_json::json!({
        "cpu": model,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "mem_gib": mem_kb as f64 / 1024.0 / 1024.0,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "loadavg_at_end": read("/proc/loadavg").trim(),
    })
}
