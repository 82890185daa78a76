//! Early refusals reach the client: uploads refused before their body is read (a wrong key, a
//! tenant over its upload rate) are sent by Python's httpx at concurrency 16, and every one of
//! them comes back as a status with its JSON code, none as a reset or a broken connection
//! (`api/src/lingering.rs`). Chromium's `fetch` does the same in `tests/browser/refusals.test.mjs`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use harness::app::TestApp;
use serde_json::Value;

/// The venv's python with httpx (tests/stack/test.sh installs it and exports `SHEETRELAY_EDGE_PYTHON`).
fn python() -> PathBuf {
    harness::venvs::python("SHEETRELAY_EDGE_PYTHON", "edge-venv", "httpx")
}

/// What `tests/edge/refusals.py` read.
#[derive(Debug)]
struct Read {
    /// `"<status> <code>"` → how many.
    answers: HashMap<String, usize>,
    retry_after: usize,
    /// Errors raised instead of an answer.
    lost: Vec<String>,
}

/// Sends `count` uploads of about `size` bytes with `key`, 16 at a time.
async fn send(app: &TestApp, key: &str, count: usize, size: usize) -> Read {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("edge/refusals.py");
    let args = [
        app.url(""),
        key.to_owned(),
        count.to_string(),
        "16".to_owned(),
        size.to_string(),
    ];
    let python = python();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .args(args)
            .output()
            .expect("run refusals.py")
    })
    .await
    .expect("join");
    assert!(
        out.status.success(),
        "refusals.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let answers = read["answers"].as_object().expect("answers");
    Read {
        answers: answers
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().expect("a count") as usize))
            .collect(),
        retry_after: read["retry_after"].as_u64().expect("a count") as usize,
        lost: read["lost"]
            .as_array()
            .expect("lost")
            .iter()
            .map(|e| e.as_str().expect("text").to_owned())
            .collect(),
    }
}

#[tokio::test]
async fn uploads_refused_before_their_body_is_read_are_answered_not_reset() {
    const COUNT: usize = 200;
    // Bodies much larger than a socket's buffers: the answer is given while they are being sent.
    const SIZE: usize = 512 * 1024;
    let app = TestApp::spawn().await;
    // An upload read to its end keeps its connection for the next request.
    let accepted = app.upload("a.csv", b"id\n1\n".to_vec(), None).await;
    assert_eq!(accepted.status(), reqwest::StatusCode::ACCEPTED);
    assert_eq!(accepted.headers().get("connection"), None);

    let wrong_key = send(&app, "sr_not-a-key", COUNT, SIZE).await;
    assert_eq!(wrong_key.lost, Vec::<String>::new(), "{wrong_key:?}");
    assert_eq!(
        wrong_key.answers,
        HashMap::from([("401 unauthorized".to_owned(), COUNT)])
    );

    let set = app.api_command(&[
        "tenants",
        "set",
        "limited",
        "--new",
        "--upload-rate",
        "1/min",
    ]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let key = api::auth::api_key::create(&app.db, "limited", "refusals")
        .await
        .expect("a key")
        .secret;
    let limited = send(&app, &key, COUNT, SIZE).await;
    assert_eq!(limited.lost, Vec::<String>::new(), "{limited:?}");
    let refused = limited
        .answers
        .get("429 rate_limited")
        .copied()
        .unwrap_or(0);
    let accepted = limited.answers.get("202 None").copied().unwrap_or(0);
    assert_eq!(
        (refused + accepted, limited.answers.len()),
        (COUNT, 1 + usize::from(accepted > 0)),
        "{limited:?}"
    );
    assert!(accepted <= 1, "{limited:?}");
    assert_eq!(limited.retry_after, refused, "every 429 says when to retry");
}
