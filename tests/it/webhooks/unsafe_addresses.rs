//! The worker's own check, at every delivery: an endpoint registered while private networks were
//! allowed (or a name whose answer changed since, DNS rebinding) gets nothing from a worker that
//! does not allow them; redirects are not followed.

use std::time::Duration;

use harness::app::TestApp;
use harness::receiver::{Answer, Receiver};
use harness::worker::{eventually_some, run_config, RunningWorker};
use reqwest::Method;
use serde_json::Value;

use super::{call, register};
use crate::events::{fail_task, upload_pending};

const WAIT: Duration = Duration::from_secs(20);

/// Registers `url` (the test api allows private networks), commits one event, runs a worker with
/// `allow_private` until the attempt is logged; the attempt.
async fn attempt_to(app: &TestApp, url: &str, allow_private: bool) -> Value {
    let created = register(app, url).await;
    let id = created["id"].as_str().expect("id").to_owned();
    let mut cfg = run_config(&app.config.database.url, app.config.storage.clone());
    cfg.webhooks.keys.allow_private_networks = allow_private;
    // No retry before the worker stops: each test counts the requests of one attempt.
    cfg.webhooks.retry_schedule = worker::webhooks::RetrySchedule::parse("1h").expect("a schedule");
    let worker = RunningWorker::start(cfg);
    let (task, _) = upload_pending(app, &app.client, "a.csv").await;
    fail_task(&app.db, task).await;
    let attempt = eventually_some(WAIT, "the attempt is logged", || async {
        let (_, log) = call(
            app,
            &app.client,
            Method::GET,
            &format!("/api/v1/webhooks/{id}/attempts"),
            None,
        )
        .await;
        log["attempts"].as_array().and_then(|a| a.first().cloned())
    })
    .await;
    worker.stop().await;
    attempt
}

#[tokio::test]
async fn a_loopback_address_is_refused_when_the_worker_connects() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let url = format!("https://127.0.0.1:{}/hook", receiver.addr.port());
    let attempt = attempt_to(&app, &url, false).await;
    assert_eq!(attempt["outcome"], "unreachable");
    assert_eq!(attempt["status_code"], Value::Null);
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_by_the_workers_resolver() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let url = format!("https://localhost:{}/hook", receiver.addr.port());
    let attempt = attempt_to(&app, &url, false).await;
    assert_eq!(attempt["outcome"], "unreachable");
    let error: Option<String> = sqlx::query_scalar("SELECT error FROM webhook_attempts")
        .fetch_one(&app.db)
        .await
        .expect("the attempt");
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("not a public address")),
        "{error:?}"
    );
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn plain_http_is_refused_when_the_worker_connects() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let attempt = attempt_to(&app, &receiver.url(), false).await;
    assert_eq!(attempt["outcome"], "unreachable");
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let app = TestApp::spawn().await;
    let (redirecting, target) = (Receiver::start().await, Receiver::start().await);
    redirecting.script(vec![], Answer::Redirect(target.url()));
    let attempt = attempt_to(&app, &redirecting.url(), true).await;
    assert_eq!(attempt["outcome"], "failed");
    assert_eq!(attempt["status_code"], 302);
    assert_eq!(redirecting.received().len(), 1);
    assert!(target.received().is_empty(), "the redirect was followed");
}
