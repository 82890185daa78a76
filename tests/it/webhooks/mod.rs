//! Webhooks: endpoints managed over the api ([`endpoints`]), URLs that must not reach private
//! networks, refused at registration ([`unsafe_urls`]) and when the worker connects
//! ([`unsafe_addresses`]), delivery by a real worker to a real receiver ([`delivery`]) and its
//! claim ([`claim`]), and the official verifiers' verdict on those deliveries ([`verifiers`]).

mod claim;
mod delivery;
mod endpoints;
mod event_grid;
mod unsafe_addresses;
mod unsafe_urls;
pub(crate) mod verifiers;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// `POST /api/v1/webhooks` as `client`: status and body.
async fn create(app: &TestApp, client: &reqwest::Client, body: Value) -> (StatusCode, Value) {
    let resp = client
        .post(app.url("/api/v1/webhooks"))
        .json(&body)
        .send()
        .await
        .expect("create a webhook");
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Registers `url` for the default tenant, all event types; the created endpoint.
pub(crate) async fn register(app: &TestApp, url: &str) -> Value {
    let (status, body) = create(app, &app.client, json!({"url": url})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// `method path` with a JSON body (or none) as `client`: status and body.
pub(crate) async fn call(
    app: &TestApp,
    client: &reqwest::Client,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = client.request(method, app.url(path));
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}
