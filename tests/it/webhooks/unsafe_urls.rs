//! A webhook URL that is not `https`, or whose host is or resolves to a non-public address, is
//! refused when it is registered or changed: `422 unsafe_url`, nothing stored. Each case is a
//! test of its own. (The worker's own check at connect time: `delivery::unsafe_addresses`.)

use harness::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::{call, create, register};

/// An api with the production rule: private networks not allowed.
async fn strict_app() -> TestApp {
    TestApp::spawn_with(|c| c.webhooks.keys.allow_private_networks = false).await
}

async fn assert_refused(url: &str) {
    let app = strict_app().await;
    let (status, body) = create(&app, &app.client, json!({"url": url})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
    assert_eq!(body["error"]["code"], "unsafe_url", "{url}: {body}");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_endpoints")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(stored, 0, "{url} was stored");
}

#[tokio::test]
async fn plain_http_is_refused() {
    assert_refused("http://hooks.example.test/in").await;
}

#[tokio::test]
async fn a_loopback_address_is_refused() {
    assert_refused("https://127.0.0.1:8443/in").await;
}

#[tokio::test]
async fn the_ipv6_loopback_is_refused() {
    assert_refused("https://[::1]/in").await;
}

#[tokio::test]
async fn a_private_address_is_refused() {
    assert_refused("https://10.0.0.7/in").await;
    assert_refused("https://192.168.1.20/in").await;
}

#[tokio::test]
async fn the_cloud_metadata_address_is_refused() {
    assert_refused("https://169.254.169.254/latest/meta-data/").await;
}

#[tokio::test]
async fn an_ipv4_address_in_ipv6_clothing_is_refused() {
    assert_refused("https://[::ffff:127.0.0.1]/in").await;
}

#[tokio::test]
async fn a_loopback_address_written_as_one_number_is_refused() {
    assert_refused("https://2130706433/in").await;
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused() {
    assert_refused("https://localhost/in").await;
}

#[tokio::test]
async fn credentials_in_the_url_are_refused() {
    assert_refused("https://user:pass@hooks.example.test/in").await;
}

#[tokio::test]
async fn a_name_that_does_not_resolve_is_refused() {
    assert_refused("https://no-such-host.invalid/in").await;
}

#[tokio::test]
async fn a_change_to_an_unsafe_url_is_refused_and_keeps_the_old_one() {
    let app = strict_app().await;
    // A public address needs no DNS (the tests have none to rely on).
    let created = register(&app, "https://93.184.215.14/in").await;
    let path = format!("/api/v1/webhooks/{}", created["id"].as_str().expect("id"));
    let (status, body) = call(
        &app,
        &app.client,
        Method::PATCH,
        &path,
        Some(json!({"url": "https://127.0.0.1/"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "unsafe_url");
    let (_, still) = call(&app, &app.client, Method::GET, &path, None).await;
    assert_eq!(still["url"], "https://93.184.215.14/in");
}

#[tokio::test]
async fn private_networks_are_allowed_when_the_setting_says_so() {
    let app = TestApp::spawn_with(|c| c.webhooks.keys.allow_private_networks = true).await;
    register(&app, "http://127.0.0.1:9/in").await;
    register(&app, "https://localhost/in").await;
}
