//! Every planted-fault file of `harness::faults`, CSV and xlsx, uploaded through the api with its
//! case's schema as the template and validated by a real worker: the error report must hold
//! exactly the planted errors (sheet, row, column, field, code, constraint) and no others.
//! `tests/it/oracle.rs` holds the same planted errors against the `frictionless` reference, so
//! the two together compare our verdicts with the reference's row by row.

use harness::app::TestApp;
use harness::faults::{self, FileKind};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Every record of a file's report, paging through it, without the free-text keys.
async fn all_errors(app: &TestApp, file_id: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after: Option<i64> = None;
    loop {
        let path = match after {
            Some(a) => format!("/api/v1/files/{file_id}/errors?limit=1000&after={a}"),
            None => format!("/api/v1/files/{file_id}/errors?limit=1000"),
        };
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for e in body["errors"].as_array().expect("errors") {
            let mut e = e.clone();
            let record = e.as_object_mut().expect("an object");
            assert!(record
                .remove("message")
                .is_some_and(|m| m.as_str().is_some_and(|m| !m.is_empty())));
            record.remove("value");
            out.push(e);
        }
        match body["next_after"].as_i64() {
            Some(a) => after = Some(a),
            None => return out,
        }
    }
}

fn sorted(mut records: Vec<Value>) -> Vec<Value> {
    records.sort_by_key(|r| r.to_string());
    records
}

#[tokio::test]
async fn every_planted_fault_comes_back_exactly_and_nothing_else() {
    let app = TestApp::spawn().await;
    let cases = faults::cases();
    let mut uploads = Vec::new();
    for case in &cases {
        let name = case.name.replace('_', "-");
        let (status, body) = app
            .put_json(
                &format!("/api/v1/templates/{name}"),
                &json!({"schema": case.schema, "on_invalid": "keep_invalid_rows"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{}: {body}", case.name);
        for kind in [FileKind::Csv, FileKind::Xlsx] {
            let file_name = match kind {
                FileKind::Csv => format!("{}.csv", case.name),
                FileKind::Xlsx => format!("{}.xlsx", case.name),
            };
            let resp = app
                .upload_with(&file_name, case.file(kind).to_vec(), &[("template", &name)])
                .await;
            assert_eq!(resp.status(), StatusCode::ACCEPTED, "{file_name}");
            let body: Value = resp.json().await.expect("upload body");
            uploads.push((
                case,
                kind,
                file_name,
                body["task"]["id"].as_str().expect("task id").to_owned(),
                body["source_file"]["id"]
                    .as_str()
                    .expect("file id")
                    .to_owned(),
            ));
        }
    }
    let task_ids: Vec<&str> = uploads.iter().map(|u| u.3.as_str()).collect();
    let tasks = app.run_worker_until_all_final(&task_ids, |_| {}).await;
    let mut wrong = Vec::new();
    for ((case, kind, file_name, _, file_id), task) in uploads.iter().zip(&tasks) {
        assert_eq!(task["status"], "COMPLETED", "{file_name}: {task}");
        let got = sorted(all_errors(&app, file_id).await);
        let want = sorted(faults::expected_as_api_errors(case, *kind));
        if got != want {
            let lines = |records: Vec<&Value>| -> String {
                records.iter().map(|r| format!("\n    {r}")).collect()
            };
            let missing = lines(want.iter().filter(|w| !got.contains(w)).collect());
            let unexpected = lines(got.iter().filter(|g| !want.contains(g)).collect());
            wrong.push(format!(
                "{file_name}:\n  missing:{missing}\n  unexpected:{unexpected}"
            ));
        }
        // The counts agree with the records (no case is capped).
        let validation = &task["result"]["validation"];
        if validation["errors_total"] != json!(want.len())
            || validation["errors_truncated"] != false
        {
            wrong.push(format!("{file_name}: counts {validation}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
