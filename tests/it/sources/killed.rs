//! A worker killed (`kill -9`) while it lists a container a page at a time and imports what it
//! found: the next worker lists the page again and takes the blobs the dead one held once their
//! lease ends. Every blob becomes exactly one file and one task.

use std::collections::HashSet;
use std::time::Duration;

use harness::app::TestApp;
use harness::worker::{eventually, WorkerEnv, WorkerProcess};
use serde_json::json;

use super::{create, put, settled, WAIT};
use crate::destinations::container;

const BLOBS: usize = 60;

/// A `worker run --role sources` process with short leases, small pages and few imports at once.
fn worker(app: &TestApp) -> WorkerProcess {
    let mut cmd = WorkerEnv::of(app).keyed_command(&["run", "--role", "sources"]);
    cmd.env("SOURCE_LEASE", "2s")
        .env("SOURCE_LIST_PAGE", "7")
        .env("SOURCE_POLL_INTERVAL", "1s")
        .env("SOURCE_MAX_IN_FLIGHT", "4")
        .env("SOURCE_CONCURRENCY", "2");
    WorkerProcess::spawn(cmd)
}

async fn imported(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM source_files WHERE origin IS NOT NULL")
        .fetch_one(&app.db)
        .await
        .expect("count")
}

#[tokio::test]
async fn a_worker_killed_mid_discovery_and_import_loses_nothing_and_imports_nothing_twice() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    let names: Vec<String> = (0..BLOBS).map(|i| format!("in/{i:03}.csv")).collect();
    for name in &names {
        put(&store, name, format!("id,name\n{name},x\n").as_bytes()).await;
    }
    let source = create(&app, &url, &cs, json!({})).await;
    let id = source["id"].as_str().expect("id").to_owned();

    let mut first = worker(&app);
    let started = tokio::time::timeout(
        WAIT,
        eventually(WAIT * 2, "some blobs imported", || async {
            imported(&app).await >= 5
        }),
    )
    .await;
    assert!(started.is_ok(), "nothing imported; log:\n{}", first.log());
    first.child.start_kill().expect("kill -9 the worker");
    first.child.wait().await.expect("reap the worker");
    let before = imported(&app).await;
    assert!(before < BLOBS as i64, "killed before the end: {before}");

    let mut second = worker(&app);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let rows = settled(&app, &id, &refs).await;
    assert_eq!(rows.len(), BLOBS, "one row per blob");
    assert!(
        rows.iter().all(|b| b["status"] == "IMPORTED"),
        "{}",
        second.log()
    );
    let origins: Vec<String> =
        sqlx::query_scalar("SELECT origin->>'blob' FROM source_files WHERE origin IS NOT NULL")
            .fetch_all(&app.db)
            .await
            .expect("origins");
    assert_eq!(origins.len(), BLOBS, "one file per blob");
    assert_eq!(origins.iter().collect::<HashSet<_>>().len(), BLOBS);
    let tasks: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(tasks, BLOBS as i64, "one task per blob");
    second.terminate();
    assert!(second.wait(Duration::from_secs(30)).await.success());
}
