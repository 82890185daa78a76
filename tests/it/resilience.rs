//! One tenant's traffic must not stop everyone's work: a webhook replay storm beside failing
//! deliveries leaves the worker running and every event delivered; a deadlock injected into each
//! of the worker's loops, Blob sources' listing and import included (a trigger in real Postgres
//! that fails their statements with SQLSTATE `40P01`), is retried like any transient error; and a loop that fails outright is started
//! again while the others go on.

use std::time::Duration;

use harness::app::TestApp;
use harness::receiver::{Answer, Receiver};
use harness::worker::{eventually, run_config, RunningWorker};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::events::{fail_task, upload_pending};
use crate::webhooks::{call, register};

const WAIT: Duration = Duration::from_secs(60);

/// Makes the next `times` statements that update `table` fail with SQLSTATE `code` (at the
/// end of the statement, so whatever it changed is rolled back with it). The count lives in a
/// sequence because a failed statement rolls back everything else it wrote.
async fn inject(db: &PgPool, table: &str, code: &str, times: i64) {
    for sql in [
        format!("CREATE SEQUENCE injected_{table}"),
        format!(
            "CREATE FUNCTION injected_{table}() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN \
               IF nextval('injected_{table}') <= {times} THEN \
                 RAISE EXCEPTION 'injected by the test' USING ERRCODE = '{code}'; \
               END IF; \
               RETURN NULL; \
             END $$"
        ),
        format!(
            "CREATE TRIGGER injected AFTER UPDATE ON {table} \
             FOR EACH STATEMENT EXECUTE FUNCTION injected_{table}()"
        ),
    ] {
        sqlx::query(&sql).execute(db).await.expect(&sql);
    }
}

/// How many statements on `table` met the injected trigger (those past `times` went through).
async fn injected(db: &PgPool, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT last_value FROM injected_{table}"))
        .fetch_one(db)
        .await
        .expect("the sequence")
}

async fn undelivered(db: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries WHERE status <> 'DELIVERED'")
        .fetch_one(db)
        .await
        .expect("count")
}

/// Uploads a small CSV; its task id.
async fn upload(app: &TestApp, name: &str) -> String {
    let resp = app.upload(name, b"id,name\n1,alice\n".to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    body["task"]["id"].as_str().expect("task id").to_owned()
}

async fn replay(app: &TestApp, endpoint: &str) -> (StatusCode, Value) {
    call(
        app,
        &app.client,
        Method::POST,
        &format!("/api/v1/webhooks/{endpoint}/replay"),
        Some(json!({"since": "1970-01-01T00:00:00Z"})),
    )
    .await
}

#[tokio::test]
async fn a_replay_storm_beside_failing_deliveries_leaves_the_worker_running_and_every_event_delivered(
) {
    const EVENTS: usize = 60;
    const ROUNDS: usize = 60;
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    receiver.script(Vec::new(), Answer::Status(500));
    let endpoint = register(&app, &receiver.url()).await;
    let endpoint = endpoint["id"].as_str().expect("id").to_owned();
    for i in 0..EVENTS {
        let (task, _) = upload_pending(&app, &app.client, &format!("{i}.csv")).await;
        fail_task(&app.db, task).await;
    }
    let mut cfg = run_config(&app.config.database.url, app.config.storage.clone());
    cfg.role = worker::config::Role::Webhooks;
    cfg.webhooks.retry_schedule =
        worker::webhooks::RetrySchedule::parse(&["1ms"; 30].join(",")).expect("a schedule");
    cfg.webhooks.endpoint_concurrency = 8;
    cfg.webhooks.disable_after = Duration::from_secs(3600);
    let worker = RunningWorker::start(cfg);
    receiver.wait_for(1, WAIT).await;

    // Two replays at a time, round after round, while the worker keeps recording failures.
    for round in 0..ROUNDS {
        let (a, b) = tokio::join!(replay(&app, &endpoint), replay(&app, &endpoint));
        for (status, body) in [a, b] {
            assert_eq!(status, StatusCode::ACCEPTED, "round {round}: {body}");
        }
        assert!(worker.is_running(), "the worker stopped in round {round}");
    }
    let attempts_during_the_storm = receiver.received().len();
    assert!(
        attempts_during_the_storm > EVENTS,
        "the deliveries kept failing during the storm: {attempts_during_the_storm} requests"
    );

    // The receiver recovers: every event is delivered, by the worker that lived through it.
    receiver.script(Vec::new(), Answer::Status(200));
    let (status, _) = replay(&app, &endpoint).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    eventually(WAIT, "every event delivered", || async {
        undelivered(&app.db).await == 0
    })
    .await;
    let events: i64 = sqlx::query_scalar("SELECT count(DISTINCT event_id) FROM webhook_deliveries")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(events, EVENTS as i64);
    assert!(worker.is_running());
    worker.stop().await;
}

#[tokio::test]
async fn a_deadlock_in_every_loop_is_retried_and_the_upload_is_parsed_and_announced() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url()).await;
    // The relay's claim, the consumer's task updates, webhook delivery's claim: each loses a
    // lock race three times.
    // And a Blob source's listing and its imports.
    let (store, url, cs) = crate::destinations::container(&app).await;
    let (status, source) = call(
        &app,
        &app.client,
        Method::POST,
        "/api/v1/sources",
        Some(json!({"kind": "azure_blob", "container_url": url,
                    "credential": {"connection_string": cs}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{source}");
    crate::sources::put(&store, "dropped.csv", b"id,name\n1,Ada\n").await;
    let tables = [
        "outbox_messages",
        "tasks",
        "webhook_deliveries",
        "sources",
        "source_blobs",
    ];
    for table in tables {
        inject(&app.db, table, "40P01", 3).await;
    }
    let worker = RunningWorker::start(run_config(
        &app.config.database.url,
        app.config.storage.clone(),
    ));
    let task = upload(&app, "people.csv").await;
    let got = receiver.wait_for(2, WAIT).await;
    assert!(worker.is_running());
    worker.stop().await;

    let announced = got
        .iter()
        .filter(|r| r.json()["data"]["task_id"] == json!(task))
        .count();
    assert_eq!(announced, 1, "the upload announced once");
    assert!(got.iter().all(|r| r.json()["type"] == "task.completed"));
    let imported: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM source_files WHERE origin->>'blob' = 'dropped.csv'",
    )
    .fetch_one(&app.db)
    .await
    .expect("count");
    assert_eq!(imported, 1, "the dropped blob imported once");
    for table in tables {
        assert!(
            injected(&app.db, table).await > 3,
            "{table}: every injected deadlock was met and the loop went on past them"
        );
    }
}

#[tokio::test]
async fn a_loop_that_fails_is_started_again_while_the_other_loops_go_on() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url()).await;
    // Not a lost race but a statement that fails (`XX000`, an internal error): the webhook
    // delivery loop ends with an error, twice.
    inject(&app.db, "webhook_deliveries", "XX000", 2).await;
    let worker = RunningWorker::start(run_config(
        &app.config.database.url,
        app.config.storage.clone(),
    ));
    // While the delivery loop is down, the relay and the consumer parse an upload...
    let task = upload(&app, "a.csv").await;
    eventually(WAIT, "the task completed", || async {
        let (_, t) = app.get_json(&format!("/api/v1/tasks/{task}")).await;
        t["status"] == "COMPLETED"
    })
    .await;
    // ...and once it is started again, its event is delivered.
    let got = receiver.wait_for(1, WAIT).await;
    assert_eq!(got[0].json()["data"]["task_id"], json!(task));
    assert!(injected(&app.db, "webhook_deliveries").await > 2);
    assert!(worker.is_running());
    worker.stop().await;
}
