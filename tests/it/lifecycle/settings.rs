//! `api tenants set` with retention, and its bad input: a limit of 0, a retention that is not a
//! duration or is too short, an unknown tenant. Each is refused with a message that says why,
//! and changes nothing.

use harness::app::TestApp;

use super::{api, show};

#[tokio::test]
async fn tenants_set_takes_a_retention_and_refuses_bad_input_with_a_clear_message() {
    let app = TestApp::spawn().await;
    let refused = |args: &[&str], says: &str| {
        let (ok, _, err) = api(&app, args);
        assert!(!ok, "{args:?} was accepted");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    refused(
        &["tenants", "set", "default", "--upload-rate", "0/min"],
        "the count must be a whole number from 1",
    );
    refused(
        &["tenants", "set", "default", "--retention", "soon"],
        "invalid duration",
    );
    refused(
        &["tenants", "set", "default", "--retention", "10m"],
        "a retention must be at least 1h",
    );
    refused(&["tenants", "set", "default"], "nothing to set");
    refused(
        &["tenants", "set", "typo", "--retention", "30d"],
        "unknown tenant \"typo\"",
    );
    let shown = show(&app, "default");
    assert_eq!(shown["retention"], "none");
    assert_eq!(shown["retention_is_default"], true);
    assert_eq!(show(&app, "typo")["updated_at"], serde_json::Value::Null);

    let (ok, _, err) = api(&app, &["tenants", "set", "default", "--retention", "90d"]);
    assert!(ok, "{err}");
    let shown = show(&app, "default");
    assert_eq!(shown["retention"], "90d", "{shown}");
    assert_eq!(shown["retention_is_default"], false);
    // `none` drops the tenant's own value: the default (RETENTION, none here) applies again.
    let (ok, _, err) = api(&app, &["tenants", "set", "default", "--retention", "none"]);
    assert!(ok, "{err}");
    assert_eq!(show(&app, "default")["retention_is_default"], true);
    // A tenant before its first request, on purpose.
    let (ok, _, err) = api(
        &app,
        &["tenants", "set", "newco", "--new", "--retention", "1h"],
    );
    assert!(ok, "{err}");
    assert_eq!(show(&app, "newco")["retention"], "1h");
}
