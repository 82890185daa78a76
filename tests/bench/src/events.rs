//! The `events` scenario: webhook delivery by a release `worker run --role webhooks` to a real
//! HTTP receiver on loopback. Tasks fail at a steady 100 per second (each change writes its event
//! and its delivery in its own commit); measured are the time from each event's commit
//! (`events.created_at`, written at the change, on this machine's clock) to its first request at
//! the receiver; a receiver answering 500 for longer than several retry steps, then recovering
//! (events lost, duplicates); and the healthy endpoint's p99 with an endpoint beside it that
//! never answers (`WEBHOOK_TIMEOUT`). The delivery worker's Azure Storage requests are counted
//! (it should make none).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use base64::Engine as _;
use harness::receiver::{Answer, Received, Receiver};
use harness::worker::WorkerEnv;
use shared::db;
use shared::webhooks::{SealingKey, SigningSecret};
use uuid::Uuid;

use crate::env;
use crate::report::{quantile, Run};

const KEY: [u8; 32] = [7; 32];
/// Events per second of every phase.
const RATE: u64 = 100;

pub struct Sizes {
    /// Seconds of steady events in the latency phases.
    pub steady_secs: u64,
    /// Events sent while the receiver fails.
    pub outage_events: usize,
    /// How long the receiver answers 500.
    pub outage: Duration,
}

pub async fn run(sizes: &Sizes) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let n = (sizes.steady_secs * RATE) as usize;

    // 1. Commit → first request, one healthy endpoint.
    let alone = phase(n, &[Answer::Status(204)]).await?;
    let healthy = alone.latencies(0);
    run.put("p50_ms", "ms", quantile(&healthy, 0.5));
    run.put("p99_ms", "ms", quantile(&healthy, 0.99));
    run.put("max_ms", "ms", quantile(&healthy, 1.0));
    run.put("lost", "events", alone.lost(0) as f64);
    run.put("duplicates", "requests", alone.duplicates(0) as f64);
    run.put(
        "worker_storage_requests",
        "req",
        alone.worker_storage_requests,
    );

    // 2. The same beside an endpoint that never answers.
    let beside = phase(n, &[Answer::Status(204), Answer::Hang]).await?;
    let with_slow = beside.latencies(0);
    let p99_alone = quantile(&healthy, 0.99);
    let p99_beside = quantile(&with_slow, 0.99);
    run.put(
        "slow_endpoint.healthy_p50_ms",
        "ms",
        quantile(&with_slow, 0.5),
    );
    run.put("slow_endpoint.healthy_p99_ms", "ms", p99_beside);
    run.put(
        "slow_endpoint.healthy_p99_rise_pct",
        "%",
        (p99_beside - p99_alone) / p99_alone * 100.0,
    );
    run.put(
        "slow_endpoint.timeouts",
        "requests",
        beside.answered(1) as f64,
    );

    // 3. The receiver answers 500 for a while, then 204.
    let outage = outage(sizes).await?;
    run.extend("outage.", outage);

    run.note(format!(
        "events: {RATE} task changes/s (db::tasks::fail, one commit each: its event and delivery rows written by the same statement) to a release `worker run --role webhooks` (WEBHOOK_SECRET_KEY set, private networks allowed, defaults otherwise: WEBHOOK_ENDPOINT_CONCURRENCY 4, WEBHOOK_TIMEOUT 10s); latency = receiver's wall clock at a request − the event's created_at (clock_timestamp() at the change, just before its commit); slow_endpoint: the same {n} events also go to an endpoint that never answers; outage: the receiver answers 500 for {:?} then 204, WEBHOOK_RETRY_SCHEDULE=1s,2s,4s,8s,8s,8s,8s; duplicates = requests answered 2xx beyond one per webhook-id",
        sizes.outage
    ));
    Ok(run)
}

/// What one phase saw: each endpoint's receiver, and the events' commit times.
struct Phase {
    receivers: Vec<Receiver>,
    committed: HashMap<String, chrono::DateTime<chrono::Utc>>,
    worker_storage_requests: f64,
}

impl Phase {
    /// Commit → first request, per event, at endpoint `i`, in ms.
    fn latencies(&self, i: usize) -> Vec<f64> {
        first_requests(&self.receivers[i].received())
            .into_iter()
            .filter_map(|(id, r)| {
                let committed = self.committed.get(&id)?;
                Some((r.wall - *committed).num_microseconds()? as f64 / 1000.0)
            })
            .collect()
    }

    fn lost(&self, i: usize) -> usize {
        let got = first_requests(&self.receivers[i].received());
        self.committed
            .keys()
            .filter(|id| !got.contains_key(*id))
            .count()
    }

    fn duplicates(&self, i: usize) -> usize {
        duplicates(&self.receivers[i].received())
    }

    fn answered(&self, i: usize) -> usize {
        self.receivers[i].received().len()
    }
}

/// Each webhook-id's first request.
fn first_requests(got: &[Received]) -> BTreeMap<String, Received> {
    let mut first = BTreeMap::new();
    for r in got {
        first
            .entry(r.header("webhook-id").to_owned())
            .or_insert_with(|| r.clone());
    }
    first
}

/// Requests answered 2xx beyond one per webhook-id.
fn duplicates(got: &[Received]) -> usize {
    let mut per_id: HashMap<&str, usize> = HashMap::new();
    for r in got {
        if matches!(r.answered, Answer::Status(s) if (200..300).contains(&s)) {
            *per_id.entry(r.header("webhook-id")).or_default() += 1;
        }
    }
    per_id.values().map(|n| n - 1).sum()
}

/// A fresh database with one endpoint per answer, `n` PENDING tasks, and a webhooks worker;
/// fails the tasks at [`RATE`] per second and waits until the first endpoint has every event.
async fn phase(n: usize, answers: &[Answer]) -> anyhow::Result<Phase> {
    let env = env::fresh_env().await;
    let mut receivers = Vec::new();
    for answer in answers {
        let r = Receiver::start().await;
        r.script(vec![], answer.clone());
        register(&env, &r.url()).await?;
        receivers.push(r);
    }
    let tasks = pending_tasks(&env, n).await?;
    let key = base64::engine::general_purpose::STANDARD.encode(KEY);
    let settings = [
        ("WEBHOOK_SECRET_KEY", key.as_str()),
        ("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true"),
    ];
    let (mut worker, metrics) = env::spawn_worker_scraped(&env, "webhooks", false, &settings)?;
    wait_until_listening(&env).await?;
    let storage0 = env::storage_requests(std::slice::from_ref(&metrics)).await?;
    pace(&env, &tasks).await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while first_requests(&receivers[0].received()).len() < n {
        if Instant::now() > deadline {
            bail!(
                "only {} of {n} events reached the receiver in 2 minutes",
                first_requests(&receivers[0].received()).len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let storage1 = env::storage_requests(std::slice::from_ref(&metrics)).await?;
    let _ = worker.kill().await;
    let committed = commit_times(&env).await?;
    Ok(Phase {
        receivers,
        committed,
        worker_storage_requests: storage1.values().sum::<f64>() - storage0.values().sum::<f64>(),
    })
}

/// The receiver fails for `sizes.outage`, then recovers: lost events, duplicates, recovery.
async fn outage(sizes: &Sizes) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let receiver = Receiver::start().await;
    receiver.script(vec![], Answer::Status(500));
    register(&env, &receiver.url()).await?;
    let n = sizes.outage_events;
    let tasks = pending_tasks(&env, n).await?;
    let key = base64::engine::general_purpose::STANDARD.encode(KEY);
    let settings = [
        ("WEBHOOK_SECRET_KEY", key.as_str()),
        ("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true"),
        ("WEBHOOK_RETRY_SCHEDULE", "1s,2s,4s,8s,8s,8s,8s"),
    ];
    let mut worker = env::spawn_worker(&env, "webhooks", false, &settings)?;
    wait_until_listening(&env).await?;
    let t0 = Instant::now();
    pace(&env, &tasks).await?;
    tokio::time::sleep(sizes.outage.saturating_sub(t0.elapsed())).await;
    let failed = receiver.received().len();
    receiver.script(vec![], Answer::Status(204));
    let recovered_at = Instant::now();
    let deadline = recovered_at + Duration::from_secs(120);
    let delivered = |got: &[Received]| {
        got.iter()
            .filter(|r| r.answered == Answer::Status(204))
            .map(|r| r.header("webhook-id").to_owned())
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    while delivered(&receiver.received()) < n {
        if Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recovery = recovered_at.elapsed();
    let _ = worker.kill().await;
    let got = receiver.received();
    let mut run = Run::default();
    run.put("events", "events", n as f64);
    run.put("lost", "events", (n - delivered(&got)) as f64);
    run.put("duplicates", "requests", duplicates(&got) as f64);
    run.put("failed_requests", "requests", failed as f64);
    run.put(
        "all_delivered_after_recovery_s",
        "s",
        recovery.as_secs_f64(),
    );
    let dead = env::count(
        &env.db,
        "SELECT count(*) FROM webhook_deliveries WHERE status = 'DEAD'",
    )
    .await?;
    run.put("dead", "deliveries", dead as f64);
    Ok(run)
}

/// Registers `url` for the default tenant, with a secret sealed under [`KEY`].
async fn register(env: &WorkerEnv, url: &str) -> anyhow::Result<()> {
    let id = Uuid::now_v7();
    let key = SealingKey::from_bytes(&KEY).map_err(anyhow::Error::msg)?;
    let sealed = key.seal(id, &SigningSecret::generate());
    let events: Vec<String> = shared::domain::EventType::ALL
        .iter()
        .map(|t| t.as_str().to_owned())
        .collect();
    db::webhooks::insert(
        &env.db,
        &db::webhooks::NewEndpoint {
            id,
            tenant_id: "default",
            url,
            events: &events,
            description: None,
            sealed_secret: &sealed,
            sealed_event_grid_key: None,
        },
        100,
    )
    .await?
    .context("the endpoint")?;
    Ok(())
}

/// `n` PENDING tasks of the default tenant (no blobs: nothing parses them).
async fn pending_tasks(env: &WorkerEnv, n: usize) -> anyhow::Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(
        "WITH files AS (
             INSERT INTO source_files (id, file_name, content_type, format, size_bytes, sha256,
                                       blob_name, tenant_id)
             SELECT gen_random_uuid(), 'bench.csv', 'text/csv', 'csv', 1, repeat('0', 64),
                    'bench/' || g, 'default'
             FROM generate_series(1, $1) g
             RETURNING id)
         INSERT INTO tasks (id, source_file_id) SELECT gen_random_uuid(), id FROM files
         RETURNING id",
    )
    .bind(i64::try_from(n)?)
    .fetch_all(&env.db)
    .await?)
}

/// The worker is up once its delivery loop LISTENs.
async fn wait_until_listening(env: &WorkerEnv) -> anyhow::Result<()> {
    wait_for_listener(env, "webhook_deliveries").await
}

/// Waits until a worker's loop listens on `channel`: it is up and connected.
pub(crate) async fn wait_for_listener(env: &WorkerEnv, channel: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listening: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' || $1 || '%'",
        )
        .bind(channel)
        .fetch_one(&env.db)
        .await?;
        if listening > 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("no worker started listening on {channel}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Fails the tasks at [`RATE`] per second, each in its own commit.
async fn pace(env: &WorkerEnv, tasks: &[Uuid]) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    for id in tasks {
        tick.tick().await;
        db::tasks::fail(
            &env.db,
            *id,
            None,
            shared::domain::TaskErrorCode::InvalidMessage,
            "bench",
            None,
        )
        .await?;
    }
    Ok(())
}

/// Each event's commit time, by id.
async fn commit_times(
    env: &WorkerEnv,
) -> anyhow::Result<HashMap<String, chrono::DateTime<chrono::Utc>>> {
    let rows: Vec<(Uuid, chrono::DateTime<chrono::Utc>)> =
        sqlx::query_as("SELECT id, created_at FROM events")
            .fetch_all(&env.db)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(id, at)| (id.to_string(), at))
        .collect())
}
