//! Events: written by the statement that makes the change they report ([`written`]), read in
//! commit order from the feed ([`feed`]) and live from the stream ([`stream`]), kept in day
//! partitions ([`partitions`]).

mod feed;
mod partitions;
mod sse;
mod stream;
mod written;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::Value;
use shared::db;
use uuid::Uuid;

/// Uploads a small CSV as `client` (nothing parses it); its task and file ids.
pub(crate) async fn upload_pending(
    app: &TestApp,
    client: &reqwest::Client,
    name: &str,
) -> (Uuid, Uuid) {
    let part = reqwest::multipart::Part::bytes(b"a,b\n1,2\n".to_vec()).file_name(name.to_owned());
    let resp = client
        .post(app.url("/api/v1/files"))
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    let id = |v: &Value| v.as_str().expect("id").parse::<Uuid>().expect("uuid");
    (id(&body["task"]["id"]), id(&body["source_file"]["id"]))
}

/// Fails a task as the poison path does: one `task.failed` event, committed.
pub(crate) async fn fail_task(db: &sqlx::PgPool, task_id: Uuid) {
    assert!(
        db::tasks::fail(
            db,
            task_id,
            None,
            shared::domain::TaskErrorCode::InvalidMessage,
            "failed by the test",
            None
        )
        .await
        .expect("fail"),
        "task {task_id} was not failed"
    );
}
