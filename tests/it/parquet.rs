//! A sheet exported as Parquet and read back by pyarrow, the Apache Arrow project's own reader:
//! every column with its Parquet type, every row with the values the rows endpoint gives.

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The venv's python with pyarrow (tests/stack/test.sh installs it and exports `SHEETRELAY_PARQUET_PYTHON`).
fn python() -> PathBuf {
    harness::venvs::python("SHEETRELAY_PARQUET_PYTHON", "parquet-venv", "pyarrow")
}

/// pyarrow's reading of `bytes`.
pub(crate) fn read(bytes: &[u8]) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("export.parquet");
    std::fs::write(&path, bytes).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("parquet/read.py");
    let out = Command::new(python())
        .arg(script)
        .arg(&path)
        .output()
        .expect("run pyarrow");
    assert!(
        out.status.success(),
        "pyarrow could not read the export: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

async fn export(app: &TestApp, id: &str) -> Vec<u8> {
    let resp = app
        .client
        .get(app.url(&format!(
            "/api/v1/files/{id}/rows/export?sheet=0&format=parquet"
        )))
        .send()
        .await
        .expect("export");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.apache.parquet"
    );
    assert!(resp.headers()["content-disposition"]
        .to_str()
        .expect("ascii")
        .contains(".parquet"));
    resp.bytes().await.expect("body").to_vec()
}

#[tokio::test]
async fn every_column_keeps_its_type_and_every_row_its_values() {
    let app = TestApp::spawn().await;
    let csv = "id,amount,paid,issued,at,name,name\n\
               1,2.5,true,2024-01-31,2024-01-31T09:05:00,Alice,=1+1\n\
               2,-3,false,2024-02-29,2024-02-29T23:59:59,山田,\n\
               3,,true,,,,x\n"
        .to_owned();
    let id = app.upload_parsed("typed.csv", csv.into_bytes()).await;
    let read = read(&export(&app, &id).await);
    assert_eq!(
        read["columns"],
        json!([
            ["id", "int64"],
            ["amount", "double"],
            ["paid", "bool"],
            ["issued", "date32[day]"],
            ["at", "timestamp[us]"],
            ["name", "string"],
            ["name_2", "string"],
        ])
    );
    assert_eq!(
        read["rows"],
        json!([
            [
                1,
                2.5,
                true,
                "2024-01-31",
                "2024-01-31T09:05:00",
                "Alice",
                "=1+1"
            ],
            [
                2,
                -3.0,
                false,
                "2024-02-29",
                "2024-02-29T23:59:59",
                "山田",
                null
            ],
            [3, null, true, null, null, null, "x"],
        ])
    );
}

#[tokio::test]
async fn a_sheet_of_many_row_groups_comes_back_whole_and_in_order() {
    let app = TestApp::spawn_with(|cfg| cfg.max_upload_bytes = 64 * 1024 * 1024).await;
    let rows = 200_000;
    let mut csv = String::from("n,half,label\n");
    for i in 0..rows {
        csv.push_str(&format!("{i},{},row {i}\n", f64::from(i) / 2.0));
    }
    let id = app.upload_parsed("many.csv", csv.into_bytes()).await;
    let read = read(&export(&app, &id).await);
    let got = read["rows"].as_array().expect("rows");
    assert_eq!(got.len(), rows as usize);
    assert!(read["row_groups"].as_u64().expect("groups") >= 2);
    for (i, row) in got.iter().enumerate() {
        assert_eq!(row[0], json!(i), "row {i} in order");
        assert_eq!(row[2], json!(format!("row {i}")));
    }
    assert_eq!(got[3][1], json!(1.5));
}
