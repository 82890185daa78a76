//! The worker as scale-to-zero jobs under the local KEDA-like scaler (`harness::scaler`): bursts
//! of uploads with idle gaps, `kill -9` of job replicas mid-work, several replicas racing on the
//! same queue; and the shape `deploy/` runs (an always-on relay, killed and restarted, beside
//! consumer-only jobs scaled on the queue alone). Every task must end COMPLETED with its rows
//! stored exactly once, and no job may run while there is nothing to do. Test-speed leases and
//! polling keep it within seconds.

use std::sync::Arc;
use std::time::Duration;

use harness::scaler::{JobCommand, Scaler, ScalerConfig};
use harness::worker::{eventually, eventually_some, slow_parser, Upload, WorkerEnv};
use shared::domain::TaskStatus;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// A CSV with a header and `rows` data rows.
fn csv(rows: usize) -> Vec<u8> {
    let mut s = String::from("id,name\n");
    for i in 0..rows {
        s.push_str(&format!("{i},name {i}\n"));
    }
    s.into_bytes()
}

/// Uploads `n` files, the i-th with `i % 7 + 1` rows; returns each upload and its row count.
async fn burst(env: &WorkerEnv, tag: &str, n: usize) -> Vec<(Upload, i64)> {
    let mut out = Vec::new();
    for i in 0..n {
        let rows = i % 7 + 1;
        let upload = env
            .create_upload(&format!("{tag}-{i}.csv"), &csv(rows))
            .await;
        out.push((upload, rows as i64));
    }
    out
}

async fn all_completed(env: &WorkerEnv, uploads: &[(Upload, i64)], scaler: &Scaler) {
    let ids: Vec<Uuid> = uploads.iter().map(|(u, _)| u.task_id).collect();
    let want = ids.len() as i64;
    let done = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM tasks WHERE id = ANY($1) AND status = 'COMPLETED'",
        )
        .bind(&ids)
        .fetch_one(&env.db)
        .await
        .is_ok_and(|n| n == want)
    };
    for _ in 0..600 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "not every task COMPLETED within 30 s; {:?}; logs:\n{}",
        scaler.report(),
        scaler.logs()
    );
}

/// The KEDA-like scaler at test speed (polls every 200 ms, 5 messages per job, at most 4 jobs),
/// running until the returned token is cancelled; `backlog_target`: also scale on the outbox.
fn start_scaler(
    env: &WorkerEnv,
    backlog_target: Option<u64>,
    job: JobCommand,
    logs: &std::path::Path,
) -> (Arc<Scaler>, CancellationToken, tokio::task::JoinHandle<()>) {
    let scaler = Scaler::new(
        ScalerConfig {
            polling_interval: Duration::from_millis(200),
            queue_length: 5,
            backlog_target,
            max_executions: 4,
        },
        env.queue.clone(),
        env.db.clone(),
        job,
        logs.to_owned(),
    )
    .expect("scaler");
    let stop = CancellationToken::new();
    let looping = {
        let (scaler, stop) = (Arc::clone(&scaler), stop.clone());
        tokio::spawn(async move { scaler.run(&stop).await })
    };
    (scaler, stop, looping)
}

/// Waits until no job runs and the scaler has since polled `polls` times without starting one.
async fn scaled_to_zero(scaler: &Scaler, polls: usize) {
    let idle_from = eventually_some(Duration::from_secs(30), "every job to exit", || async {
        (scaler.running() == 0).then(|| scaler.report())
    })
    .await;
    eventually(Duration::from_secs(10), "idle polls", || async {
        scaler.report().polls >= idle_from.polls + polls
    })
    .await;
    let now = scaler.report();
    assert_eq!(
        now.executions, idle_from.executions,
        "a job was started with nothing to do: {now:?}"
    );
    assert_eq!(scaler.running(), 0);
}

#[tokio::test]
async fn drain_jobs_under_a_keda_like_scaler_finish_every_upload_once_and_scale_to_zero() {
    let env = Arc::new(WorkerEnv::new().await);
    // The first parse of each parse child takes 300 ms: kills land on running parses.
    let parser = slow_parser(Duration::from_millis(300));
    let logs = tempfile::tempdir().expect("log dir");
    let job = {
        let (env, parser) = (Arc::clone(&env), parser.to_path_buf());
        move |_execution: usize| {
            let mut cmd = env.command(&["run", "--drain"]);
            cmd.env("PARSER_EXE", &parser)
                .env("RELAY_LEASE", "1s")
                .env("VISIBILITY_TIMEOUT", "3s")
                .env("TASK_LEASE", "2s")
                .env("IDLE_BACKOFF_MAX", "200ms");
            cmd
        }
    };
    let (scaler, stop, looping) = start_scaler(&env, Some(5), Box::new(job), logs.path());

    // Nothing to do: nothing runs.
    scaled_to_zero(&scaler, 3).await;
    assert_eq!(scaler.report().executions, 0);

    // Burst 1, then an idle gap.
    let mut uploads = burst(&env, "one", 15).await;
    all_completed(&env, &uploads, &scaler).await;
    scaled_to_zero(&scaler, 3).await;

    // Burst 2: kill -9 a replica twice while tasks are running.
    let second = burst(&env, "two", 25).await;
    // Two different replicas, each still running when killed (a pid that was just killed, or
    // that just exited by itself, is not picked again).
    let mut killed: Vec<u32> = Vec::new();
    while killed.len() < 2 {
        let pid = eventually_some(
            Duration::from_secs(20),
            "a replica with a running task",
            || async {
                let running = env
                    .count("SELECT count(*) FROM tasks WHERE status = 'RUNNING'")
                    .await;
                let pids: Vec<u32> = scaler
                    .running_pids()
                    .into_iter()
                    .filter(|p| !killed.contains(p))
                    .collect();
                (running > 0 && !pids.is_empty())
                    .then(|| pids[Uuid::new_v4().as_u128() as usize % pids.len()])
            },
        )
        .await;
        if scaler.kill(pid) {
            killed.push(pid);
        }
    }
    let kills = killed.len();
    uploads.extend(second);
    all_completed(&env, &uploads, &scaler).await;
    scaled_to_zero(&scaler, 3).await;

    // Burst 3: big enough for the full four replicas, racing on one queue.
    let third = burst(&env, "three", 20).await;
    uploads.extend(third);
    all_completed(&env, &uploads, &scaler).await;
    scaled_to_zero(&scaler, 5).await;
    stop.cancel();
    looping.await.expect("scaler loop");

    let report = scaler.finish(Duration::from_secs(5)).await;
    eprintln!("scaler: {} uploads, {report:?}", uploads.len());
    assert_eq!(kills, 2, "two replicas killed");
    assert_eq!(report.killed, 2, "{report:?}");
    assert!(report.failed.is_empty(), "no job failed: {report:?}");
    assert!(report.max_running >= 2, "replicas raced: {report:?}");
    assert_eq!(
        report.executions,
        report.succeeded + report.killed,
        "every execution ended and was counted: {report:?}"
    );

    // Every file's rows exactly once, in exactly one sheet.
    for (upload, rows) in &uploads {
        let task = env.task(upload.task_id).await;
        assert_eq!(task.status, TaskStatus::Completed);
        assert_eq!(
            env.row_count(upload.source_file_id).await,
            *rows,
            "rows of {}",
            upload.source_file_id
        );
        let sheets: i64 =
            sqlx::query_scalar("SELECT count(*) FROM parsed_sheets WHERE source_file_id = $1")
                .bind(upload.source_file_id)
                .fetch_one(&env.db)
                .await
                .expect("sheets");
        assert_eq!(sheets, 1);
    }
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE status <> 'COMPLETED'")
            .await,
        0
    );
    assert_eq!(env.queue.approximate_length().await.expect("length"), 0);
}

#[tokio::test]
async fn the_deployed_shape_an_always_on_relay_and_consumer_jobs_survives_kills_of_both() {
    // As deploy/ runs it: one relay replica always on (restarted by the platform when it dies),
    // consumer-only drain jobs scaled on the queue alone.
    let env = Arc::new(WorkerEnv::new().await);
    let parser = slow_parser(Duration::from_millis(300));
    let logs = tempfile::tempdir().expect("log dir");
    let relay = || {
        let mut cmd = env.command(&["run", "--role", "relay"]);
        cmd.env("RELAY_LEASE", "1s");
        harness::worker::WorkerProcess::spawn(cmd)
    };
    let mut relay_process = relay();
    let job = {
        let (env, parser) = (Arc::clone(&env), parser.to_path_buf());
        move |_execution: usize| {
            let mut cmd = env.command(&["run", "--role", "consumer", "--drain"]);
            cmd.env("PARSER_EXE", &parser)
                .env("VISIBILITY_TIMEOUT", "3s")
                .env("TASK_LEASE", "2s")
                .env("IDLE_BACKOFF_MAX", "200ms");
            cmd
        }
    };
    let (scaler, stop, looping) = start_scaler(&env, None, Box::new(job), logs.path());
    scaled_to_zero(&scaler, 3).await;

    // The relay is killed in the middle of a burst and started again at once, as the platform
    // does; a consumer job is killed while it parses.
    let mut uploads = burst(&env, "before", 10).await;
    relay_process.child.start_kill().expect("kill -9 the relay");
    relay_process.child.wait().await.expect("reap the relay");
    let claims_left = env
        .count("SELECT count(*) FROM outbox_messages WHERE status = 'PROCESSING'")
        .await;
    relay_process = relay();
    uploads.extend(burst(&env, "after", 15).await);
    let pid = eventually_some(
        Duration::from_secs(20),
        "a consumer job with a running task",
        || async {
            let running = env
                .count("SELECT count(*) FROM tasks WHERE status = 'RUNNING'")
                .await;
            (running > 0).then(|| scaler.running_pids().first().copied())?
        },
    )
    .await;
    let killed_job = scaler.kill(pid);
    all_completed(&env, &uploads, &scaler).await;
    scaled_to_zero(&scaler, 3).await;
    stop.cancel();
    looping.await.expect("scaler loop");
    let report = scaler.finish(Duration::from_secs(5)).await;
    eprintln!(
        "deployed shape: {} uploads, relay killed with {claims_left} claims held, a job killed: \
         {killed_job}, {report:?}",
        uploads.len()
    );
    assert!(report.failed.is_empty(), "no job failed: {report:?}");
    assert_eq!(report.executions, report.succeeded + report.killed);
    for (upload, rows) in &uploads {
        assert_eq!(env.task(upload.task_id).await.status, TaskStatus::Completed);
        assert_eq!(env.row_count(upload.source_file_id).await, *rows);
    }
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE status <> 'COMPLETED'")
            .await,
        0
    );
    assert_eq!(env.queue.approximate_length().await.expect("length"), 0);
    assert!(
        relay_process.child.try_wait().expect("relay").is_none(),
        "the relay is still running:\n{}",
        relay_process.log()
    );
}
