//! A worker killed (`kill -9`) while a hook is asked about a file: the next worker takes the
//! task over once its lease ends and asks only about the batches not answered yet, with the
//! same `webhook-id`s; the answers kept from before are merged as if they had just come.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use harness::app::TestApp;
use harness::worker::{eventually, eventually_some, WorkerEnv, WorkerProcess};
use serde_json::{json, Value};

use super::receiver::{HookReceiver, Reply};
use super::{upload_hooked, CUSTOMERS};

/// A `worker run` process on the app's database, queue and container, with the tests' sealing
/// key and short leases.
fn worker(app: &TestApp) -> WorkerProcess {
    let mut cmd = WorkerEnv::of(app).keyed_command(&["run", "--role", "all"]);
    cmd.env("VISIBILITY_TIMEOUT", "3s")
        .env("TASK_LEASE", "2s")
        .env("HOOK_RETRY_FOR", "10m");
    WorkerProcess::spawn(cmd)
}

#[tokio::test]
async fn a_worker_killed_mid_file_resumes_without_asking_about_answered_batches_again() {
    let app = TestApp::spawn().await;
    // Batch 0 is answered at once (customer 1 is unknown); batch 1 hangs until healed.
    let healed = Arc::new(AtomicBool::new(false));
    let heal = Arc::clone(&healed);
    let hook = HookReceiver::start(move |_, request: &Value| {
        if request["batch"] == 1 && !heal.load(Ordering::SeqCst) {
            return Reply::Hang;
        }
        let errors: Vec<Value> = request["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["values"]["id"] == 1)
            .map(|r| json!({"row": r["row"], "field": "id", "message": "unknown", "code": "u"}))
            .collect();
        Reply::Json(200, json!({"errors": errors}))
    })
    .await;
    let (task_id, file_id) = upload_hooked(&app, &hook, "drop_invalid_rows", CUSTOMERS).await;
    let ids = || -> Vec<String> { hook.received().into_iter().map(|r| r.id).collect() };

    let mut first = worker(&app);
    let task: uuid::Uuid = task_id.parse().expect("task id");
    eventually(
        Duration::from_secs(30),
        "batch 0 kept, batch 1 asked",
        || async {
            let kept: i64 =
                sqlx::query_scalar("SELECT count(*) FROM hook_answers WHERE task_id = $1")
                    .bind(task)
                    .fetch_one(&app.db)
                    .await
                    .expect("count");
            kept == 1 && ids().contains(&format!("{task_id}.1"))
        },
    )
    .await;
    first.child.start_kill().expect("kill -9 the worker");
    first.child.wait().await.expect("reap the worker");
    healed.store(true, Ordering::SeqCst);

    let _second = worker(&app);
    let path = format!("/api/v1/tasks/{task_id}");
    let done = eventually_some(Duration::from_secs(60), "the task final", || async {
        let (_, t) = app.get_json(&path).await;
        (t["status"] == "COMPLETED" || t["status"] == "FAILED").then_some(t)
    })
    .await;
    assert_eq!(done["status"], "COMPLETED", "{done}");
    assert_eq!(done["attempts"], 2, "{done}");
    let asked = ids();
    let zero = asked
        .iter()
        .filter(|id| **id == format!("{task_id}.0"))
        .count();
    let one = asked
        .iter()
        .filter(|id| **id == format!("{task_id}.1"))
        .count();
    assert_eq!(zero, 1, "batch 0 was asked again: {asked:?}");
    assert!(one >= 2, "batch 1 asked again: {asked:?}");
    // Batch 0's kept answer is in the report, and nothing is kept once the task is final.
    let (_, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    assert_eq!(report["errors"][0]["row"], 2, "{report}");
    assert_eq!(report["errors"][0]["constraint"], "u", "{report}");
    assert_eq!(done["result"]["validation"]["rows_valid"], 3, "{done}");
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM hook_answers WHERE task_id = $1")
        .bind(task)
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(kept, 0);
}
