//! tuspy, the tus project's Python client, as an oracle: it uploads a file in chunks with
//! SHA-256 checksums, stops half-way and resumes from the server's offset with a second
//! uploader, and the task completes with the file's rows.

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::app::TestApp;
use reqwest::StatusCode;
use shared::domain::digest::sha256_hex;

use super::client::{csv_of, rows_of, Tus};

/// The venv's python with tuspy (tests/stack/test.sh installs it and exports `SHEETRELAY_TUS_PYTHON`).
fn python() -> PathBuf {
    harness::venvs::python("SHEETRELAY_TUS_PYTHON", "tus-venv", "tuspy")
}

#[tokio::test]
async fn tuspy_uploads_in_checksummed_chunks_resumes_and_the_task_completes() {
    let app = TestApp::spawn().await;
    let csv = csv_of(3 * 1024 * 1024 + 12345);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tuspy.csv");
    std::fs::write(&path, &csv).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tus/upload.py");
    let endpoint = app.url("/api/v1/uploads");
    let (key, python) = (app.key.clone(), python());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .arg(endpoint)
            .arg(key)
            .arg(&path)
            .arg((1024 * 1024).to_string())
            .output()
            .expect("run tuspy")
    })
    .await
    .expect("joined");
    assert!(
        out.status.success(),
        "tuspy failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8(out.stdout).expect("UTF-8");
    let location = url.trim().trim_start_matches(&app.base_url).to_owned();

    let (status, body) = Tus::new(&app).result(&location).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["source_file"]["file_name"], "tuspy.csv");
    assert_eq!(body["source_file"]["sha256"], sha256_hex(&csv));
    let task = app
        .run_worker_until_completed(body["task"]["id"].as_str().expect("task id"))
        .await;
    let rows = rows_of(&app, body["source_file"]["id"].as_str().expect("id")).await;
    let expected = csv.iter().filter(|&&b| b == b'\n').count() - 1;
    assert_eq!(rows.len(), expected);
    assert_eq!(task["result"]["rows_total"], expected);
    assert_eq!(rows[0]["values"][1], "name 0");
}
