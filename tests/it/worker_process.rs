//! The real `worker` binary as a child process: SIGTERM drains or releases in-flight work,
//! `--drain` exits when the work is done, a database restart loses nothing, a storage outage is
//! logged when it starts and when it ends (not at every retry, ours or the Azure SDK's), a failing
//! loop started again while the process goes on, and the outbox CLI. The binary must be built (see
//! `harness::worker`).

use std::time::Duration;

use harness::outage::OutagePort;
use harness::services::DedicatedPostgres;
use harness::worker::{eventually, slow_parser, WorkerEnv, WorkerProcess, SAMPLE_CSV};
use shared::domain::TaskStatus;

async fn wait_running(env: &WorkerEnv, task_id: uuid::Uuid, worker: &WorkerProcess) {
    let mut seen = false;
    for _ in 0..400 {
        if env.task(task_id).await.status == TaskStatus::Running {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "the task never started; log:\n{}", worker.log());
}

#[tokio::test]
async fn sigterm_lets_in_flight_work_finish_and_exits_zero() {
    let env = WorkerEnv::new().await;
    let parser = slow_parser(Duration::from_secs(2));
    let mut cmd = env.command(&["run"]);
    cmd.env("PARSER_EXE", &parser).env("SHUTDOWN_GRACE", "20s");
    let mut worker = WorkerProcess::spawn(cmd);
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    wait_running(&env, upload.task_id, &worker).await;

    worker.terminate();
    let status = worker.wait(Duration::from_secs(30)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", worker.log());
    let task = env.task(upload.task_id).await;
    assert_eq!(task.status, TaskStatus::Completed, "log:\n{}", worker.log());
    assert_eq!(env.row_count(upload.source_file_id).await, 2);
    assert_eq!(env.queue.approximate_length().await.expect("length"), 0);
}

#[tokio::test]
async fn sigterm_releases_work_that_cannot_finish_within_the_grace_period() {
    let env = WorkerEnv::new().await;
    let parser = slow_parser(Duration::from_secs(60));
    let mut cmd = env.command(&["run"]);
    cmd.env("PARSER_EXE", &parser)
        .env("SHUTDOWN_GRACE", "1s")
        .env("VISIBILITY_TIMEOUT", "60s")
        .env("TASK_LEASE", "60s");
    let mut worker = WorkerProcess::spawn(cmd);
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    wait_running(&env, upload.task_id, &worker).await;

    worker.terminate();
    let status = worker.wait(Duration::from_secs(20)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", worker.log());
    let task = env.task(upload.task_id).await;
    assert_eq!(
        task.status,
        TaskStatus::Pending,
        "released; log:\n{}",
        worker.log()
    );
    assert!(task.lease_expires_at.is_none());
    // Visible again at once, although it was received with a 60 s visibility timeout.
    let again = env
        .queue
        .receive(1, Duration::from_secs(30))
        .await
        .expect("receive");
    assert_eq!(again.len(), 1, "the message is visible again");
    assert_eq!(again[0].dequeue_count, 2);
    assert_eq!(env.row_count(upload.source_file_id).await, 0);
}

#[tokio::test]
async fn drain_mode_exits_zero_once_the_outbox_and_queue_are_empty() {
    let env = WorkerEnv::new().await;
    let uploads = [
        env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await,
        env.create_upload("b.csv", SAMPLE_CSV.as_bytes()).await,
        env.create_upload("c.csv", SAMPLE_CSV.as_bytes()).await,
    ];
    let mut worker = WorkerProcess::spawn(env.command(&["run", "--drain"]));
    let status = worker.wait(Duration::from_secs(60)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", worker.log());
    for u in &uploads {
        assert_eq!(env.task(u.task_id).await.status, TaskStatus::Completed);
    }
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE status = 'COMPLETED'")
            .await,
        3
    );
    assert_eq!(env.queue.approximate_length().await.expect("length"), 0);
}

#[tokio::test]
async fn a_database_restart_mid_run_loses_nothing() {
    let pg = DedicatedPostgres::start().await;
    let url = pg.create_database("restart").await;
    let env = WorkerEnv::with_database(&url).await;
    let mut worker = WorkerProcess::spawn(env.command(&["run"]));

    let mut ids = Vec::new();
    for u in env.create_uploads(30, SAMPLE_CSV.as_bytes(), 8).await {
        ids.push(u.task_id);
    }
    // Restart while the first batch is in flight.
    pg.restart().await;
    for u in env.create_uploads(30, SAMPLE_CSV.as_bytes(), 8).await {
        ids.push(u.task_id);
    }
    let all = ids.clone();
    let log = worker.log_path.to_path_buf();
    tokio::select! {
        () = env.wait_all_completed(&all, Duration::from_secs(120)) => {}
        status = worker.child.wait() => panic!(
            "the worker exited ({status:?}) during the outage; log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        ),
    }
    assert_eq!(
        env.count("SELECT coalesce(sum(row_count), 0)::bigint FROM parsed_row_chunks")
            .await,
        2 * 60
    );
    assert_eq!(
        env.count("SELECT count(*) FROM tasks WHERE status = 'FAILED'")
            .await,
        0
    );
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE status <> 'COMPLETED'")
            .await,
        0
    );

    worker.terminate();
    let status = worker.wait(Duration::from_secs(30)).await;
    assert!(status.success(), "exit {status:?}");
}

#[tokio::test]
async fn when_one_loop_fails_it_is_started_again_and_the_process_goes_on() {
    let env = WorkerEnv::new().await;
    let mut worker = WorkerProcess::spawn(env.command(&["run"]));
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    env.wait_all_completed(&[upload.task_id], Duration::from_secs(30))
        .await;

    // A schema the relay cannot work with is not a transient failure: the relay loop fails,
    // and is started again (with a backoff) while the process and its other loops go on.
    sqlx::query("ALTER TABLE outbox_messages RENAME TO outbox_messages_gone")
        .execute(&env.db)
        .await
        .expect("rename table");
    eventually(
        Duration::from_secs(30),
        "the relay started again",
        || async {
            worker
                .log()
                .matches("loop failed; starting it again")
                .count()
                >= 2
        },
    )
    .await;
    assert!(
        worker.child.try_wait().expect("try_wait").is_none(),
        "the process still runs; log:\n{}",
        worker.log()
    );
    let log = worker.log();
    assert!(
        log.lines()
            .any(|l| l.contains("loop failed; starting it again") && l.contains("relay")),
        "log names the failed loop:\n{log}"
    );
    // Once the table is back, the restarted relay sends the next upload's message.
    sqlx::query("ALTER TABLE outbox_messages_gone RENAME TO outbox_messages")
        .execute(&env.db)
        .await
        .expect("rename table back");
    let next = env.create_upload("b.csv", SAMPLE_CSV.as_bytes()).await;
    env.wait_all_completed(&[next.task_id], Duration::from_secs(90))
        .await;
    worker.terminate();
    let status = worker.wait(Duration::from_secs(30)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", worker.log());
}

/// How many lines of `log` contain `text`, and how many of those are warnings.
fn lines_and_warnings(log: &str, text: &str) -> (usize, usize) {
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(text)).collect();
    let warnings = lines.iter().filter(|l| l.contains(" WARN ")).count();
    (lines.len(), warnings)
}

#[tokio::test]
async fn a_storage_outage_is_logged_when_it_starts_and_ends_not_at_every_retry() {
    let env = WorkerEnv::new().await;
    let azurite = reqwest::Url::parse(&harness::services::services().await.queue_endpoint)
        .expect("queue endpoint");
    let azurite = (
        azurite.host_str().expect("host"),
        azurite.port().expect("port"),
    );
    let azurite = tokio::net::lookup_host(azurite)
        .await
        .expect("resolve")
        .next()
        .expect("an address");
    let storage = OutagePort::start(azurite).await;
    let through = env.storage_with(
        "QueueEndpoint",
        &format!("http://{}/devstoreaccount1", storage.addr),
    );
    let mut cmd = env.command(&["run", "--role", "consumer"]);
    cmd.env(
        "AZURE_STORAGE_CONNECTION_STRING",
        through.connection_string.as_deref().unwrap_or_default(),
    )
    // INFO as in production, and our own debug lines, which say when a retry failed again.
    .env("RUST_LOG", "info,worker=debug");
    let worker = WorkerProcess::spawn(cmd);
    let start_up = "storage unavailable at start-up";
    let receive = "queue unavailable: receive failed";

    // Unreachable from the start: each try is several requests, each retried by the SDK (up to
    // 15 s a request), and the process starts first; under the whole suite's load 60 s was once
    // not enough (CI on 6a9c3a7), so the bound is generous: it only ends a hung test.
    eventually(Duration::from_secs(180), "two failed tries", || async {
        lines_and_warnings(&worker.log(), start_up).0 >= 2
    })
    .await;
    let log = worker.log();
    assert!(
        !log.contains("Failed response"),
        "the SDK's line per failed request stays out of INFO:\n{log}"
    );
    assert_eq!(
        lines_and_warnings(&log, start_up).1,
        1,
        "one warning:\n{log}"
    );
    storage.up();
    eventually(Duration::from_secs(30), "the start", || async {
        worker.log().contains("storage is reachable; starting")
    })
    .await;

    // Unreachable while running: the consumer's receives fail, then work again.
    storage.down();
    eventually(Duration::from_secs(60), "two failed receives", || async {
        lines_and_warnings(&worker.log(), receive).0 >= 2
    })
    .await;
    storage.up();
    eventually(Duration::from_secs(30), "receiving again", || async {
        worker.log().contains("the queue is reachable again")
    })
    .await;
    let log = worker.log();
    assert_eq!(
        lines_and_warnings(&log, receive).1,
        1,
        "one warning:\n{log}"
    );
    assert!(!log.contains("Failed response"), "{log}");
}

#[tokio::test]
async fn the_outbox_cli_prints_stats_and_requeues_dead_messages() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    sqlx::query(
        "UPDATE outbox_messages SET status = 'DEAD', attempts = max_attempts, last_error = 'boom' \
         WHERE id = $1",
    )
    .bind(upload.outbox_id)
    .execute(&env.db)
    .await
    .expect("make it DEAD");

    let out = env
        .command(&["outbox", "stats"])
        .output()
        .await
        .expect("run outbox stats");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("one JSON line per status");
    assert_eq!(line["status"], "DEAD");
    assert_eq!(line["count"], 1);

    let out = env
        .command(&["outbox", "requeue-dead"])
        .output()
        .await
        .expect("run requeue-dead");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["requeued"], 1);
    eventually(
        Duration::from_secs(1),
        "the message to be PENDING",
        || async {
            env.count(
                "SELECT count(*) FROM outbox_messages WHERE status = 'PENDING' AND attempts = 0",
            )
            .await
                == 1
        },
    )
    .await;
}

#[tokio::test]
async fn an_upload_through_the_api_reaches_completed_by_itself_with_the_worker_running() {
    let app = harness::app::TestApp::spawn().await;
    let cfg = harness::worker::run_config(&app.config.database.url, app.config.storage.clone());
    let worker = harness::worker::RunningWorker::start(cfg);

    let resp = app
        .upload("people.csv", SAMPLE_CSV.as_bytes().to_vec(), None)
        .await;
    assert_eq!(resp.status(), reqwest::StatusCode::ACCEPTED);
    let body: serde_json::Value = resp.json().await.expect("upload body");
    let task_id = body["task"]["id"].as_str().expect("task id").to_owned();
    let file_id = body["source_file"]["id"]
        .as_str()
        .expect("file id")
        .to_owned();

    let task = harness::worker::eventually_some(Duration::from_secs(30), "COMPLETED", || async {
        let (_, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
        (task["status"] == "COMPLETED").then_some(task)
    })
    .await;
    assert_eq!(task["result"]["rows_total"], 2);
    let (_, rows) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?sheet=0"))
        .await;
    assert_eq!(rows["rows"].as_array().map(Vec::len), Some(2), "{rows}");

    worker.stop().await;
}

#[tokio::test]
async fn an_idle_consumer_takes_what_its_relay_sends_without_waiting_out_its_backoff() {
    let app = harness::app::TestApp::spawn().await;
    let mut cfg = harness::worker::run_config(&app.config.database.url, app.config.storage.clone());
    // A consumer that finds the queue empty would poll again only an hour later.
    cfg.consumer.idle_backoff_min = Duration::from_secs(3600);
    cfg.consumer.idle_backoff_max = Duration::from_secs(3600);
    let worker = harness::worker::RunningWorker::start(cfg);

    // Each upload reaches the queue after the consumer has polled it empty (the first at start,
    // the second right after it received the first): only the relay's word wakes it.
    for name in ["first.csv", "second.csv"] {
        let resp = app.upload(name, SAMPLE_CSV.as_bytes().to_vec(), None).await;
        assert_eq!(resp.status(), reqwest::StatusCode::ACCEPTED);
        let body: serde_json::Value = resp.json().await.expect("upload body");
        let task_id = body["task"]["id"].as_str().expect("task id").to_owned();
        harness::worker::eventually_some(Duration::from_secs(30), "COMPLETED", || async {
            let (_, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
            (task["status"] == "COMPLETED").then_some(())
        })
        .await;
    }

    worker.stop().await;
}
