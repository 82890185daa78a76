//! `fairness`: the noisy neighbour. Tenant A's backlog of small files is stored, the worker
//! starts, and half a second later tenant B uploads 20 files one by one: how long B's tasks take
//! from upload to `COMPLETED`, how many of A's finish after B's last, and how fast A's backlog is
//! worked off. Measured with the relay's fair share (`RELAY_TENANT_IN_FLIGHT`, [`fair`]) and
//! without it (a share larger than any backlog: first come, first served, as before), each on a
//! fresh database and queue, in alternating order from run to run; then once more with A's
//! uploads streaming in while B uploads (no backlog), with the fair share; and the backlog once
//! more in the deployed shape (an always-on relay, consumer jobs scaled from zero), with the
//! share and without.

use std::time::{Duration, Instant};

use harness::worker::WorkerEnv;

use crate::env::{self, ApiProcess};
use crate::jobs::ScaledConsumers;
use crate::report::Run;
use crate::upload::{self, small_csv};

/// Tenant B: another tenant than the api's own key (the default tenant, A).
const TENANT_B: &str = "bench-b";
const B_UPLOADS: usize = 20;
/// The fair share for one worker of 8 consumer slots: twice its slots, as `docs/scaling.md`
/// advises (and the setting's default); `RELAY_TENANT_IN_FLIGHT` in the bench's environment
/// measures another.
fn fair() -> String {
    std::env::var("RELAY_TENANT_IN_FLIGHT").unwrap_or_else(|_| "16".into())
}
/// No share at all: larger than any backlog.
const UNFAIR: &str = "1000000";

/// What one phase measured.
struct Phase {
    b_p50_ms: f64,
    b_p99_ms: f64,
    /// Where B's p99 went: from the upload's commit until the relay sent it, and from then until
    /// a consumer started it.
    b_relay_p99_ms: f64,
    b_queue_p99_ms: f64,
    /// A's tasks that finished after B's last.
    a_after_b: i64,
    /// A's tasks per second, from the worker's start to A's last.
    a_tasks_per_s: f64,
}

pub async fn run(a_uploads: usize, index: usize) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let fair = fair();
    let mut order = [fair.as_str(), UNFAIR];
    if index % 2 == 1 {
        order.reverse();
    }
    backlog(&mut run, "backlog", a_uploads, order, Shape::OneWorker).await?;
    let p = phase(a_uploads, false, &fair, Shape::OneWorker).await?;
    put(&mut run, "streaming.fair", &p);
    // The deployed shape: the backlog again, with an always-on relay and consumer jobs.
    backlog(&mut run, "deployed", a_uploads, order, Shape::Deployed).await?;
    run.note(format!(
        "fairness: tenant A uploads {a_uploads} 20-row CSVs through the api (backlog: with no worker running; streaming: while the worker runs, 16 at a time), tenant B uploads {B_UPLOADS} one by one starting 0.5 s after the worker (backlog) or A's first upload (streaming); latency = tasks.finished_at − created_at; fair = RELAY_TENANT_IN_FLIGHT {fair} (16, the default, is twice the worker's 8 consumer slots), fifo = {UNFAIR} (first come, first served); each phase on a fresh database and queue, one `worker run` (relay and consumer); deployed = the backlog with an always-on `worker run --role relay` and `worker run --role consumer --drain` jobs started by the local scaler as deploy/ sets it up (polling every {DEPLOYED_POLLING:?}, queueLength 5, maxExecutions 20), started once the relay has sent A's first messages"
    ));
    Ok(run)
}

/// A's backlog and B's uploads with each share of `order`, and A's throughput with the fair
/// share over that without.
async fn backlog(
    run: &mut Run,
    prefix: &str,
    a_uploads: usize,
    order: [&str; 2],
    shape: Shape,
) -> anyhow::Result<()> {
    let mut rates = [0.0_f64; 2];
    for share in order {
        let fifo = share == UNFAIR;
        let label = if fifo { "fifo" } else { "fair" };
        let p = phase(a_uploads, true, share, shape).await?;
        put(run, &format!("{prefix}.{label}"), &p);
        rates[usize::from(fifo)] = p.a_tasks_per_s;
    }
    run.put(
        format!("{prefix}.a_throughput_fair_over_fifo_pct"),
        "%",
        rates[0] / rates[1] * 100.0,
    );
    Ok(())
}

fn put(run: &mut Run, prefix: &str, p: &Phase) {
    run.put(format!("{prefix}.b_p50_ms"), "ms", p.b_p50_ms);
    run.put(format!("{prefix}.b_p99_ms"), "ms", p.b_p99_ms);
    run.put(format!("{prefix}.b_relay_p99_ms"), "ms", p.b_relay_p99_ms);
    run.put(format!("{prefix}.b_queue_p99_ms"), "ms", p.b_queue_p99_ms);
    run.put(format!("{prefix}.a_after_b"), "task", p.a_after_b as f64);
    run.put(format!("{prefix}.a_tasks_per_s"), "task/s", p.a_tasks_per_s);
}

/// Where the worker's loops run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One `worker run`: relay and consumer in one process.
    OneWorker,
    /// As deploy/ runs them: an always-on relay, consumers as jobs the scaler starts from zero.
    Deployed,
}

/// deploy/'s KEDA polling interval (`pollingInterval`, 30 s by default).
const DEPLOYED_POLLING: Duration = Duration::from_secs(30);

async fn phase(
    a_uploads: usize,
    backlog: bool,
    share: &str,
    shape: Shape,
) -> anyhow::Result<Phase> {
    let env = env::fresh_env().await;
    let api = env::spawn_api(&env, 100 * 1024 * 1024).await?;
    let b_client = env::tenant_client(&env, Some(TENANT_B)).await?;
    let extra = [("RELAY_TENANT_IN_FLIGHT", share)];
    let result = async {
        if backlog {
            let (_, _, failed) = upload::upload_many(&api, a_uploads, 16).await;
            anyhow::ensure!(failed == 0, "{failed} of A's uploads failed");
        }
        // Killed on drop if anything below fails.
        let (mut worker, consumers) = match shape {
            Shape::OneWorker => (env::spawn_worker(&env, "all", false, &extra)?, None),
            Shape::Deployed => {
                let relay = env::spawn_worker(&env, "relay", false, &extra)?;
                // The relay has been running all along: the consumers start on a queue that
                // holds what it sent.
                let deadline = Instant::now() + Duration::from_secs(60);
                while env.queue.approximate_length().await? == 0 {
                    anyhow::ensure!(Instant::now() < deadline, "the relay sent nothing");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let consumers = ScaledConsumers::start(&env, DEPLOYED_POLLING, 5, &[])?;
                (relay, Some(consumers))
            }
        };
        let started = chrono::Utc::now();
        let a = async {
            if !backlog {
                let (_, _, failed) = upload::upload_many(&api, a_uploads, 16).await;
                anyhow::ensure!(failed == 0, "{failed} of A's uploads failed");
            }
            Ok(())
        };
        let b = b_one_by_one(&api, &b_client);
        let (a, b) = tokio::join!(a, b);
        a?;
        b?;
        upload::wait_final(
            &env,
            (a_uploads + B_UPLOADS) as i64,
            Duration::from_secs(600),
        )
        .await?;
        let phase = measure(&env, started).await;
        if let Some(consumers) = consumers {
            consumers.finish().await?;
        }
        env::terminate(&mut worker).await;
        phase
    }
    .await;
    let mut api = api;
    env::terminate(&mut api.child).await;
    result
}

/// B's uploads, one by one, the first half a second from now.
async fn b_one_by_one(api: &ApiProcess, client: &reqwest::Client) -> anyhow::Result<()> {
    tokio::time::sleep_until((Instant::now() + Duration::from_millis(500)).into()).await;
    let body = small_csv();
    for i in 0..B_UPLOADS {
        upload::upload_once(client, &api.base_url, &body, i).await?;
    }
    Ok(())
}

async fn measure(env: &WorkerEnv, started: chrono::DateTime<chrono::Utc>) -> anyhow::Result<Phase> {
    let (b_p50_ms, b_p99_ms, b_relay_p99_ms, b_queue_p99_ms): (f64, f64, f64, f64) = sqlx::query_as(
        "SELECT (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.finished_at - t.created_at)))::float8 * 1000,
                (percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM t.finished_at - t.created_at)))::float8 * 1000,
                (percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM t.relayed_at - t.created_at)))::float8 * 1000,
                (percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM t.started_at - t.relayed_at)))::float8 * 1000
         FROM tasks t JOIN source_files f ON f.id = t.source_file_id WHERE f.tenant_id = $1",
    )
    .bind(TENANT_B)
    .fetch_one(&env.db)
    .await?;
    let (a_after_b, a_span_s, a_done): (i64, f64, i64) = sqlx::query_as(
        "WITH b AS (SELECT max(t.finished_at) AS last FROM tasks t
                    JOIN source_files f ON f.id = t.source_file_id WHERE f.tenant_id = $1)
         SELECT count(*) FILTER (WHERE t.finished_at > b.last),
                extract(epoch FROM max(t.finished_at) - greatest($2, min(t.created_at)))::float8,
                count(*) FILTER (WHERE t.status = 'COMPLETED')
         FROM tasks t JOIN source_files f ON f.id = t.source_file_id, b
         WHERE f.tenant_id <> $1",
    )
    .bind(TENANT_B)
    .bind(started)
    .fetch_one(&env.db)
    .await?;
    Ok(Phase {
        b_p50_ms,
        b_p99_ms,
        b_relay_p99_ms,
        b_queue_p99_ms,
        a_after_b,
        a_tasks_per_s: a_done as f64 / a_span_s.max(1e-9),
    })
}
