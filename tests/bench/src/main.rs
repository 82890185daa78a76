//! `bench`: the benchmark suite of issue 5. Starts its own Postgres and Azurite exactly as the
//! integration tests do (`harness::services`), runs each scenario against the release `api` and
//! `worker` binaries, prints a table (median of the runs with min–max, targets met or not) and
//! writes `target/bench/results.json`.
//!
//! ```text
//! cargo run -p bench --release -- all                # every scenario, full sizes
//! cargo run -p bench --release -- relay-latency      # one scenario
//! cargo run -p bench --release -- all --quick        # small sizes, one run: a smoke test
//! options: --runs N (default 3), --out FILE
//! ```
#![allow(clippy::print_stdout)]

mod env;
mod gen;
mod parse;
mod procs;
mod relay;
mod report;
mod upload;

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use report::{Run, ScenarioResult};

const SCENARIOS: [&str; 7] = [
    "relay-throughput",
    "relay-latency",
    "upload",
    "upload-1gib",
    "e2e",
    "parse",
    "scale-out",
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
    let opts = options()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(opts))
}

async fn run(opts: Options) -> anyhow::Result<()> {
    env::build_binaries()?;
    eprintln!("starting Postgres and Azurite (harness::services)…");
    let stack = env::Stack::start().await?;
    let started = chrono::Utc::now();
    let mut results: Vec<ScenarioResult> = Vec::new();
    for name in &opts.scenarios {
        let t0 = Instant::now();
        let mut runs = Vec::new();
        let mut error = None;
        let n_runs = opts.runs.min(max_runs(name));
        for i in 0..n_runs {
            eprintln!("[{name}] run {}/{n_runs}", i + 1);
            match scenario(&stack, name, opts.quick).await {
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
        "relay-throughput" | "e2e" | "parse" => 2,
        "scale-out" => 1,
        _ => usize::MAX,
    }
}

async fn scenario(stack: &env::Stack, name: &str, quick: bool) -> anyhow::Result<Run> {
    let q = |quick_value: u64, full_value: u64| if quick { quick_value } else { full_value };
    match name {
        "relay-throughput" => relay::throughput(stack, q(2_000, 20_000) as i64, 1, true).await,
        "relay-latency" => relay::latency(stack, 50, Duration::from_secs(q(5, 30))).await,
        "upload" => upload::uploads(stack, q(200, 2_000) as usize).await,
        "upload-1gib" => upload::one_big(q(64, 1024) * 1024 * 1024).await,
        "e2e" => {
            upload::e2e(
                stack,
                q(100, 500) as usize,
                1,
                Some((50, Duration::from_secs(q(5, 20)))),
            )
            .await
        }
        "parse" => {
            let sizes = parse::Sizes {
                csv_rows: q(50_000, 1_000_000),
                xlsx_rows: q(20_000, 1_000_000),
                ods_rows: q(10_000, 100_000),
                big_csv_rows: q(0, 7_500_000),
                store: true,
            };
            parse::run(stack, &sizes).await
        }
        "scale-out" => {
            let mut run = Run::default();
            for workers in [1, 2] {
                let r = relay::throughput(stack, q(2_000, 20_000) as i64, workers, false).await?;
                run.extend(&format!("relay.{workers}w."), r);
                let r = upload::e2e(stack, q(100, 500) as usize, workers, None).await?;
                run.extend(&format!("e2e.{workers}w."), r);
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
            run.note("scale-out: 1w/2w = one or two `worker run` processes (relay: --role relay --drain; e2e: --role all, api in front); duplicates = tasks with attempts ≠ 1 + files without exactly 20 rows + outbox rows sent ≠ once + queue length ≠ rows");
            Ok(run)
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
