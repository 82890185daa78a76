//! `webhook_rows` to a real receiver: chunk k of n in order, each signed per Standard Webhooks
//! (the official Python verifier accepts every one) with `webhook-id`
//! `<file_id>.<destination_id>.<sheet>.<chunk>`; a receiver that answers 500 gets the same
//! chunk again, with the same id, and the delivery resumes there, not at the first chunk.

use harness::app::TestApp;
use harness::receiver::{Answer, Receiver};
use serde_json::{json, Value};

use super::{create, delivery_in, rows_of, upload, worker};

const CSV: &str = "id,name\n1,Ada\n2,Grace\n3,Edsger\n4,Barbara\n5,Donald\n";

/// The official Python verifier's verdict on each request.
async fn verified(secret: &str, received: &[harness::receiver::Received]) -> Vec<bool> {
    let cases: Vec<Value> = received
        .iter()
        .map(|r| {
            json!({"secret": secret, "body": String::from_utf8(r.body.to_vec()).expect("utf-8"),
                   "headers": {"webhook-id": r.header("webhook-id"),
                               "webhook-timestamp": r.header("webhook-timestamp"),
                               "webhook-signature": r.header("webhook-signature")}})
        })
        .collect();
    let python = harness::venvs::python(
        "SHEETRELAY_WEBHOOKS_PYTHON",
        "webhooks-venv",
        "standardwebhooks",
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("webhooks/verify.py");
    let mut child = std::process::Command::new(python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run the verifier");
    std::io::Write::write_all(
        &mut child.stdin.take().expect("stdin"),
        Value::from(cases).to_string().as_bytes(),
    )
    .expect("write the cases");
    let out = child.wait_with_output().expect("the verifier ends");
    let verdicts: Vec<Value> = serde_json::from_slice(&out.stdout).expect("verdicts");
    verdicts.iter().map(|v| v["ok"] == true).collect()
}

#[tokio::test]
async fn rows_arrive_in_signed_chunks_in_order_and_resume_at_the_chunk_refused() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    // The first chunk is taken, the second refused once, then everything is taken.
    receiver.script(
        vec![Answer::Status(200), Answer::Status(500)],
        Answer::Status(204),
    );
    let dest = create(
        &app,
        json!({"kind": "webhook_rows", "url": receiver.url(), "chunk_size": 2}),
    )
    .await;
    let (dest_id, secret) = (
        dest["id"].as_str().expect("id").to_owned(),
        dest["secret"].as_str().expect("secret").to_owned(),
    );
    let up = upload(&app, "people.csv", CSV, &[]).await;
    let file = up["source_file"]["id"].as_str().expect("id").to_owned();
    let w = worker(&app, "200ms,400ms,800ms");
    let done = delivery_in(&app, &dest_id, &file, "DELIVERED", None).await;
    w.stop().await;
    assert_eq!(
        (done["chunks"].as_i64(), done["chunks_acked"].as_i64()),
        (Some(3), Some(3))
    );
    assert_eq!(done["attempts"], 2, "{done}");

    let got = receiver.received();
    let ids: Vec<&str> = got.iter().map(|r| r.header("webhook-id")).collect();
    let id = |k: u32| format!("{file}.{dest_id}.0.{k}");
    assert_eq!(
        ids,
        [id(1), id(2), id(2), id(3)],
        "chunk 1 is not sent again"
    );
    let bodies: Vec<Value> = got.iter().map(|r| r.json()).collect();
    assert_eq!(bodies[1], bodies[2], "the same chunk on the retry");
    let chunks: Vec<(i64, i64)> = bodies
        .iter()
        .map(|b| {
            (
                b["chunk"].as_i64().unwrap_or(0),
                b["chunks"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(chunks, [(1, 3), (2, 3), (2, 3), (3, 3)]);
    assert!(bodies
        .iter()
        .all(|b| b["rows_total"] == 5 && b["sheet"] == 0 && b["file_id"] == file.as_str()));
    // Every row once, in order, with the values the rows endpoint serves.
    let sent: Vec<Value> = [&bodies[0], &bodies[2], &bodies[3]]
        .iter()
        .flat_map(|b| b["rows"].as_array().cloned().unwrap_or_default())
        .collect();
    let served = rows_of(&app, &file).await;
    assert_eq!(sent.len(), served.len());
    for (s, r) in sent.iter().zip(&served) {
        assert_eq!(s["row"], r["index"]);
        assert_eq!(
            s["values"],
            json!({"id": r["values"][0], "name": r["values"][1]})
        );
    }
    assert_eq!(
        verified(&secret, &got).await,
        [true; 4],
        "the official verifier"
    );
    // A file.delivered event names the destination, without a manifest.
    let event = super::delivered_event(&app).await;
    assert_eq!(event["data"]["destination_id"], dest_id.as_str());
    assert!(event["data"].get("manifest").is_none(), "{event}");
}

#[tokio::test]
async fn a_rejected_file_completed_by_a_correction_is_delivered_at_its_revision() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let template = json!({"schema": {"fields": [{"name": "id", "type": "integer"},
                                                {"name": "name", "type": "string"}]},
                          "on_invalid": "reject_file"});
    let (status, body) = app.put_json("/api/v1/templates/people", &template).await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    let dest = create(
        &app,
        json!({"kind": "webhook_rows", "url": receiver.url(), "templates": ["people"]}),
    )
    .await;
    let dest_id = dest["id"].as_str().expect("id").to_owned();
    let up = upload(
        &app,
        "p.csv",
        "id,name\n1,Ada\nx,Bob\n",
        &[("template", "people")],
    )
    .await;
    let file = up["source_file"]["id"].as_str().expect("id").to_owned();
    let task = app
        .run_worker_until_final(up["task"]["id"].as_str().expect("task"))
        .await;
    assert_eq!(task["status"], "FAILED", "{task}");
    assert_eq!(
        super::deliveries(&app, &dest_id).await,
        Vec::<Value>::new(),
        "nothing to deliver"
    );

    let (status, body) = app
        .patch_json(
            &format!("/api/v1/files/{file}/corrections"),
            &json!({"corrections": [{"sheet": 0, "row": 3, "field": "id", "value": "2"}]}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    // Queued by the revision's own transaction, at its revision.
    let queued = super::deliveries(&app, &dest_id).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(
        (&queued[0]["status"], &queued[0]["revision"]),
        (&json!("PENDING"), &json!(1))
    );

    let w = worker(&app, "200ms,400ms,800ms");
    delivery_in(&app, &dest_id, &file, "DELIVERED", Some(1)).await;
    w.stop().await;
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    let rows: Vec<Value> = got[0].json()["rows"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let values: Vec<Value> = rows.iter().map(|r| r["values"].clone()).collect();
    assert_eq!(
        values,
        [
            json!({"id": 1, "name": "Ada"}),
            json!({"id": 2, "name": "Bob"})
        ]
    );
    assert_eq!(rows_of(&app, &file).await.len(), 2);
}

#[tokio::test]
async fn a_worker_stopped_mid_delivery_leaves_the_next_worker_the_first_chunk_not_acknowledged() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    // Chunk 1 is taken; chunk 2 never answered while the first worker runs.
    receiver.script(vec![Answer::Status(200), Answer::Hang], Answer::Status(200));
    let dest = create(
        &app,
        json!({"kind": "webhook_rows", "url": receiver.url(), "chunk_size": 2}),
    )
    .await;
    let dest_id = dest["id"].as_str().expect("id").to_owned();
    let up = upload(&app, "people.csv", CSV, &[]).await;
    let file = up["source_file"]["id"].as_str().expect("id").to_owned();
    let mut cfg = harness::worker::run_config(&app.config.database.url, app.config.storage.clone());
    cfg.webhooks.timeout = std::time::Duration::from_secs(120);
    cfg.shutdown_grace = std::time::Duration::from_millis(500);
    let first = harness::worker::RunningWorker::start(cfg);
    receiver.wait_for(2, super::WAIT).await;
    let held = delivery_in(&app, &dest_id, &file, "DELIVERING", Some(0)).await;
    assert_eq!(held["chunks_acked"], 1, "chunk 1 was acknowledged: {held}");
    // Stopped with chunk 2 in flight: handed back, not counted as an attempt.
    first.stop().await;
    let released = delivery_in(&app, &dest_id, &file, "PENDING", Some(0)).await;
    assert_eq!(released["chunks_acked"], 1);

    let second = worker(&app, "200ms,400ms,800ms");
    let done = delivery_in(&app, &dest_id, &file, "DELIVERED", Some(1)).await;
    second.stop().await;
    assert_eq!(done["chunks_acked"], 3);
    let ids: Vec<String> = receiver
        .received()
        .iter()
        .map(|r| r.header("webhook-id").to_owned())
        .collect();
    let id = |k: u32| format!("{file}.{dest_id}.0.{k}");
    assert_eq!(
        ids,
        [id(1), id(2), id(2), id(3)],
        "resumed at chunk 2, with its id"
    );
}
