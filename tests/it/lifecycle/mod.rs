//! The data lifecycle on real Postgres and Azurite: per-tenant retention, tenant purges (with
//! runs stopped mid-way, as a crash would stop them) and the orphan-blob sweep. The jobs are
//! driven directly, one run per call; time is moved by ageing rows in SQL, or by the sweep's
//! clock, never by waiting.

mod orphans;
mod purge;
mod retention;
mod settings;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use std::time::Duration;

/// A template with one required, numeric field, so that a file with bad rows leaves error
/// records and rejected rows.
fn amounts_template() -> Value {
    json!({
        "schema": {"fields": [
            {"name": "name", "type": "string"},
            {"name": "amount", "type": "number", "constraints": {"required": true}}
        ]},
        "on_invalid": "keep_invalid_rows"
    })
}

/// 600 rows (three row chunks), every tenth with a bad amount.
fn amounts_csv() -> Vec<u8> {
    let mut csv = String::from("name,amount\n");
    for i in 0..600 {
        if i % 10 == 0 {
            csv.push_str(&format!("n{i},lots\n"));
        } else {
            csv.push_str(&format!("n{i},{i}\n"));
        }
    }
    csv.into_bytes()
}

/// Stores the amounts template for the tenant of `client` and uploads [`amounts_csv`] against
/// it (parsed by [`parse_all`]); returns the file's id.
async fn templated_file(app: &TestApp, client: &reqwest::Client) -> Uuid {
    let resp = client
        .put(app.url("/api/v1/templates/amounts"))
        .json(&amounts_template())
        .send()
        .await
        .expect("PUT template");
    assert!(resp.status().is_success(), "{}", resp.status());
    let part = reqwest::multipart::Part::bytes(amounts_csv()).file_name("amounts.csv");
    let form = reqwest::multipart::Form::new()
        .text("template", "amounts")
        .part("file", part);
    let upload = accepted(client.post(app.url("/api/v1/files")).multipart(form)).await;
    id_of(&upload)
}

/// Runs a real worker until every task of every tenant is COMPLETED, and stops it.
async fn parse_all(app: &TestApp) {
    let cfg = harness::worker::run_config(&app.config.database.url, app.config.storage.clone());
    let worker = harness::worker::RunningWorker::start(cfg);
    harness::worker::eventually_some(Duration::from_secs(60), "every task final", || async {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM tasks WHERE status NOT IN ('COMPLETED', 'FAILED')",
        )
        .fetch_one(&app.db)
        .await
        .expect("count");
        (open == 0).then_some(())
    })
    .await;
    worker.stop().await;
    let failed: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE status = 'FAILED'")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(failed, 0);
}

/// Uploads a small CSV with `client` without parsing it; the upload's `202` body.
async fn unparsed_file(app: &TestApp, client: &reqwest::Client, name: &str) -> Value {
    let part = reqwest::multipart::Part::bytes(b"a,b\n1,2\n".to_vec()).file_name(name.to_owned());
    let form = reqwest::multipart::Form::new().part("file", part);
    accepted(client.post(app.url("/api/v1/files")).multipart(form)).await
}

async fn accepted(req: reqwest::RequestBuilder) -> Value {
    let resp = req.send().await.expect("request");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    resp.json().await.expect("upload body")
}

fn id_of(upload: &Value) -> Uuid {
    upload["source_file"]["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("file id")
}

/// Moves the file's upload `days` into the past.
async fn age(app: &TestApp, file: Uuid, days: i32) {
    sqlx::query(
        "UPDATE source_files SET created_at = now() - make_interval(days => $2) WHERE id = $1",
    )
    .bind(file)
    .bind(days)
    .execute(&app.db)
    .await
    .expect("age the file");
}

/// The rows that still hang on `file`, by table (only the tables that have some).
async fn remains_of(app: &TestApp, file: Uuid) -> Vec<(&'static str, i64)> {
    let queries: [(&str, &str); 9] = [
        (
            "source_files",
            "SELECT count(*) FROM source_files WHERE id = $1",
        ),
        (
            "tasks",
            "SELECT count(*) FROM tasks WHERE source_file_id = $1",
        ),
        (
            "parsed_sheets",
            "SELECT count(*) FROM parsed_sheets WHERE source_file_id = $1",
        ),
        (
            "parsed_row_chunks",
            "SELECT count(*) FROM parsed_row_chunks WHERE source_file_id = $1",
        ),
        (
            "validation_errors",
            "SELECT count(*) FROM validation_errors WHERE source_file_id = $1",
        ),
        (
            "rejected_rows",
            "SELECT count(*) FROM rejected_rows WHERE source_file_id = $1",
        ),
        (
            "events",
            "SELECT count(*) FROM events WHERE source_file_id = $1",
        ),
        (
            "outbox_messages",
            "SELECT count(*) FROM outbox_messages WHERE payload ->> 'source_file_id' = $1::text",
        ),
        (
            "webhook_deliveries",
            "SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
             WHERE e.source_file_id = $1",
        ),
    ];
    let mut left = Vec::new();
    for (table, sql) in queries {
        let n: i64 = sqlx::query_scalar(sql)
            .bind(file)
            .fetch_one(&app.db)
            .await
            .expect("count");
        if n > 0 {
            left.push((table, n));
        }
    }
    left
}

/// The blob name of `file`.
async fn blob_of(app: &TestApp, file: Uuid) -> String {
    sqlx::query_scalar("SELECT blob_name FROM source_files WHERE id = $1")
        .bind(file)
        .fetch_one(&app.db)
        .await
        .expect("blob name")
}

/// Runs `api` with `args`; its exit status and stderr.
fn api(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    let out = app.api_command(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `api tenants show <tenant>` as JSON.
fn show(app: &TestApp, tenant: &str) -> Value {
    let (ok, out, err) = api(app, &["tenants", "show", tenant]);
    assert!(ok, "{err}");
    serde_json::from_str(&out).expect("one JSON object")
}
