//! Tenant limits: an upload rate (`429 rate_limited` with `Retry-After`) and a storage quota
//! (`403 quota_exceeded`), each refusing before anything is stored, with the defaults from the
//! settings and a tenant's own values from `api tenants set`.

use harness::app::{TestApp, UploadRows};
use reqwest::StatusCode;
use serde_json::Value;

const CSV: &[u8] = b"a\n1\n";

async fn code_of(resp: reqwest::Response) -> (StatusCode, String) {
    let status = resp.status();
    let body: Value = resp.json().await.expect("a JSON error");
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    )
}

#[tokio::test]
async fn over_its_upload_rate_a_tenant_is_told_when_to_come_back_and_nothing_is_stored() {
    let app =
        TestApp::spawn_with(|cfg| cfg.limits.upload_rate = "2/min".parse().expect("rate")).await;
    for i in 0..2 {
        let resp = app.upload(&format!("{i}.csv"), CSV.to_vec(), None).await;
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
    }
    let resp = app.upload("2.csv", CSV.to_vec(), None).await;
    let retry_after: u64 = resp.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("whole seconds");
    // One upload every 30 s: the next comes within that, and not at once.
    assert!((1..=30).contains(&retry_after), "{retry_after}");
    assert_eq!(
        code_of(resp).await,
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited".to_owned())
    );
    assert_eq!(app.upload_rows().await, UploadRows::each(2));
    assert_eq!(app.blob_names().await.len(), 2);
    // Another tenant has a bucket of its own.
    let other = app.client_for("neighbour").await;
    let part = reqwest::multipart::Part::bytes(CSV.to_vec()).file_name("n.csv");
    let resp = other
        .post(app.url("/api/v1/files"))
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn an_upload_past_the_storage_quota_is_refused_and_its_blob_deleted() {
    let app = TestApp::spawn_with(|cfg| cfg.limits.storage_quota_bytes = 10).await;
    for i in 0..2 {
        let resp = app.upload(&format!("{i}.csv"), CSV.to_vec(), None).await;
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
    }
    // 8 of 10 bytes used: 4 more do not fit.
    let resp = app.upload("2.csv", CSV.to_vec(), None).await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::FORBIDDEN, "quota_exceeded".to_owned())
    );
    assert_eq!(app.upload_rows().await, UploadRows::each(2));
    assert_eq!(
        app.blob_names().await.len(),
        2,
        "the refused file's blob is gone"
    );
    // Deleting a file gives its bytes back.
    let (_, list) = app.get_json("/api/v1/files").await;
    let id = list["files"][0]["id"].as_str().expect("id").to_owned();
    let resp = app
        .client
        .delete(app.url(&format!("/api/v1/files/{id}")))
        .send()
        .await
        .expect("delete");
    assert!(resp.status().is_success());
    let resp = app.upload("3.csv", CSV.to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn concurrent_uploads_never_take_a_tenant_past_its_quota() {
    // 5 files fit; 16 race for the room. Each passes the cheap check before it streams (nothing
    // is stored yet), so only the check where the upload is recorded stops the other 11.
    let app = TestApp::spawn_with(|cfg| {
        cfg.limits.storage_quota_bytes = 5 * CSV.len() as u64;
        cfg.limits.upload_rate = "1000/s".parse().expect("rate");
    })
    .await;
    let names: Vec<String> = (0..16).map(|i| format!("{i}.csv")).collect();
    let answers =
        futures::future::join_all(names.iter().map(|n| app.upload(n, CSV.to_vec(), None))).await;
    let mut codes = std::collections::BTreeMap::<String, usize>::new();
    for resp in answers {
        let code = match resp.status() {
            StatusCode::ACCEPTED => "accepted".to_owned(),
            _ => code_of(resp).await.1,
        };
        *codes.entry(code).or_default() += 1;
    }
    assert_eq!(
        codes,
        [
            ("accepted".to_owned(), 5),
            ("quota_exceeded".to_owned(), 11)
        ]
        .into(),
    );
    assert_eq!(app.upload_rows().await, UploadRows::each(5));
    assert_eq!(app.blob_names().await.len(), 5, "refused blobs are deleted");
    let stored: i64 =
        sqlx::query_scalar("SELECT stored_bytes FROM tenant_usage WHERE tenant_id = 'default'")
            .fetch_one(&app.db)
            .await
            .expect("usage");
    assert_eq!(stored, 5 * CSV.len() as i64);
}

#[tokio::test]
async fn a_tenants_own_limits_are_set_and_shown_from_the_command_line() {
    let app = TestApp::spawn().await;
    let run = |args: &[&str]| app.api_command(args);
    let shown = |out: std::process::Output| -> Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("one JSON object")
    };
    let before = shown(run(&["tenants", "show", "acme"]));
    assert_eq!(before["upload_rate"], "600/min");
    assert_eq!(before["upload_rate_is_default"], true);

    let set = run(&[
        "tenants",
        "set",
        "acme",
        "--new",
        "--upload-rate",
        "1/min",
        "--storage-quota",
        "100",
    ]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let after = shown(run(&["tenants", "show", "acme"]));
    assert_eq!(after["upload_rate"], "1/min");
    assert_eq!(after["storage_quota_bytes"], 100);
    assert_eq!(after["upload_rate_is_default"], false);

    // Enforced on the next request, by the api already running.
    let acme = app.client_for("acme").await;
    let send = || {
        let part = reqwest::multipart::Part::bytes(CSV.to_vec()).file_name("a.csv");
        acme.post(app.url("/api/v1/files"))
            .multipart(reqwest::multipart::Form::new().part("file", part))
            .send()
    };
    assert_eq!(send().await.expect("upload").status(), StatusCode::ACCEPTED);
    assert_eq!(
        code_of(send().await.expect("upload")).await,
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited".to_owned())
    );
    let used = shown(run(&["tenants", "show", "acme"]));
    assert_eq!(used["stored_bytes"], CSV.len());

    let bad = run(&["tenants", "set", "acme", "--upload-rate", "fast"]);
    assert!(!bad.status.success());
}
