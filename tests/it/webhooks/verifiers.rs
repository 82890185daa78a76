//! The official Standard Webhooks verifiers, for Python (PyPI `standardwebhooks`) and JavaScript
//! (npm `standardwebhooks`), pinned like the other test tools, accept every signature the worker
//! sends, with either secret during a rotation, and refuse a tampered body, a stale timestamp and
//! another secret.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use harness::app::TestApp;
use harness::receiver::{Received, Receiver};
use harness::worker::{run_config, RunningWorker};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use shared::webhooks::{signature, SigningSecret};
use tokio::io::AsyncWriteExt as _;

use super::{call, register};
use crate::events::{fail_task, upload_pending};

const WAIT: Duration = Duration::from_secs(20);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv's python with standardwebhooks (tests/stack/test.sh installs it and exports `SHEETRELAY_WEBHOOKS_PYTHON`).
pub(crate) fn python() -> PathBuf {
    harness::venvs::python(
        "SHEETRELAY_WEBHOOKS_PYTHON",
        "webhooks-venv",
        "standardwebhooks",
    )
}

/// Runs a verifier on `cases`; its verdict on each.
pub(crate) async fn verdicts(program: &Path, script: &str, cases: &Value) -> Vec<Value> {
    let mut child = tokio::process::Command::new(program)
        .arg(repo().join("tests/webhooks").join(script))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(cases.to_string().as_bytes())
        .await
        .expect("write the cases");
    drop(stdin);
    let out = child.wait_with_output().await.expect("the verifier ends");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON array of verdicts")
}

fn case(secret: &SigningSecret, headers: Value, body: &[u8]) -> Value {
    json!({
        "secret": secret.to_whsec(),
        "headers": headers,
        "body": std::str::from_utf8(body).expect("a UTF-8 body"),
    })
}

fn headers_of(r: &Received) -> Value {
    json!({
        "webhook-id": r.header("webhook-id"),
        "webhook-timestamp": r.header("webhook-timestamp"),
        "webhook-signature": r.header("webhook-signature"),
    })
}

#[tokio::test]
async fn the_official_verifiers_accept_every_delivery_and_refuse_forgeries() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let created = register(&app, &receiver.url()).await;
    let id = created["id"].as_str().expect("id");
    let first =
        SigningSecret::from_whsec(created["secret"].as_str().expect("secret")).expect("whsec");

    let worker = RunningWorker::start(run_config(
        &app.config.database.url,
        app.config.storage.clone(),
    ));
    // One delivery before the rotation, then some during it: a failure, a parse, a delete.
    let (task, _) = upload_pending(&app, &app.client, "a.csv").await;
    fail_task(&app.db, task).await;
    receiver.wait_for(1, WAIT).await;
    let (status, rotated) = call(
        &app,
        &app.client,
        Method::POST,
        &format!("/api/v1/webhooks/{id}/secret/rotate"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let second =
        SigningSecret::from_whsec(rotated["secret"].as_str().expect("secret")).expect("whsec");
    let resp = app
        .upload("people.csv", b"id,name\n1,alice\n".to_vec(), None)
        .await;
    let upload: Value = resp.json().await.expect("upload body");
    receiver.wait_for(2, WAIT).await;
    let file = upload["source_file"]["id"].as_str().expect("file id");
    let resp = app
        .client
        .delete(app.url(&format!("/api/v1/files/{file}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let got = receiver.wait_for(3, WAIT).await;
    worker.stop().await;
    let types: Vec<String> = got
        .iter()
        .map(|r| r.json()["type"].as_str().expect("type").to_owned())
        .collect();
    assert_eq!(types, ["task.failed", "task.completed", "file.deleted"]);

    // (case, accepted?)
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    let mut expect = |c: Value, ok: bool| {
        cases.push(c);
        expected.push(ok);
    };
    expect(case(&first, headers_of(&got[0]), &got[0].body), true);
    expect(case(&second, headers_of(&got[0]), &got[0].body), false);
    for r in &got[1..] {
        // During the rotation a receiver with either secret accepts.
        expect(case(&first, headers_of(r), &r.body), true);
        expect(case(&second, headers_of(r), &r.body), true);
        let mut tampered = r.body.to_vec();
        let at = tampered
            .iter()
            .position(|&b| b == b'd')
            .expect("a byte to change");
        tampered[at] = b'D';
        expect(case(&second, headers_of(r), &tampered), false);
        expect(
            case(&SigningSecret::generate(), headers_of(r), &r.body),
            false,
        );
        // Correctly signed, but ten minutes old: a replayed request.
        let stale = chrono::Utc::now().timestamp() - 600;
        let stale_headers = json!({
            "webhook-id": r.header("webhook-id"),
            "webhook-timestamp": stale.to_string(),
            "webhook-signature": signature::sign(&second, r.header("webhook-id"), stale, &r.body),
        });
        expect(case(&second, stale_headers, &r.body), false);
    }
    let cases = Value::Array(cases);
    for (name, program, script) in [
        ("python", python(), "verify.py"),
        ("javascript", PathBuf::from("node"), "verify.mjs"),
    ] {
        let verdicts = verdicts(&program, script, &cases).await;
        let accepted: Vec<bool> = verdicts.iter().map(|v| v["ok"] == true).collect();
        assert_eq!(accepted, expected, "{name}: {verdicts:?}");
    }
}
