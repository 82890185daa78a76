//! The signing-key cache. Keys are fetched (discovery, then the key set) on the first token and
//! then served from memory; unknown key ids fetch again at most once per
//! `ENTRA_JWKS_MIN_REFRESH`, however many of them arrive, so a caller cannot make the api hammer
//! the provider; a rotated key is picked up. A provider that cannot be reached or answers 500
//! is the api's problem, not the token's: `503 auth_unavailable`, asked again no more often.

use std::time::{Duration, Instant};

use super::*;

/// `ENTRA_JWKS_MIN_REFRESH` here: long enough for a burst of requests to fit in on a loaded CI
/// host (they take about 0.1 s on an idle one), short enough to wait out.
const MIN_REFRESH: Duration = Duration::from_secs(5);

async fn spawn_app_with_min_refresh(authority: &str) -> TestApp {
    let min_refresh = format!("{}s", MIN_REFRESH.as_secs());
    spawn_app(
        authority,
        &[
            ("ENTRA_TENANT_ID", TENANT),
            ("ENTRA_JWKS_MIN_REFRESH", &min_refresh),
        ],
    )
    .await
}

/// Tokens signed by `key` naming `n` key ids the provider does not know.
fn unknown_kid_tokens(provider: &Provider, key: &SigningKey, n: usize) -> Vec<String> {
    let claims = claims(&provider.base, json!({}));
    (0..n)
        .map(|i| key.sign_as(&format!("made-up-{i}"), &claims))
        .collect()
}

/// [`assert_all_at_once`], and within [`MIN_REFRESH`], as the fetch counts after it assume.
async fn burst_within_min_refresh(app: &TestApp, tokens: &[String], expected: StatusCode) {
    let started = Instant::now();
    assert_all_at_once(app, tokens, expected).await;
    assert!(
        started.elapsed() < MIN_REFRESH,
        "the burst took {:?}, longer than the min refresh it must fit in",
        started.elapsed()
    );
}

#[tokio::test]
async fn keys_are_fetched_once_and_unknown_key_ids_fetch_again_at_most_once_per_min_refresh() {
    let provider = Provider::start().await;
    let key1 = SigningKey::generate("k1");
    provider.publish(&[&key1]);
    let app = spawn_app_with_min_refresh(&provider.base).await;
    assert_eq!(
        provider.fetches(),
        (0, 0),
        "nothing is fetched before a token comes"
    );

    // Many valid requests, twenty of them at once: one discovery and one key-set fetch.
    let token = key1.sign(&claims(&provider.base, json!({})));
    assert_all_at_once(&app, &vec![token.clone(); 20], StatusCode::OK).await;
    for _ in 0..10 {
        assert_eq!(status_with(&app, &token).await, StatusCode::OK);
    }
    assert_eq!(provider.fetches(), (1, 1), "cached after the first fetch");

    // Unknown key ids right after that fetch are refused without asking the provider.
    assert_all_at_once(
        &app,
        &unknown_kid_tokens(&provider, &key1, 20),
        StatusCode::UNAUTHORIZED,
    )
    .await;
    assert_eq!(
        provider.fetches(),
        (1, 1),
        "no fetch within the min refresh"
    );

    // Once it has passed, a burst of unknown key ids fetches once between them.
    tokio::time::sleep(MIN_REFRESH).await;
    let burst = unknown_kid_tokens(&provider, &key1, 30);
    burst_within_min_refresh(&app, &burst, StatusCode::UNAUTHORIZED).await;
    assert_eq!(provider.fetches(), (2, 2), "one fetch for the whole burst");

    // Rotation: the provider swaps k1 for k2; the first k2 token (past the min refresh)
    // fetches it, and k2 is cached from then on while k1 is gone.
    let key2 = SigningKey::generate("k2");
    provider.publish(&[&key2]);
    tokio::time::sleep(MIN_REFRESH).await;
    let rotated = key2.sign(&claims(&provider.base, json!({})));
    for _ in 0..5 {
        assert_eq!(status_with(&app, &rotated).await, StatusCode::OK, "k2");
    }
    assert_eq!(provider.fetches(), (3, 3));
    assert_eq!(
        status_with(&app, &token).await,
        StatusCode::UNAUTHORIZED,
        "the retired k1"
    );
    assert_eq!(provider.fetches(), (3, 3));
}

/// A 503 `auth_unavailable` with the contract's body, and no `WWW-Authenticate` (the token is
/// not what is wrong).
async fn assert_auth_unavailable(resp: reqwest::Response, what: &str) {
    assert!(resp.headers().get("www-authenticate").is_none(), "{what}");
    let error = error_of(resp, StatusCode::SERVICE_UNAVAILABLE, what).await;
    assert_eq!(error["code"], "auth_unavailable", "{what}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("retry")),
        "{what}: {error}"
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_a_503_and_tokens_at_fault_are_still_a_401() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let authority = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let app = spawn_app(&authority, &[("ENTRA_TENANT_ID", TENANT)]).await;
    let key = SigningKey::generate("k1");
    let token = key.sign(&claims(&authority, json!({})));

    assert_auth_unavailable(list_files(&app, &token).await, "a good token").await;
    // Again within ENTRA_JWKS_MIN_REFRESH: the same answer.
    assert_auth_unavailable(list_files(&app, &token).await, "the same token again").await;
    // What is wrong before any key is needed is still the token's fault.
    assert_eq!(
        status_with(&app, "eyJ.not.a-token").await,
        StatusCode::UNAUTHORIZED
    );
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(&authority, json!({})),
        &EncodingKey::from_secret(b"secret"),
    )
    .expect("sign");
    assert_eq!(status_with(&app, &hs256).await, StatusCode::UNAUTHORIZED);
    // API keys do not need Entra.
    let (status, _) = app.get_json("/api/v1/files").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_failing_provider_is_a_503_asked_at_most_once_per_min_refresh_until_it_recovers() {
    let provider = Provider::start().await;
    let key1 = SigningKey::generate("k1");
    provider.publish(&[&key1]);
    provider.set_outage(true);
    let app = spawn_app_with_min_refresh(&provider.base).await;
    let token1 = key1.sign(&claims(&provider.base, json!({})));

    // Down from the start: a good token cannot be checked. The discovery request failed, so
    // no key set was asked for; and within ENTRA_JWKS_MIN_REFRESH a burst of tokens gets the
    // same answer without another request.
    assert_auth_unavailable(list_files(&app, &token1).await, "k1, no keys yet").await;
    assert_eq!(provider.fetches(), (1, 0));
    let burst = vec![token1.clone(); 20];
    burst_within_min_refresh(&app, &burst, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(provider.fetches(), (1, 0));

    // Back up: past the min refresh, the next token fetches the keys.
    provider.set_outage(false);
    tokio::time::sleep(MIN_REFRESH).await;
    assert_eq!(status_with(&app, &token1).await, StatusCode::OK);
    assert_eq!(provider.fetches(), (2, 1));

    // Down again: tokens of a cached key keep working without asking it; a token of a key not
    // seen yet is a 503, not a 401.
    provider.set_outage(true);
    assert_eq!(status_with(&app, &token1).await, StatusCode::OK);
    let key2 = SigningKey::generate("k2");
    let token2 = key2.sign(&claims(&provider.base, json!({})));
    tokio::time::sleep(MIN_REFRESH).await;
    assert_auth_unavailable(list_files(&app, &token2).await, "k2 during the outage").await;
    assert_eq!(provider.fetches(), (3, 1));

    // Back, publishing k2: past the min refresh, k2 is fetched and accepted.
    provider.publish(&[&key1, &key2]);
    provider.set_outage(false);
    tokio::time::sleep(MIN_REFRESH).await;
    assert_eq!(status_with(&app, &token2).await, StatusCode::OK);
    assert_eq!(provider.fetches(), (4, 2));
}
