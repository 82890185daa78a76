//! A task's lineage: its timeline from upload to rows, its deliveries, its progress while a parse
//! runs, and the error of every failed attempt.

use std::time::Duration;

use api::views::TaskDetailView;
use chrono::{DateTime, Utc};
use harness::app::TestApp;
use harness::worker::{eventually_some, worker_exe, WorkerEnv};
use reqwest::StatusCode;
use serde_json::Value;
use shared::db;
use shared::domain::TaskStatus;
use shared::storage::{BlobStore, StorageConfig};
use tokio_util::sync::CancellationToken;
use worker::consumer::{Consumer, Outcome};
use worker::parse::isolate::Isolation;

fn time(v: &Value) -> DateTime<Utc> {
    v.as_str()
        .unwrap_or_else(|| panic!("a time, not {v}"))
        .parse()
        .expect("RFC 3339")
}

#[tokio::test]
async fn a_completed_task_shows_its_whole_timeline_in_order() {
    let app = TestApp::spawn().await;
    let resp = app.upload("a.csv", b"id\n1\n2\n".to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("json");
    let task_path = format!(
        "/api/v1/tasks/{}",
        upload["task"]["id"].as_str().expect("id")
    );
    let (_, pending) = app.get_json(&task_path).await;
    assert_eq!(pending["timeline"]["relayed_at"], Value::Null);
    assert_eq!(pending["progress"], Value::Null);

    let task = app
        .run_worker_until_completed(upload["task"]["id"].as_str().expect("id"))
        .await;

    let t = &task["timeline"];
    let steps = [
        "created_at",
        "relayed_at",
        "received_at",
        "started_at",
        "finished_at",
    ]
    .map(|step| time(&t[step]));
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "in order: {t}");
    assert_eq!(time(&t["created_at"]), time(&task["created_at"]));
    assert_eq!(task["dequeue_count"], 1);
    assert_eq!(task["attempts"], 1);
    assert_eq!(task["errors"], serde_json::json!([]));
    assert_eq!(task["progress"], Value::Null, "no progress once COMPLETED");
}

#[tokio::test]
async fn a_running_parse_reports_its_rows_and_bytes() {
    let env = WorkerEnv::new().await;
    let csv: String = std::iter::once("id,name\n".to_owned())
        .chain((0..5000).map(|i| format!("{i},name {i}\n")))
        .collect();
    let upload = env.create_upload("big.csv", csv.as_bytes()).await;
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;

    // Hold the sheets table: every row streams into COPY, then the task waits, RUNNING, to store
    // its sheet. Its progress must show all of it read.
    let mut lock = env.db.begin().await.expect("begin");
    sqlx::query("LOCK TABLE parsed_sheets IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .expect("lock");
    let consumer = env.consumer(WorkerEnv::consumer_config());
    let abort = CancellationToken::new();
    let run = tokio::spawn({
        let consumer = consumer.clone();
        let abort = abort.clone();
        async move { consumer.run_once(&abort).await }
    });
    let (task, lineage) =
        eventually_some(Duration::from_secs(30), "progress of every row", || async {
            let task = env.task(upload.task_id).await;
            let lineage = db::tasks::lineage(&env.db, upload.task_id)
                .await
                .expect("lineage")
                .expect("the task");
            (lineage.progress_rows == Some(5000)).then_some((task, lineage))
        })
        .await;
    assert_eq!(task.status, TaskStatus::Running);
    assert_eq!(
        lineage.progress_bytes,
        Some(csv.len() as i64),
        "the whole file read"
    );
    let view = serde_json::to_value(TaskDetailView::new(&task, &lineage)).expect("json");
    assert_eq!(
        view["progress"],
        serde_json::json!({"rows": 5000, "bytes": csv.len()})
    );

    lock.rollback().await.expect("unlock");
    let outcomes = run.await.expect("join").expect("run_once");
    assert_eq!(
        outcomes,
        [Outcome::Completed {
            task_id: upload.task_id,
            rows: 5000
        }]
    );
}

#[tokio::test]
async fn every_failed_attempt_is_kept_with_its_error() {
    let env = WorkerEnv::new().await;
    // Large enough not to travel inline: the consumer must download it.
    let csv: String = (0..2000).map(|i| format!("{i}\n")).collect();
    let upload = env
        .create_upload("a.csv", format!("n\n{csv}").as_bytes())
        .await;
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;

    // First attempt: blob storage unreachable (port 9 is never an Azure endpoint).
    let dead = StorageConfig::from_connection_string(
        "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:9/a;QueueEndpoint=http://127.0.0.1:9/a",
        "c",
        "q",
    );
    let cfg = harness::worker::WorkerEnv::consumer_config();
    let broken = Consumer::new(
        env.db.clone(),
        env.queue.clone(),
        env.poison.clone(),
        BlobStore::new(&dead).expect("store"),
        Isolation::new(worker_exe(), worker::config::ParseConfig::default().limits),
        cfg.clone(),
    );
    let outcomes = broken
        .run_once(&CancellationToken::new())
        .await
        .expect("run_once");
    assert!(
        matches!(outcomes[..], [Outcome::Retry { .. }]),
        "{outcomes:?}"
    );

    // Then a healthy consumer, once the message is visible again (after the retry backoff).
    let consumer = env.consumer(cfg);
    let never = CancellationToken::new();
    let outcomes = eventually_some(Duration::from_secs(30), "the redelivery", || async {
        let outcomes = consumer.run_once(&never).await.expect("run_once");
        (!outcomes.is_empty()).then_some(outcomes)
    })
    .await;
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Outcome::Completed { .. })),
        "{outcomes:?}"
    );
    let lineage = db::tasks::lineage(&env.db, upload.task_id)
        .await
        .expect("lineage")
        .expect("task");
    assert_eq!(lineage.errors.len(), 1, "{:?}", lineage.errors);
    let first = &lineage.errors[0];
    assert_eq!(
        (
            first.attempt,
            first.kind.as_str(),
            first.code.map(|c| c.as_str())
        ),
        (1, "transient", None)
    );
    assert!(first.message.contains("download"), "{}", first.message);
    assert_eq!(
        lineage.dequeue_count, 1,
        "the delivery an outage stopped was requeued, not counted"
    );

    // A final failure is kept with its code.
    let empty = env.create_upload("empty.csv", b"").await;
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    env.consume_until_idle(&consumer).await;
    let lineage = db::tasks::lineage(&env.db, empty.task_id)
        .await
        .expect("lineage")
        .expect("task");
    let kinds: Vec<_> = lineage
        .errors
        .iter()
        .map(|e| (e.attempt, e.kind.as_str(), e.code.map(|c| c.as_str())))
        .collect();
    assert_eq!(kinds, [(1, "final", Some("empty_file"))]);
}

#[tokio::test]
async fn worker_task_show_prints_the_tasks_record_for_operators() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", b"id\n1\n").await;
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    let consumer = env.consumer(WorkerEnv::consumer_config());
    env.consume_until_idle(&consumer).await;

    let out = env
        .command(&["task", "show", &upload.task_id.to_string()])
        .output()
        .await
        .expect("worker task show runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let task = env.task(upload.task_id).await;
    let lineage = db::tasks::lineage(&env.db, upload.task_id)
        .await
        .expect("lineage")
        .expect("task");
    assert_eq!(
        shown,
        serde_json::to_value(TaskDetailView::new(&task, &lineage)).expect("json"),
        "the same record as GET /api/v1/tasks/{{id}}"
    );
    assert_eq!(shown["status"], "COMPLETED");
    assert!(shown["timeline"]["relayed_at"].is_string());

    let missing = env
        .command(&["task", "show", &uuid::Uuid::now_v7().to_string()])
        .output()
        .await
        .expect("runs");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no task"));
}
