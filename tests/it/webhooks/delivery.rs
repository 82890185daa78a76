//! Webhook delivery by a real worker to a real receiver: signed per Standard Webhooks, retried on
//! its schedule with the same `webhook-id` until the receiver answers, `Retry-After` honoured, a
//! 410 and days of failure disabling the endpoint, dead deliveries revived by a replay, both
//! secrets during a rotation, a timing-out endpoint beside a healthy one, a huge answer, and a
//! dead worker's claim rescued.

use std::time::{Duration, Instant};

use harness::app::TestApp;
use harness::receiver::{Answer, Received, Receiver};
use harness::worker::{eventually, eventually_some, run_config, RunningWorker, WorkerEnv};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use shared::webhooks::{signature, SigningSecret};
use uuid::Uuid;

use super::{call, register};
use crate::events::{fail_task, upload_pending};

const WAIT: Duration = Duration::from_secs(20);

/// A worker for `app` with its webhook settings adjusted by `tweak`.
fn worker(app: &TestApp, tweak: impl FnOnce(&mut worker::config::WebhooksConfig)) -> RunningWorker {
    let mut cfg = run_config(&app.config.database.url, app.config.storage.clone());
    tweak(&mut cfg.webhooks);
    RunningWorker::start(cfg)
}

fn schedule(s: &str) -> worker::webhooks::RetrySchedule {
    worker::webhooks::RetrySchedule::parse(s).expect("a schedule")
}

/// The secret a create showed.
fn secret_of(created: &Value) -> SigningSecret {
    SigningSecret::from_whsec(created["secret"].as_str().expect("secret")).expect("whsec")
}

/// True when one of the request's `v1,` signatures is `secret`'s over its id, timestamp, body.
fn signed_with(secret: &SigningSecret, r: &Received) -> bool {
    let timestamp: i64 = r.header("webhook-timestamp").parse().expect("a timestamp");
    let expected = signature::sign(secret, r.header("webhook-id"), timestamp, &r.body);
    r.header("webhook-signature")
        .split(' ')
        .any(|s| s == expected)
}

/// An event for the default tenant, committed: a failed task.
async fn event(app: &TestApp, name: &str) -> Uuid {
    let (task, _) = upload_pending(app, &app.client, name).await;
    fail_task(&app.db, task).await;
    task
}

async fn webhook(app: &TestApp, id: &str) -> Value {
    let (status, body) = call(
        app,
        &app.client,
        Method::GET,
        &format!("/api/v1/webhooks/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    body
}

async fn attempts(app: &TestApp, id: &str, query: &str) -> Value {
    let (status, body) = call(
        app,
        &app.client,
        Method::GET,
        &format!("/api/v1/webhooks/{id}/attempts{query}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn a_parsed_upload_is_posted_to_its_endpoint_signed_per_standard_webhooks() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    let worker = worker(&app, |_| {});
    let resp = app
        .upload("people.csv", b"id,name\n1,alice\n2,bob\n".to_vec(), None)
        .await;
    let upload: Value = resp.json().await.expect("upload body");
    let got = receiver.wait_for(1, WAIT).await;
    worker.stop().await;

    let r = &got[0];
    let body = r.json();
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(r.header("webhook-id"), body["id"].as_str().expect("id"));
    let timestamp: i64 = r.header("webhook-timestamp").parse().expect("unix seconds");
    assert!((chrono::Utc::now().timestamp() - timestamp).abs() < 60);
    assert!(signed_with(&secret_of(&created), r), "{:?}", r.headers);
    assert_eq!(body["type"], "task.completed");
    assert_eq!(body["data"]["task_id"], upload["task"]["id"]);
    assert_eq!(body["data"]["source_file_id"], upload["source_file"]["id"]);
    assert_eq!(body["data"]["status"], "COMPLETED");
    assert_eq!(
        body["data"]["summary"],
        json!({"rows_total": 2, "rows_valid": 2, "rows_rejected": 0})
    );
    // The same event, with the same id, is in the feed.
    let (_, feed) = app.get_json("/api/v1/events").await;
    assert_eq!(feed["events"][0], body);

    let id = created["id"].as_str().expect("id");
    let log = eventually_some(WAIT, "the attempt is logged", || async {
        let log = attempts(&app, id, "").await;
        (log["attempts"].as_array().map(Vec::len) == Some(1)).then_some(log)
    })
    .await;
    let attempt = &log["attempts"][0];
    assert_eq!(attempt["event_id"], body["id"]);
    assert_eq!(
        (attempt["attempt"].as_i64(), attempt["status_code"].as_i64()),
        (Some(1), Some(200))
    );
    assert_eq!(attempt["outcome"], "delivered");
    assert_eq!(log["next_after"], Value::Null);
}

#[tokio::test]
async fn a_receiver_down_for_several_retry_steps_gets_every_event_once_back_with_the_same_id() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    receiver.stop();
    let worker = worker(&app, |w| {
        w.retry_schedule = schedule("200ms,300ms,400ms,500ms,1s,1s,1s,1s")
    });
    let mut tasks = Vec::new();
    for i in 0..3 {
        tasks.push(event(&app, &format!("f{i}.csv")).await);
    }
    let id = created["id"].as_str().expect("id");
    // Several steps fail (connection refused) before the receiver is back.
    eventually(WAIT, "three failed attempts", || async {
        attempts(&app, id, "").await["attempts"]
            .as_array()
            .is_some_and(|a| a.iter().filter(|a| a["outcome"] == "unreachable").count() >= 3)
    })
    .await;
    receiver.restart().await;
    let delivered = eventually_some(WAIT, "every event delivered", || async {
        let got = receiver.received();
        let ids: std::collections::HashSet<String> = got
            .iter()
            .map(|r| r.header("webhook-id").to_owned())
            .collect();
        (ids.len() == 3).then_some(got)
    })
    .await;
    worker.stop().await;
    let mut tasks_seen: Vec<String> = delivered
        .iter()
        .map(|r| {
            r.json()["data"]["task_id"]
                .as_str()
                .expect("task")
                .to_owned()
        })
        .collect();
    tasks_seen.sort();
    tasks_seen.dedup();
    let mut expected: Vec<String> = tasks.iter().map(Uuid::to_string).collect();
    expected.sort();
    assert_eq!(tasks_seen, expected, "nothing lost");
    let duplicates = delivered.len() - 3;
    assert_eq!(
        duplicates,
        0,
        "each delivered once: {:?}",
        delivered
            .iter()
            .map(|r| r.header("webhook-id"))
            .collect::<Vec<_>>()
    );
    // Each event's attempts all carried its one id: the log numbers them per event.
    let log = attempts(&app, id, "?limit=1000").await;
    for event_id in delivered.iter().map(|r| r.header("webhook-id")) {
        let numbers: Vec<i64> = log["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .filter(|a| a["event_id"] == event_id)
            .map(|a| a["attempt"].as_i64().expect("n"))
            .collect();
        assert!(numbers.len() >= 2, "{event_id}: {numbers:?}");
        assert_eq!(numbers.iter().max().copied(), Some(numbers.len() as i64));
    }
}

#[tokio::test]
async fn a_429_or_503_is_retried_no_sooner_than_its_retry_after() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url()).await;
    receiver.script(vec![Answer::RetryAfter(429, 2)], Answer::Status(204));
    let worker = worker(&app, |w| w.retry_schedule = schedule("100ms"));
    event(&app, "a.csv").await;
    let got = receiver.wait_for(2, WAIT).await;
    worker.stop().await;
    let waited = got[1].at - got[0].at;
    assert!(
        waited >= Duration::from_millis(1900),
        "retried after {waited:?}"
    );
    assert_eq!(got[0].header("webhook-id"), got[1].header("webhook-id"));
}

#[tokio::test]
async fn a_410_disables_the_endpoint_at_once_and_it_says_so() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    let id = created["id"].as_str().expect("id");
    receiver.script(vec![], Answer::Status(410));
    let worker = worker(&app, |_| {});
    event(&app, "a.csv").await;
    let disabled = eventually_some(WAIT, "the endpoint disabled", || async {
        let w = webhook(&app, id).await;
        (w["enabled"] == false).then_some(w)
    })
    .await;
    worker.stop().await;
    assert_eq!(disabled["disabled_reason"], "gone");
    assert!(disabled["disabled_at"].is_string());
    assert_eq!(receiver.received().len(), 1);
    // A disabled endpoint is given no new deliveries.
    event(&app, "b.csv").await;
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(queued, 1);
}

#[tokio::test]
async fn an_endpoint_failing_for_longer_than_the_limit_is_disabled_as_failing() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    let id = created["id"].as_str().expect("id");
    receiver.script(vec![], Answer::Status(500));
    let worker = worker(&app, |w| {
        w.disable_after = Duration::from_secs(1);
        w.retry_schedule = schedule("1500ms,1500ms,1500ms");
    });
    event(&app, "a.csv").await;
    let first = eventually_some(WAIT, "failing since", || async {
        let w = webhook(&app, id).await;
        w["failing_since"].is_string().then_some(w)
    })
    .await;
    assert_eq!(first["enabled"], true, "one failure is not days of them");
    let disabled = eventually_some(WAIT, "the endpoint disabled", || async {
        let w = webhook(&app, id).await;
        (w["enabled"] == false).then_some(w)
    })
    .await;
    worker.stop().await;
    assert_eq!(disabled["disabled_reason"], "failing");
    assert!(receiver.received().len() >= 2);
    // Enabled again by its owner: it starts over.
    let (_, enabled) = call(
        &app,
        &app.client,
        Method::PATCH,
        &format!("/api/v1/webhooks/{id}"),
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(
        (
            enabled["disabled_reason"].clone(),
            enabled["failing_since"].clone()
        ),
        (Value::Null, Value::Null)
    );
}

#[tokio::test]
async fn a_delivery_that_uses_up_its_schedule_is_dead_until_a_replay() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    let id = created["id"].as_str().expect("id");
    receiver.script(vec![Answer::Status(500); 3], Answer::Status(200));
    let since = chrono::Utc::now();
    let worker = worker(&app, |w| w.retry_schedule = schedule("100ms,100ms"));
    event(&app, "a.csv").await;
    eventually(WAIT, "the delivery dead", || async {
        sqlx::query_scalar::<_, String>("SELECT status::text FROM webhook_deliveries")
            .fetch_one(&app.db)
            .await
            .is_ok_and(|s| s == "DEAD")
    })
    .await;
    assert_eq!(
        receiver.received().len(),
        3,
        "the first try and two retries"
    );
    let (status, replayed) = call(
        &app,
        &app.client,
        Method::POST,
        &format!("/api/v1/webhooks/{id}/replay"),
        Some(json!({"since": since})),
    )
    .await;
    assert_eq!(
        (status, replayed),
        (StatusCode::ACCEPTED, json!({"queued": 1}))
    );
    let got = receiver.wait_for(4, WAIT).await;
    worker.stop().await;
    assert!(got
        .iter()
        .all(|r| r.header("webhook-id") == got[0].header("webhook-id")));
    // The attempt log, newest first, in pages.
    let page = attempts(&app, id, "?limit=3").await;
    let numbers: Vec<i64> = page["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["attempt"].as_i64().expect("n"))
        .collect();
    assert_eq!(numbers, [4, 3, 2]);
    assert_eq!(page["attempts"][0]["outcome"], "delivered");
    assert_eq!(page["attempts"][1]["status_code"], 500);
    let after = page["next_after"].as_i64().expect("a next page");
    let rest = attempts(&app, id, &format!("?limit=3&after={after}")).await;
    assert_eq!(rest["attempts"].as_array().map(Vec::len), Some(1));
    assert_eq!(rest["attempts"][0]["attempt"], 1);
    assert_eq!(rest["next_after"], Value::Null);
}

#[tokio::test]
async fn during_a_rotation_every_delivery_is_signed_with_both_secrets() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    let id = created["id"].as_str().expect("id");
    let old = secret_of(&created);
    let (_, rotated) = call(
        &app,
        &app.client,
        Method::POST,
        &format!("/api/v1/webhooks/{id}/secret/rotate"),
        None,
    )
    .await;
    let new = secret_of(&rotated);
    let worker = worker(&app, |_| {});
    event(&app, "a.csv").await;
    let got = receiver.wait_for(1, WAIT).await;
    worker.stop().await;
    assert_eq!(got[0].header("webhook-signature").split(' ').count(), 2);
    assert!(signed_with(&new, &got[0]) && signed_with(&old, &got[0]));
}

#[tokio::test]
async fn an_endpoint_that_times_out_does_not_hold_back_a_healthy_one() {
    let app = TestApp::spawn().await;
    let (slow, healthy) = (Receiver::start().await, Receiver::start().await);
    slow.script(vec![], Answer::Hang);
    register(&app, &slow.url()).await;
    register(&app, &healthy.url()).await;
    let worker = worker(&app, |w| {
        w.timeout = Duration::from_secs(5);
        w.endpoint_concurrency = 2;
    });
    // Warm up: the slow endpoint now holds its requests.
    event(&app, "warm.csv").await;
    healthy.wait_for(1, WAIT).await;
    let started = Instant::now();
    for i in 0..10 {
        event(&app, &format!("f{i}.csv")).await;
    }
    healthy.wait_for(11, WAIT).await;
    let took = started.elapsed();
    worker.stop().await;
    assert!(
        took < Duration::from_secs(4),
        "the healthy endpoint waited {took:?}"
    );
    assert!(
        slow.received().len() <= 2,
        "at most WEBHOOK_ENDPOINT_CONCURRENCY requests at once"
    );
}

#[tokio::test]
async fn a_slow_endpoint_gets_up_to_its_concurrency_in_requests_at_once_and_no_more() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url()).await;
    receiver.script(vec![], Answer::Slow(Duration::from_millis(600)));
    let worker = worker(&app, |w| w.endpoint_concurrency = 3);
    // Events arriving one by one, faster than the endpoint answers.
    for i in 0..9 {
        event(&app, &format!("f{i}.csv")).await;
    }
    let got = receiver.wait_for(9, WAIT).await;
    worker.stop().await;
    assert_eq!(receiver.most_at_once(), 3);
    // The second event did not wait for the first one's answer (600 ms): an endpoint with a
    // request in flight still gets the next ones, up to its concurrency.
    let second = got[1].at - got[0].at;
    assert!(
        second < Duration::from_millis(500),
        "the second request came {second:?} after the first"
    );
}

#[tokio::test]
async fn a_huge_answer_is_not_read() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    receiver.script(vec![], Answer::Huge(256 * 1024 * 1024));
    let worker = worker(&app, |_| {});
    event(&app, "a.csv").await;
    let id = created["id"].as_str().expect("id");
    let log = eventually_some(WAIT, "the attempt is logged", || async {
        let log = attempts(&app, id, "").await;
        (log["attempts"].as_array().map(Vec::len) == Some(1)).then_some(log)
    })
    .await;
    worker.stop().await;
    assert_eq!(log["attempts"][0]["outcome"], "delivered");
    assert!(
        log["attempts"][0]["duration_ms"]
            .as_i64()
            .is_some_and(|ms| ms < 1000),
        "{log}"
    );
}

#[tokio::test]
async fn a_delivery_claimed_by_a_worker_that_died_is_sent_once_its_claim_expires() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url()).await;
    event(&app, "a.csv").await;
    // A worker claims it and dies before sending.
    let dead = shared::db::deliveries::claim(&app.db, 10, Duration::from_secs(1), 4, &[], &[])
        .await
        .expect("claim");
    assert_eq!(dead.len(), 1);
    let cfg = WorkerEnv::webhooks_config();
    let never = tokio_util::sync::CancellationToken::new();
    let r = worker::webhooks::run_once(&app.db, &cfg, &never)
        .await
        .expect("run_once");
    assert_eq!(r.claimed, 0, "a live claim is respected");
    eventually(WAIT, "the expired claim is taken over", || async {
        worker::webhooks::run_once(&app.db, &cfg, &never)
            .await
            .is_ok_and(|r| r.sent == 1)
    })
    .await;
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn a_drain_job_delivers_what_is_due_and_exits_leaving_later_retries_to_the_next() {
    use base64::Engine as _;
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url()).await;
    event(&app, "due.csv").await;
    event(&app, "later.csv").await;
    // One delivery waits for a retry an hour away: a job does not wait for it.
    sqlx::query(
        "UPDATE webhook_deliveries SET status = 'FAILED', failures = 1, \
         available_at = now() + interval '1 hour' \
         WHERE id = (SELECT id FROM webhook_deliveries ORDER BY created_at DESC LIMIT 1)",
    )
    .execute(&app.db)
    .await
    .expect("delay one delivery");
    let key = base64::engine::general_purpose::STANDARD.encode([42u8; 32]);
    let status = tokio::process::Command::new(harness::worker::worker_exe())
        .args(["run", "--role", "webhooks", "--drain"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.config.database.url)
        .env("WEBHOOK_SECRET_KEY", key)
        .env("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true")
        .env("METRICS_ADDR", "127.0.0.1:0")
        .kill_on_drop(true)
        .status();
    let status = tokio::time::timeout(WAIT, status)
        .await
        .expect("the job exits by itself")
        .expect("run the worker");
    assert!(status.success(), "{status}");
    let got = receiver.received();
    assert_eq!(got.len(), 1, "the due delivery, and only it");
    let waiting: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM webhook_deliveries WHERE status = 'FAILED' AND available_at > now()",
    )
    .fetch_one(&app.db)
    .await
    .expect("count");
    assert_eq!(waiting, 1);
}
