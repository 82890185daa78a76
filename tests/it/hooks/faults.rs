//! A hook that cannot be used: down, slow, answering 100 MB, answering about rows that were not
//! in the batch, redirecting to a private address, or deleted meanwhile. Each fails the task
//! with `hook_unavailable` and a message that says why, within `HOOK_RETRY_FOR`, and stores no
//! row unchecked. A file that fails while its rows are being asked about ends with its own code
//! at once: the hook is not waited for.

use std::time::Duration;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::receiver::{HookReceiver, Reply};
use super::{endpoint, final_task, template, upload, CUSTOMERS};

/// Uploads the customers against a template whose one hook is `hook`, runs a worker with
/// `HOOK_RETRY_FOR` = 1s until the task is final, and checks it failed `hook_unavailable`
/// without rows: its error message.
async fn unavailable(app: &TestApp, hook: Value) -> String {
    template(app, hook, "drop_invalid_rows").await;
    let (task_id, file_id) = upload(app, CUSTOMERS).await;
    let task = final_task(app, &task_id, Duration::from_secs(1)).await;
    assert_eq!(task["status"], "FAILED", "{task}");
    assert_eq!(task["error"]["code"], "hook_unavailable", "{task}");
    let (status, _) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(status, StatusCode::CONFLICT, "no rows stored");
    task["error"]["message"]
        .as_str()
        .expect("a message")
        .to_owned()
}

#[tokio::test]
async fn a_hook_down_past_hook_retry_for_fails_the_task_hook_unavailable() {
    let app = TestApp::spawn().await;
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/validate", closed.local_addr().expect("addr"));
    drop(closed);
    let (webhook, _) = endpoint(&app, &url).await;
    let message = unavailable(&app, json!({"webhook": webhook})).await;
    assert!(message.contains("batch 0"), "{message}");
    assert!(message.contains(&webhook), "{message}");
}

#[tokio::test]
async fn a_hook_slower_than_its_timeout_is_given_up() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(|_, _| Reply::Hang).await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    let message = unavailable(&app, json!({"webhook": webhook, "timeout": "300ms"})).await;
    assert!(message.contains("no answer within 300ms"), "{message}");
    assert!(!hook.received().is_empty());
}

#[tokio::test]
async fn a_100_mb_answer_is_refused_unread() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(|_, _| Reply::Huge(100 << 20)).await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    let message = unavailable(&app, json!({"webhook": webhook})).await;
    assert!(message.contains("longer than 16777216 bytes"), "{message}");
}

#[tokio::test]
async fn an_answer_about_rows_not_in_the_batch_is_refused() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(|_, _| {
        Reply::Json(
            200,
            json!({"errors": [{"row": 999, "field": "email", "message": "who?"}]}),
        )
    })
    .await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    let message = unavailable(&app, json!({"webhook": webhook})).await;
    assert!(
        message.contains("row 999, which was not in the batch"),
        "{message}"
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_a_private_address_is_refused() {
    let app = TestApp::spawn().await;
    let target = HookReceiver::start(|_, _| Reply::Json(200, json!({"errors": []}))).await;
    let location = target.url();
    let hook = HookReceiver::start(move |_, _| Reply::Redirect(location.clone())).await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    let message = unavailable(&app, json!({"webhook": webhook})).await;
    assert!(message.contains("302"), "{message}");
    assert!(!hook.received().is_empty());
    assert!(target.received().is_empty(), "the redirect was followed");

    // Without the tests' allowance, the loopback address is refused before any request.
    let (task_id, _) = upload(&app, CUSTOMERS).await;
    let asked = hook.received().len();
    let task = app
        .run_worker_with_until_final(&task_id, |cfg| {
            cfg.consumer.hook_retry_for = Duration::from_secs(1);
            cfg.webhooks.keys.allow_private_networks = false;
        })
        .await;
    assert_eq!(task["error"]["code"], "hook_unavailable", "{task}");
    let message = task["error"]["message"].as_str().expect("message");
    assert!(message.contains("refused"), "{message}");
    assert_eq!(hook.received().len(), asked, "no request was sent");
}

#[tokio::test]
async fn a_hook_whose_endpoint_was_deleted_fails_the_task() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(|_, _| Reply::Json(200, json!({"errors": []}))).await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    template(&app, json!({"webhook": webhook}), "drop_invalid_rows").await;
    let resp = app
        .client
        .delete(app.url(&format!("/api/v1/webhooks/{webhook}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let (task_id, _) = upload(&app, CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["error"]["code"], "hook_unavailable", "{task}");
    let message = task["error"]["message"].as_str().expect("message");
    assert!(message.contains("no longer exists"), "{message}");
    assert!(hook.received().is_empty());
}

#[tokio::test]
async fn a_file_that_fails_mid_parse_ends_with_its_own_code_while_the_hook_hangs() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(|_, _| Reply::Hang).await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    // Batches of one row: the first rows are asked about while the parse goes on.
    template(
        &app,
        json!({"webhook": webhook, "batch_size": 1}),
        "drop_invalid_rows",
    )
    .await;
    let (task_id, file_id) = upload(&app, CUSTOMERS).await;
    let started = std::time::Instant::now();
    let task = app
        .run_worker_with_until_final(&task_id, |cfg| {
            cfg.consumer.hook_retry_for = Duration::from_secs(600);
            cfg.parse.limits.max_rows = 3;
        })
        .await;
    assert_eq!(task["status"], "FAILED", "{task}");
    assert_eq!(task["error"]["code"], "too_many_rows", "{task}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the hanging hook was not waited for"
    );
    let (status, _) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(status, StatusCode::CONFLICT, "no rows stored");
}
