//! Tenant limits: an upload rate (`429 rate_limited` with `Retry-After`) and a storage quota
//! (`403 quota_exceeded`), each refusing before anything is stored, with the defaults from the
//! settings and a tenant's own values from `api tenants set`.

use harness::app::{code_of, TestApp, UploadRows};
use reqwest::StatusCode;
use serde_json::Value;

const CSV: &[u8] = b"a\n1\n";

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
    assert_eq!(
        usage(&app).await,
        (5 * CSV.len() as i64, 5 * CSV.len() as i64)
    );
}

/// What the tenant `default` stores, and what its usage shards are granted together (each grant
/// made from the quota in force).
async fn usage(app: &TestApp) -> (i64, i64) {
    sqlx::query_as(
        "SELECT coalesce(sum(stored_bytes), 0)::bigint, coalesce(sum(granted_bytes), 0)::bigint
         FROM tenant_usage WHERE tenant_id = 'default'",
    )
    .fetch_one(&app.db)
    .await
    .expect("usage")
}

#[tokio::test]
async fn an_upload_does_not_wait_for_another_holding_its_tenants_usage() {
    // Before, every upload of a tenant locked its one usage row until its commit: an upload
    // whose commit was slow held up the next. Now the next takes another shard.
    let app = TestApp::spawn().await;
    let resp = app.upload("first.csv", CSV.to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let mut slow = app.db.begin().await.expect("begin");
    let held: Vec<i16> = sqlx::query_scalar(
        "SELECT shard FROM tenant_usage WHERE tenant_id = 'default' AND shard < 3
         ORDER BY shard FOR UPDATE",
    )
    .fetch_all(&mut *slow)
    .await
    .expect("hold three shards");
    assert_eq!(held, [0, 1, 2]);
    let resp = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        app.upload("second.csv", CSV.to_vec(), None),
    )
    .await
    .expect("the upload waited for the transaction holding the tenant's usage");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let shard: i16 =
        sqlx::query_scalar("SELECT usage_shard FROM source_files WHERE file_name = 'second.csv'")
            .fetch_one(&app.db)
            .await
            .expect("the second file");
    assert!(
        !held.contains(&shard),
        "shard {shard} is held by another transaction"
    );
    slow.rollback().await.expect("rollback");
    assert_eq!(app.upload_rows().await, UploadRows::each(2));
}

#[tokio::test]
async fn a_new_tenants_first_uploads_grant_its_quota_once() {
    // None of a new tenant's shards exist yet, so its first uploads at once all take the exact
    // path. Before, each of them regranted in turn, holding every shard until its commit; the
    // grants then differ from shard to shard by what each held when it was made again. Now the
    // uploads that waited store in the first grant.
    let quota: i64 = 1 << 30;
    let app = TestApp::spawn_with(|cfg| {
        cfg.limits.storage_quota_bytes = quota as u64;
        cfg.limits.upload_rate = "1000/s".parse().expect("rate");
    })
    .await;
    let names: Vec<String> = (0..32).map(|i| format!("{i}.csv")).collect();
    let uploads =
        futures::future::join_all(names.iter().map(|n| app.upload(n, CSV.to_vec(), None))).await;
    assert!(uploads.iter().all(|r| r.status() == StatusCode::ACCEPTED));
    let grants: Vec<(i16, i64, i64)> = sqlx::query_as(
        "SELECT shard, granted_bytes, stored_bytes FROM tenant_usage
         WHERE tenant_id = 'default' ORDER BY shard",
    )
    .fetch_all(&app.db)
    .await
    .expect("grants");
    assert_eq!(grants.len(), 32);
    let stored: i64 = grants.iter().map(|g| g.2).sum();
    assert_eq!(stored, 32 * CSV.len() as i64);
    // One grant, made for the first file: each shard a 32nd of the rest, shard 0 the file too.
    let rest = quota - CSV.len() as i64;
    for (shard, granted, _) in &grants[1..] {
        assert_eq!(
            *granted,
            rest / 32,
            "shard {shard} was granted again: {grants:?}"
        );
    }
    assert_eq!(grants[0].1, CSV.len() as i64 + rest / 32 + rest % 32);
}

#[tokio::test]
async fn a_quota_holds_exactly_over_shards_concurrent_templates_and_a_lowered_quota() {
    // 40 files fit. 64 uploads and 8 template versions race for the room; the shards' grants
    // run out one by one, so most late uploads take the exact path.
    let file = CSV.len() as i64;
    let app = TestApp::spawn_with(|cfg| {
        cfg.limits.storage_quota_bytes = 40 * CSV.len() as u64;
        cfg.limits.upload_rate = "1000/s".parse().expect("rate");
    })
    .await;
    let names: Vec<String> = (0..64).map(|i| format!("{i}.csv")).collect();
    let schema = serde_json::json!({"fields": [{"name": "a", "type": "integer"}]});
    let uploads =
        futures::future::join_all(names.iter().map(|n| app.upload(n, CSV.to_vec(), None)));
    let templates = futures::future::join_all((0..8).map(|_| {
        app.client
            .put(app.url("/api/v1/templates/t"))
            .json(&serde_json::json!({"schema": schema}))
            .send()
    }));
    let (uploads, templates) = futures::join!(uploads, templates);
    let accepted = uploads
        .iter()
        .filter(|r| r.status() == StatusCode::ACCEPTED)
        .count() as i64;
    let mut refusals = std::collections::BTreeMap::<String, usize>::new();
    let mut other = Vec::new();
    for resp in uploads {
        if resp.status() != StatusCode::ACCEPTED {
            let body: Value = resp.json().await.expect("a JSON error");
            let code = body["error"]["code"].as_str().unwrap_or("").to_owned();
            if code != "quota_exceeded" {
                other.push(body["error"]["message"].to_string());
            }
            *refusals.entry(code).or_default() += 1;
        }
    }
    assert!(other.is_empty(), "{other:?}");
    assert_eq!(
        refusals.keys().collect::<Vec<_>>(),
        ["quota_exceeded"],
        "{refusals:?}"
    );
    let stored_templates: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(template_bytes(schema)), 0)::bigint FROM templates",
    )
    .fetch_one(&app.db)
    .await
    .expect("template bytes");
    let template_answers = templates
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|r| r.status().is_success()))
        .count();
    // Each version is stored, or refused for the quota when the uploads took the room first.
    let refused_templates = templates
        .iter()
        .filter(|r| {
            r.as_ref()
                .is_ok_and(|r| r.status() == StatusCode::FORBIDDEN)
        })
        .count();
    assert_eq!(template_answers + refused_templates, 8);
    let files: i64 =
        sqlx::query_scalar("SELECT coalesce(sum(size_bytes), 0)::bigint FROM source_files")
            .fetch_one(&app.db)
            .await
            .expect("file bytes");
    assert_eq!(files, accepted * file);
    let (stored, granted) = usage(&app).await;
    assert_eq!(
        stored,
        files + stored_templates,
        "usage follows what is stored"
    );
    assert!(
        stored <= 40 * file,
        "{stored} bytes stored past a quota of {}",
        40 * file
    );
    assert!(granted <= 40 * file, "grants {granted} past the quota");
    // Every upload that was refused was refused for want of room: the quota is full to within
    // one file.
    assert!(
        stored > 39 * file,
        "{stored} of {}: an upload was refused with room left",
        40 * file
    );

    // A tenant's quota lowered below what it stores: nothing more is taken, whatever a shard
    // was granted before.
    shared::db::limits::set(&app.db, "default", None, Some(stored - 1))
        .await
        .expect("set the quota");
    let resp = app.upload("late.csv", CSV.to_vec(), None).await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::FORBIDDEN, "quota_exceeded".to_owned())
    );
    shared::db::limits::set(&app.db, "default", None, Some(stored + 2 * file))
        .await
        .expect("set the quota");
    for (i, expected) in [
        StatusCode::ACCEPTED,
        StatusCode::ACCEPTED,
        StatusCode::FORBIDDEN,
    ]
    .into_iter()
    .enumerate()
    {
        let resp = app
            .upload(&format!("raised-{i}.csv"), CSV.to_vec(), None)
            .await;
        assert_eq!(
            resp.status(),
            expected,
            "upload {i} after the quota was raised by two files"
        );
    }
    assert_eq!(usage(&app).await, (stored + 2 * file, stored + 2 * file));
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

#[tokio::test]
async fn usage_recorded_before_the_shards_is_kept_and_given_back_after() {
    let db = harness::migrations::database_before(harness::migrations::USAGE_SHARDS).await;
    let file = uuid::Uuid::now_v7();
    sqlx::query(
        "INSERT INTO source_files (id, tenant_id, file_name, content_type, format, size_bytes,
                                   sha256, blob_name)
         VALUES ($1, 'old', 'f.csv', 'text/csv', 'csv', 1000, repeat('0', 64), 'old/f')",
    )
    .bind(file)
    .execute(&db)
    .await
    .expect("a file");
    sqlx::query(
        "INSERT INTO file_row_usage (source_file_id, tenant_id, row_count, row_bytes)
         VALUES ($1, 'old', 20, 3000)",
    )
    .bind(file)
    .execute(&db)
    .await
    .expect("its rows");
    sqlx::query(
        "INSERT INTO templates (tenant_id, name, version, schema, on_invalid)
         VALUES ('old', 't', 1, '{\"fields\": []}', 'drop_invalid_rows')",
    )
    .execute(&db)
    .await
    .expect("a template");
    let before: (i64, i64, i64) = sqlx::query_as(
        "SELECT sum(stored_bytes)::bigint, sum(row_count)::bigint, sum(row_bytes)::bigint
         FROM tenant_usage WHERE tenant_id = 'old'",
    )
    .fetch_one(&db)
    .await
    .expect("usage");
    assert_eq!(before, (1000 + 14, 20, 3000));

    shared::db::MIGRATOR.run(&db).await.expect("the migrations");
    // The row store's sums now have a table of their own.
    let sums = || async {
        sqlx::query_as::<_, (i64, i64, i64)>(
            "SELECT (SELECT coalesce(sum(stored_bytes), 0)::bigint FROM tenant_usage
                     WHERE tenant_id = 'old'),
                    coalesce(sum(row_count), 0)::bigint, coalesce(sum(row_bytes), 0)::bigint
             FROM tenant_row_usage WHERE tenant_id = 'old'",
        )
        .fetch_one(&db)
        .await
        .expect("usage")
    };
    assert_eq!(sums().await, before, "the sums are kept");
    // The file's bytes and rows are given back where the triggers now look for them.
    sqlx::query("DELETE FROM source_files WHERE id = $1")
        .bind(file)
        .execute(&db)
        .await
        .expect("delete the file");
    assert_eq!(sums().await, (14, 0, 0));
    sqlx::query("DELETE FROM templates WHERE tenant_id = 'old'")
        .execute(&db)
        .await
        .expect("delete the template");
    assert_eq!(sums().await, (0, 0, 0));
}
