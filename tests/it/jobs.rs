//! The worker binary as a job replica: a drain job started after another was killed finishes the
//! work the dead one held (its outbox claims and its running task) before exiting 0; the bounds
//! `--max-messages` and `--max-runtime` stop it cleanly with in-flight work finished; invalid
//! settings exit 2, distinct from "done" (0) and "failed" (1).

use std::time::Duration;

use harness::worker::{slow_parser, WorkerEnv, WorkerProcess, SAMPLE_CSV};
use shared::db;
use shared::domain::{OutboxStatus, TaskStatus};

#[tokio::test]
async fn a_drain_job_started_after_a_killed_one_finishes_the_work_the_dead_one_held() {
    let env = WorkerEnv::new().await;
    let uploads = [
        env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await,
        env.create_upload("b.csv", SAMPLE_CSV.as_bytes()).await,
        env.create_upload("c.csv", SAMPLE_CSV.as_bytes()).await,
    ];
    // The dead replica's relay had claimed the first outbox row (a 4 s claim it no longer
    // renews; the new job starts well within it)…
    let claimed = db::outbox::claim_batch(&env.db, 1, Duration::from_secs(4), 64)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    // …had sent the other two, and its consumer was parsing one of them (message invisible for
    // 3 s, task leased for 2 s).
    let sent = env
        .relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    assert_eq!(sent.sent, 2);
    let held = env
        .queue
        .receive(1, Duration::from_secs(3))
        .await
        .expect("receive");
    assert_eq!(held.len(), 1);
    let envelope = shared::domain::Envelope::decode(&held[0].body).expect("envelope");
    let task_id = envelope.parse_task().expect("payload").task_id;
    db::tasks::start(&env.db, task_id, Duration::from_secs(2), 1)
        .await
        .expect("start")
        .expect("the task was free");

    // Its own claims would last 8 s: it waits that long at most for the dead one's.
    let mut cmd = env.command(&["run", "--drain"]);
    cmd.env("RELAY_LEASE", "8s");
    let mut job = WorkerProcess::spawn(cmd);
    let status = job.wait(Duration::from_secs(60)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", job.log());
    for u in &uploads {
        let task = env.task(u.task_id).await;
        assert_eq!(task.status, TaskStatus::Completed, "log:\n{}", job.log());
        assert_eq!(env.row_count(u.source_file_id).await, 2);
        assert_eq!(
            env.outbox(u.outbox_id).await.status,
            OutboxStatus::Completed
        );
    }
    assert_eq!(
        env.task(task_id).await.attempts,
        2,
        "the held task was taken over"
    );
    assert_eq!(env.queue.approximate_length().await.expect("length"), 0);
    let log = job.log();
    assert!(
        log.contains("waiting for outbox claims held by another relay"),
        "log:\n{log}"
    );
}

#[tokio::test]
async fn max_messages_stops_taking_work_and_exits_zero_with_the_rest_left_queued() {
    let env = WorkerEnv::new().await;
    env.create_uploads(5, SAMPLE_CSV.as_bytes(), 5).await;
    let mut worker = WorkerProcess::spawn(env.command(&["run", "--max-messages", "2"]));
    let status = worker.wait(Duration::from_secs(60)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", worker.log());
    assert_eq!(
        env.count("SELECT count(*) FROM tasks WHERE status = 'COMPLETED'")
            .await,
        2,
        "log:\n{}",
        worker.log()
    );
    assert_eq!(
        env.count("SELECT count(*) FROM tasks WHERE status = 'PENDING'")
            .await,
        3
    );
    // The relay had sent all five in its first batch: three wait for the next replica.
    assert_eq!(env.queue.approximate_length().await.expect("length"), 3);
    assert!(worker.log().contains("max messages taken"));
}

#[tokio::test]
async fn max_runtime_stops_taking_work_finishes_the_parse_in_hand_and_exits_zero() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    // The parse outlasts the runtime: it started before the bound and is finished after it.
    let parser = slow_parser(Duration::from_secs(4));
    let mut cmd = env.command(&["run"]);
    cmd.env("PARSER_EXE", &parser)
        .env("WORKER_MAX_RUNTIME", "3s")
        .env("VISIBILITY_TIMEOUT", "10s")
        .env("TASK_LEASE", "8s");
    let mut worker = WorkerProcess::spawn(cmd);
    let status = worker.wait(Duration::from_secs(30)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", worker.log());
    let log = worker.log();
    assert!(log.contains("max runtime reached"), "log:\n{log}");
    let task = env.task(upload.task_id).await;
    assert_eq!(task.status, TaskStatus::Completed, "log:\n{log}");
    assert_eq!(env.row_count(upload.source_file_id).await, 2);
}

#[tokio::test]
async fn an_invalid_setting_exits_2_not_0_or_1() {
    let env = WorkerEnv::new().await;
    for (flag, value) in [("--max-messages", "0"), ("--max-runtime", "soon")] {
        let out = env
            .command(&["run", flag, value])
            .output()
            .await
            .expect("run worker");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {value}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test]
async fn a_drain_job_does_not_idle_until_a_delayed_message_comes_back() {
    let env = WorkerEnv::new().await;
    // A message waiting for a retry, hidden far longer than the job's visibility timeout: no
    // consumer can have it, so the job has nothing to wait for.
    env.queue
        .send_hidden("a retry, due in ten minutes", Duration::from_secs(600))
        .await
        .expect("send");
    let mut cmd = env.command(&["run", "--role", "consumer", "--drain"]);
    cmd.env("VISIBILITY_TIMEOUT", "3s").env("TASK_LEASE", "2s");
    let mut job = WorkerProcess::spawn(cmd);
    let status = job.wait(Duration::from_secs(60)).await;
    let log = job.log();
    assert!(status.success(), "exit {status:?}; log:\n{log}");
    assert!(
        log.contains("stayed invisible for a whole visibility timeout"),
        "log:\n{log}"
    );
    assert_eq!(
        env.queue.approximate_length().await.expect("length"),
        1,
        "left to the next execution"
    );
}
