//! Scenarios 1 and 2: the outbox relay's throughput against Azurite's own ceiling, and the
//! latency from an upload's commit to its message being visible in the queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::StreamExt as _;
use harness::worker::WorkerEnv;
use shared::domain::{Envelope, MessageEncoding};
use shared::storage::QueueClient;
use uuid::Uuid;

use crate::env::{self, Stack};
use crate::procs::{self, CpuMeter};
use crate::report::{quantile, Run};

/// The relay's default send concurrency (`RELAY_CONCURRENCY`), used by the plain sender too.
const RELAY_CONCURRENCY: usize = 32;

/// Pause of the latency probe after an empty receive.
const PROBE_IDLE_MS: u64 = 5;

/// Inserts `n` PENDING outbox rows in one statement.
async fn insert_pending(env: &WorkerEnv, n: i64) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO outbox_messages (id, event_type, payload)
         SELECT gen_random_uuid(), $2,
                jsonb_build_object('task_id', gen_random_uuid(), 'source_file_id', gen_random_uuid())
         FROM generate_series(1, $1)",
    )
    .bind(n)
    .bind(shared::domain::PARSE_TASK)
    .execute(&env.db)
    .await?;
    Ok(())
}

/// The bodies the relay sends for the rows in `env`'s outbox.
async fn bodies(env: &WorkerEnv) -> anyhow::Result<Vec<String>> {
    let rows: Vec<(
        Uuid,
        String,
        serde_json::Value,
        chrono::DateTime<chrono::Utc>,
    )> = sqlx::query_as("SELECT id, event_type, payload, created_at FROM outbox_messages")
        .fetch_all(&env.db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(message_id, event_type, payload, created_at)| {
            Envelope {
                message_id,
                event_type,
                payload,
                created_at,
            }
            .encode(MessageEncoding::Base64)
        })
        .collect())
}

/// The relay measured alone: its rows are one tenant's outbox messages without tasks, so the
/// tenant's fair share (`RELAY_TENANT_IN_FLIGHT`, 16 by default) would cap each claim at 16 rows
/// instead of a batch; a share above any batch leaves the claim as large as the relay's.
const RELAY_ALONE: [(&str, &str); 1] = [("RELAY_TENANT_IN_FLIGHT", "1000000")];

/// Scenario 1 (and its scale-out form): `n` rows, `relays` relay processes in drain mode; and,
/// with `ceiling`, the same bodies sent by a plain concurrent sender into a fresh queue of the
/// same Azurite — before the relay on odd runs, after it on even runs (Azurite slows down as it
/// holds more messages, so whichever goes second is handicapped; alternating evens that out).
pub async fn throughput(
    stack: &Stack,
    n: i64,
    relays: usize,
    ceiling: bool,
    run_index: usize,
) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    insert_pending(&env, n).await?;
    let mut run = Run::default();
    let bodies = bodies(&env).await?;
    let ceiling_first = run_index % 2 == 1;
    let mut ceiling_rate = None;
    if ceiling && ceiling_first {
        ceiling_rate = Some(plain_sender(stack, &env, &bodies, relays, &mut run).await?);
    }

    let cpu = CpuMeter::start(vec![
        ("postgres", vec![stack.pg_pid]),
        ("azurite", vec![stack.azurite_pid]),
    ]);
    let reaped0 = procs::reaped_children_secs();
    let t0 = Instant::now();
    let mut children = Vec::new();
    for _ in 0..relays {
        children.push(env::spawn_worker(&env, "relay", true, &RELAY_ALONE)?);
    }
    for c in &mut children {
        let status = tokio::time::timeout(Duration::from_secs(600), c.wait())
            .await
            .context("relay did not drain within 10 minutes")??;
        if !status.success() {
            bail!("relay exited with {status}");
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let mut cpu = cpu.finish();
    cpu.push(("worker", procs::reaped_children_secs() - reaped0));

    let completed = env::count(
        &env.db,
        "SELECT count(*) FROM outbox_messages WHERE status = 'COMPLETED' AND attempts = 1",
    )
    .await?;
    let in_queue = env.queue.approximate_length().await? as i64;
    let relay_rate = n as f64 / secs;
    run.put("relay_msgs_per_s", "msg/s", relay_rate);
    run.put("relay_seconds", "s", secs);
    run.put("queue_messages_minus_rows", "msg", (in_queue - n) as f64);
    run.put("rows_not_completed_once", "rows", (n - completed) as f64);
    env::cpu_per_1k(&mut run, &cpu, n as f64);

    if ceiling && !ceiling_first {
        ceiling_rate = Some(plain_sender(stack, &env, &bodies, relays, &mut run).await?);
    }
    if let Some(c) = ceiling_rate {
        run.put("ratio_to_ceiling", "", relay_rate / c);
        run.note(format!(
            "relay-throughput: {n} rows; the ceiling is {} concurrent plain sends of the same base64 envelopes into a fresh queue of the same Azurite (before the relay on odd runs, after it on even runs)",
            RELAY_CONCURRENCY * relays
        ));
    }
    Ok(run)
}

/// Azurite's ceiling: the same bodies, the relay's concurrency, nothing else.
async fn plain_sender(
    stack: &Stack,
    env: &WorkerEnv,
    bodies: &[String],
    relays: usize,
    run: &mut Run,
) -> anyhow::Result<f64> {
    let n = bodies.len() as f64;
    let queue = QueueClient::new(&env.storage, &harness::services::unique_name("ceiling"))?;
    queue.ensure_exists().await?;
    let concurrency = RELAY_CONCURRENCY * relays;
    let az = CpuMeter::start(vec![("azurite", vec![stack.azurite_pid])]);
    let self0 = procs::self_secs();
    let t0 = Instant::now();
    let failures = futures::stream::iter(bodies.iter())
        .map(|b| {
            let q = queue.clone();
            async move { q.send(b).await.is_err() }
        })
        .buffer_unordered(concurrency)
        .filter(|failed| std::future::ready(*failed))
        .count()
        .await;
    let secs = t0.elapsed().as_secs_f64();
    let az = az.finish();
    let ceiling = (n - failures as f64) / secs;
    run.put("ceiling_msgs_per_s", "msg/s", ceiling);
    run.put(
        "ceiling.cpu_s_per_1k.sender",
        "s",
        (procs::self_secs() - self0) / (n / 1000.0),
    );
    run.put("ceiling.cpu_s_per_1k.azurite", "s", az[0].1 / (n / 1000.0));
    Ok(ceiling)
}

/// Scenario 2: a steady `rate` uploads/s for `duration`, each committed as the api commits them
/// (source file + task + outbox row in one transaction); a receiver polls the queue and stamps
/// each message's arrival.
pub async fn latency(stack: &Stack, rate: u32, duration: Duration) -> anyhow::Result<Run> {
    let env = env::fresh_env().await;
    let mut run = Run::default();
    let reaped0 = procs::reaped_children_secs();
    // No consumer runs here, so no task ever finishes: with the default fair share the relay
    // would stop at a tenant's 16 in flight and every later message would be "missing".
    let mut relay = env::spawn_worker(&env, "relay", false, &RELAY_ALONE)?;
    // Let it start and LISTEN.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let commits: Arc<Mutex<HashMap<Uuid, Instant>>> = Arc::default();
    let arrivals: Arc<Mutex<HashMap<Uuid, Instant>>> = Arc::default();
    let stop = tokio_util_stop();
    let mut receivers = Vec::new();
    for i in 0..1u64 {
        let (q, arrivals, stop) = (env.queue.clone(), Arc::clone(&arrivals), stop.clone());
        receivers.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(i * 3)).await;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok(batch) = q.receive(32, Duration::from_secs(60)).await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let now = Instant::now();
                if batch.is_empty() {
                    tokio::time::sleep(Duration::from_millis(PROBE_IDLE_MS)).await;
                    continue;
                }
                for m in batch {
                    if let Ok(e) = Envelope::decode(&m.body) {
                        if let Ok(mut a) = arrivals.lock() {
                            a.entry(e.message_id).or_insert(now);
                        }
                    }
                    let q = q.clone();
                    tokio::spawn(async move { q.delete(&m.id, &m.pop_receipt).await });
                }
            }
        }));
    }

    let cpu = CpuMeter::start(vec![
        ("postgres", vec![stack.pg_pid]),
        ("azurite", vec![stack.azurite_pid]),
        ("worker", vec![relay.id().unwrap_or(0)]),
    ]);
    let total = (rate as f64 * duration.as_secs_f64()) as usize;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut producers = tokio::task::JoinSet::new();
    for _ in 0..total {
        tick.tick().await;
        let (db, commits) = (env.db.clone(), Arc::clone(&commits));
        producers.spawn(async move {
            let mut tx = db.begin().await?;
            let (outbox_id, _) = env::insert_upload(&mut tx, None, "csv", 100, None).await?;
            tx.commit().await?;
            let now = Instant::now();
            if let Ok(mut c) = commits.lock() {
                c.insert(outbox_id, now);
            }
            anyhow::Ok(())
        });
    }
    while let Some(r) = producers.join_next().await {
        r??;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while arrivals.lock().map(|a| a.len()).unwrap_or(0) < total && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cpu = cpu.finish();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in receivers {
        let _ = r.await;
    }
    env::terminate(&mut relay).await;
    let _ = reaped0;

    let commits = commits.lock().map(|c| c.clone()).unwrap_or_default();
    let arrivals = arrivals.lock().map(|a| a.clone()).unwrap_or_default();
    let lat: Vec<f64> = commits
        .iter()
        .filter_map(|(id, c)| {
            arrivals
                .get(id)
                .map(|a| a.saturating_duration_since(*c).as_secs_f64() * 1000.0)
        })
        .collect();
    run.put("p50_ms", "ms", quantile(&lat, 0.50));
    run.put("p99_ms", "ms", quantile(&lat, 0.99));
    run.put("max_ms", "ms", quantile(&lat, 1.0));
    run.put("missing", "msg", (total - lat.len()) as f64);
    env::cpu_per_1k(&mut run, &cpu, total as f64);
    run.note(format!(
        "relay-latency: {total} uploads at {rate}/s; arrival is stamped when a receive returns (one receiver polling back to back, {PROBE_IDLE_MS} ms pause when empty: a tighter probe saturates Azurite's one core and becomes the bottleneck itself), so each figure includes up to one receive round trip"
    ));
    Ok(run)
}

fn tokio_util_stop() -> Arc<std::sync::atomic::AtomicBool> {
    Arc::new(std::sync::atomic::AtomicBool::new(false))
}
