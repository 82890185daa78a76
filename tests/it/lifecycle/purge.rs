//! Tenant purges: `api tenants purge` revokes the tenant's keys at once, and the purge job
//! removes everything the tenant owns and nothing of another tenant's, also when its runs are
//! stopped mid-way and started again, and when a consumer still holds one of its files.

use std::time::Duration;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::json;
use shared::db;
use worker::maintenance::{purge, Pace, Progress};

use super::{api, blob_of, id_of, parse_all, remains_of, show, templated_file, unparsed_file};

/// Rows of `tenant` in every table that has a tenant id, by table (only those that have some).
async fn owned_by(app: &TestApp, tenant: &str) -> Vec<(&'static str, i64)> {
    let tables = [
        "source_files",
        "api_keys",
        "templates",
        "webhook_endpoints",
        "destinations",
        "sources",
        "remembered_mappings",
        "learned_columns",
        "learned_values",
        "events",
        "tenant_limits",
        "tenant_usage",
        "tenant_row_usage",
        "import_sessions",
        "upload_buckets",
    ];
    let mut owned = Vec::new();
    for table in tables {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {table} WHERE tenant_id = $1"
        ))
        .bind(tenant)
        .fetch_one(&app.db)
        .await
        .expect("count");
        if n > 0 {
            owned.push((table, n));
        }
    }
    owned
}

/// Gives `client`'s tenant a webhook endpoint, a destination, limits, a remembered mapping, a
/// learned column name and a learned value.
async fn furnish(app: &TestApp, client: &reqwest::Client, tenant: &str) {
    let resp = client
        .post(app.url("/api/v1/webhooks"))
        .json(&json!({"url": "https://hooks.example.test/in"}))
        .send()
        .await
        .expect("create webhook");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = client
        .post(app.url("/api/v1/destinations"))
        .json(&json!({"kind": "webhook_rows", "url": "https://rows.example.test/in"}))
        .send()
        .await
        .expect("create a destination");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = client
        .post(app.url("/api/v1/sources"))
        .json(&json!({"kind": "azure_blob",
                      "container_url": format!("http://127.0.0.1:10000/devstoreaccount1/purge-{tenant}"),
                      "credential": {"sas": "sv=2024-08-04&sp=rl&sig=AAAA"}}))
        .send()
        .await
        .expect("create a source");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let (ok, _, err) = api(app, &["tenants", "set", tenant, "--upload-rate", "50/s"]);
    assert!(ok, "{err}");
    sqlx::query(
        "INSERT INTO remembered_mappings (tenant_id, template_name, header_key, mapping)
         VALUES ($1, 'amounts', repeat('a', 64), '{}')",
    )
    .bind(tenant)
    .execute(&app.db)
    .await
    .expect("remember a mapping");
    sqlx::query(
        "INSERT INTO learned_columns (tenant_id, template_name, header_text, field)
         VALUES ($1, 'amounts', 'Summe', 'amount')",
    )
    .bind(tenant)
    .execute(&app.db)
    .await
    .expect("learn a column name");
    sqlx::query(
        "INSERT INTO learned_values (tenant_id, template_name, field, text, value)
         VALUES ($1, 'amounts', 'paid', 'ja', 'true')",
    )
    .bind(tenant)
    .execute(&app.db)
    .await
    .expect("learn a value");
}

/// Runs the purge job once with no budget; what it did.
async fn run_purge(app: &TestApp) -> Vec<purge::Purged> {
    let mut pace = Pace::new(50);
    let (purged, progress) = purge::run_once(&app.db, &app.blobs, &mut pace)
        .await
        .expect("purge runs");
    assert_eq!(progress, Progress::Done);
    purged
}

#[tokio::test]
async fn a_purge_removes_everything_of_one_tenant_and_nothing_of_another() {
    let app = TestApp::spawn().await;
    let acme = app.client_for("acme").await;
    furnish(&app, &acme, "acme").await;
    furnish(&app, &app.client, "default").await;
    let acme_files = [
        templated_file(&app, &acme).await,
        templated_file(&app, &acme).await,
    ];
    let ours = templated_file(&app, &app.client).await;
    parse_all(&app).await;
    let acme_blobs = [
        blob_of(&app, acme_files[0]).await,
        blob_of(&app, acme_files[1]).await,
    ];
    let ours_before = remains_of(&app, ours).await;
    let default_before = owned_by(&app, "default").await;
    assert!(
        owned_by(&app, "acme").await.len() >= 9,
        "acme owns something of each kind"
    );

    // `--wait` follows the purge until the worker has finished it.
    let waiting = std::process::Command::new(harness::app::api_exe())
        .args(["tenants", "purge", "acme", "--wait"])
        .env("DATABASE_URL", &app.config.database.url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("api runs");
    harness::worker::eventually(Duration::from_secs(30), "the purge request", || async {
        show(&app, "acme")["purge"].is_object()
    })
    .await;
    // Its keys stop working at once, before the worker has done anything.
    let resp = acme
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        show(&app, "acme")["purge"]["finished_at"],
        serde_json::Value::Null
    );

    let purged = run_purge(&app).await;
    let waited = tokio::task::spawn_blocking(move || waiting.wait_with_output())
        .await
        .expect("join")
        .expect("api ends");
    let told = String::from_utf8_lossy(&waited.stderr);
    assert!(waited.status.success(), "{told}");
    assert!(told.contains("purge of tenant acme finished"), "{told}");
    assert_eq!(
        purged,
        vec![purge::Purged {
            tenant_id: "acme".into(),
            files_removed: 2,
            finished: true
        }]
    );
    assert_eq!(owned_by(&app, "acme").await, vec![]);
    for file in acme_files {
        assert_eq!(remains_of(&app, file).await, vec![]);
    }
    let blobs = app.blob_names().await;
    assert!(acme_blobs.iter().all(|b| !blobs.contains(b)), "{blobs:?}");
    // The other tenant keeps everything, and its key works.
    assert_eq!(blobs, vec![blob_of(&app, ours).await]);
    assert_eq!(remains_of(&app, ours).await, ours_before);
    assert_eq!(owned_by(&app, "default").await, default_before);
    let (status, rows) = app
        .get_json(&format!("/api/v1/files/{ours}/rows?limit=5"))
        .await;
    assert_eq!(status, StatusCode::OK, "{rows}");
    let shown = show(&app, "acme");
    assert!(shown["purge"]["finished_at"].is_string(), "{shown}");
    assert_eq!(shown["purge"]["files_left"], 0);
    assert!(run_purge(&app).await.is_empty(), "nothing left to do");
}

#[tokio::test]
async fn a_purge_stopped_mid_way_again_and_again_finishes_cleanly() {
    let app = TestApp::spawn().await;
    let acme = app.client_for("acme").await;
    furnish(&app, &acme, "acme").await;
    let parsed = [
        templated_file(&app, &acme).await,
        templated_file(&app, &acme).await,
    ];
    parse_all(&app).await;
    let pending = id_of(&unparsed_file(&app, &acme, "pending.csv").await);
    let held = id_of(&unparsed_file(&app, &acme, "held.csv").await);
    // A consumer is parsing `held`.
    sqlx::query(
        "UPDATE tasks SET status = 'RUNNING', attempts = 1, started_at = now(),
                lease_expires_at = now() + interval '1 hour'
         WHERE source_file_id = $1",
    )
    .bind(held)
    .execute(&app.db)
    .await
    .expect("a consumer holds the task");
    let (ok, _, err) = api(&app, &["tenants", "purge", "acme"]);
    assert!(ok, "{err}");
    let (ok, _, err) = api(
        &app,
        &["keys", "create", "--name", "late", "--tenant", "acme"],
    );
    assert!(!ok && err.contains("tenant acme is being purged"), "{err}");

    // Each run may make only a few statements: it stops somewhere in the middle, as a crash
    // would, and the next one carries on from what the database says.
    let mut runs = 0;
    loop {
        runs += 1;
        assert!(runs < 500, "the purge makes progress");
        // Each run spends 4 statements finding its place again (the open purges, the keys, the
        // marking, the marked files), so 7 leave it 3 for progress.
        let mut pace = Pace::with_budget(3, 7);
        let (purged, progress) = purge::run_once(&app.db, &app.blobs, &mut pace)
            .await
            .expect("purge runs");
        if runs == 1 {
            // Marked by now: hidden from the api, and never started by a consumer.
            let task = db::tasks::find_by_source_file(&app.db, pending)
                .await
                .expect("read")
                .expect("task");
            let started = db::tasks::start(&app.db, task.id, std::time::Duration::from_secs(5), 1)
                .await
                .expect("start");
            assert_eq!(
                started, None,
                "a task of a file being removed is not started"
            );
        }
        if progress == Progress::Done {
            // Everything but the held file is gone; the purge waits for it.
            assert!(!purged[0].finished);
            break;
        }
    }
    assert!(
        runs > 10,
        "the budget stopped the purge many times ({runs})"
    );
    for file in parsed.into_iter().chain([pending]) {
        assert_eq!(remains_of(&app, file).await, vec![]);
    }
    assert_eq!(show(&app, "acme")["purge"]["files_left"], 1);
    assert!(
        remains_of(&app, held).await.len() >= 2,
        "the held file waits"
    );

    // The consumer's lease runs out (it died, or lost the file): the next run finishes.
    sqlx::query(
        "UPDATE tasks SET lease_expires_at = now() - interval '1 second' WHERE source_file_id = $1",
    )
    .bind(held)
    .execute(&app.db)
    .await
    .expect("the lease runs out");
    let purged = run_purge(&app).await;
    assert!(purged[0].finished, "{purged:?}");
    assert_eq!(remains_of(&app, held).await, vec![]);
    assert_eq!(owned_by(&app, "acme").await, vec![]);
    assert_eq!(app.blob_names().await, Vec::<String>::new());
}

#[tokio::test]
async fn purging_a_tenant_that_owns_nothing_is_refused_and_records_nothing() {
    let app = TestApp::spawn().await;
    let (ok, _, err) = api(&app, &["tenants", "purge", "nobody"]);
    assert!(!ok);
    assert!(err.contains("unknown tenant \"nobody\""), "{err}");
    let purges: i64 = sqlx::query_scalar("SELECT count(*) FROM tenant_purges")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(purges, 0);
    let (status, _) = app.get_json("/api/v1/files").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the default tenant's key still works"
    );
}
