//! An event is written by the statement that makes its change, and only by it: a task that
//! becomes COMPLETED or FAILED, or a file that is deleted, has exactly one event, with the
//! contract's `data`; a change whose event cannot be written does not happen, and a statement
//! that changes nothing writes no event.

use std::time::Duration;

use harness::app::TestApp;
use harness::worker::{WorkerEnv, SAMPLE_CSV};
use reqwest::StatusCode;
use serde_json::{json, Value};
use shared::db;
use shared::domain::task_result::{TaskResult, ValidationResult};
use shared::domain::{OnInvalid, TaskStatus};
use uuid::Uuid;

/// A result of `rows_total` rows in no sheet: only the counts matter to an event.
fn rows_only(rows_total: u64) -> TaskResult {
    TaskResult {
        rows_total,
        sheets: Vec::new(),
        skipped_parts: Vec::new(),
        validation: None,
    }
}

async fn events_of(env_db: &sqlx::PgPool, source_file_id: Uuid) -> Vec<db::events::Event> {
    db::events::for_source_file(env_db, source_file_id)
        .await
        .expect("read events")
}

#[tokio::test]
async fn a_parsed_file_has_exactly_one_completed_event_with_its_row_counts() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("people.csv", SAMPLE_CSV.as_bytes()).await;
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    let consumer = env.consumer(WorkerEnv::consumer_config());
    env.consume_until_idle(&consumer).await;
    assert_eq!(env.task(upload.task_id).await.status, TaskStatus::Completed);

    let events = events_of(&env.db, upload.source_file_id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event.event_type.as_str(), "task.completed");
    assert_eq!(event.tenant_id, "default");
    assert_eq!(event.task_id, upload.task_id);
    assert_eq!(
        event.data,
        json!({
            "task_id": upload.task_id,
            // Contract v1.3: every event carries its file's metadata and end user.
            "metadata": null,
            "end_user": null,
            "source_file_id": upload.source_file_id,
            "status": "COMPLETED",
            "error": null,
            "summary": {"rows_total": 2, "rows_valid": 2, "rows_rejected": 0},
        })
    );
    let view = serde_json::to_value(event.view()).expect("serialise");
    assert_eq!(view["id"], json!(event.id));
    assert_eq!(view["type"], "task.completed");
    assert_eq!(view["data"], event.data);
    assert!(
        view["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{view}"
    );

    // A redelivered message, or a racing consumer, changes nothing and announces nothing.
    let again = db::tasks::complete(&env.db, upload.task_id, 1, &rows_only(9))
        .await
        .expect("complete");
    let failed = db::tasks::fail(
        &env.db,
        upload.task_id,
        None,
        shared::domain::TaskErrorCode::InvalidMessage,
        "late",
        None,
    )
    .await
    .expect("fail");
    assert!(!again && !failed);
    assert_eq!(events_of(&env.db, upload.source_file_id).await.len(), 1);
}

#[tokio::test]
async fn a_failed_task_has_one_failed_event_with_its_error_and_no_summary() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("people.csv", SAMPLE_CSV.as_bytes()).await;
    // The poison path fails a task that never ran.
    assert!(db::tasks::fail(
        &env.db,
        upload.task_id,
        None,
        shared::domain::TaskErrorCode::RetriesExhausted,
        "delivered 6 times",
        None
    )
    .await
    .expect("fail"));

    let events = events_of(&env.db, upload.source_file_id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event_type.as_str(), "task.failed");
    assert_eq!(
        events[0].data,
        json!({
            "task_id": upload.task_id,
            // Contract v1.3: every event carries its file's metadata and end user.
            "metadata": null,
            "end_user": null,
            "source_file_id": upload.source_file_id,
            "status": "FAILED",
            "error": {"code": "retries_exhausted", "message": "delivered 6 times"},
            "summary": null,
        })
    );
}

#[tokio::test]
async fn a_templated_result_gives_the_summary_its_valid_and_rejected_rows() {
    let env = WorkerEnv::new().await;
    let upload = env
        .create_upload("invoices.csv", SAMPLE_CSV.as_bytes())
        .await;
    let started = db::tasks::start(&env.db, upload.task_id, Duration::from_secs(5), 1)
        .await
        .expect("start")
        .expect("the task starts");
    // The type the consumer writes for a templated file, read by the events trigger by key
    // path (`rows_total`, `validation.rows_valid`, `validation.rows_rejected`): renaming one of
    // those fields breaks this test, not a webhook payload.
    let result = TaskResult {
        validation: Some(ValidationResult {
            errors_by_code: Default::default(),
            errors_by_field: Default::default(),
            errors_total: 3,
            errors_truncated: false,
            header_row: 1,
            mapping: Vec::new(),
            on_invalid: OnInvalid::DropInvalidRows,
            rows_rejected: 3,
            revision: 0,
            rows_valid: 4,
            sheet: 0,
            skipped_sheets: Vec::new(),
            source_columns: Vec::new(),
            template: "invoices".into(),
            template_version: 1,
        }),
        ..rows_only(7)
    };
    assert!(
        db::tasks::complete(&env.db, upload.task_id, started.attempts, &result)
            .await
            .expect("complete")
    );
    let events = events_of(&env.db, upload.source_file_id).await;
    assert_eq!(
        events[0].data["summary"],
        json!({"rows_total": 7, "rows_valid": 4, "rows_rejected": 3})
    );
}

#[tokio::test]
async fn a_status_change_whose_event_cannot_be_written_does_not_happen() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("people.csv", SAMPLE_CSV.as_bytes()).await;
    // From here on Postgres refuses every `task.failed` and `task.completed` event.
    sqlx::query(
        "ALTER TABLE events ADD CONSTRAINT refuse_task_events \
         CHECK (type NOT IN ('task.failed', 'task.completed'))",
    )
    .execute(&env.db)
    .await
    .expect("add the constraint");

    let failed = db::tasks::fail(
        &env.db,
        upload.task_id,
        None,
        shared::domain::TaskErrorCode::InvalidMessage,
        "x",
        None,
    )
    .await;
    assert!(failed.is_err(), "{failed:?}");
    assert_eq!(env.task(upload.task_id).await.status, TaskStatus::Pending);
    assert!(env.task(upload.task_id).await.error_code.is_none());
    assert_eq!(
        env.count("SELECT count(*) FROM task_attempt_errors").await,
        0,
        "the attempt error of the same statement is not kept either"
    );

    // The consumer completes the task in the transaction that stores its rows: the refused
    // event takes the rows and the status with it.
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    let consumer = env.consumer(WorkerEnv::consumer_config());
    let outcomes = consumer
        .run_once(&tokio_util::sync::CancellationToken::new())
        .await
        .expect("receive");
    assert_eq!(outcomes.len(), 1);
    let task = env.task(upload.task_id).await;
    assert_ne!(task.status, TaskStatus::Completed);
    assert!(task.result.is_none());
    assert_eq!(env.row_count(upload.source_file_id).await, 0);
    assert_eq!(env.count("SELECT count(*) FROM parsed_sheets").await, 0);
    assert!(events_of(&env.db, upload.source_file_id).await.is_empty());
}

#[tokio::test]
async fn statements_that_change_no_status_write_no_event() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("people.csv", SAMPLE_CSV.as_bytes()).await;
    let started = db::tasks::start(&env.db, upload.task_id, Duration::from_secs(5), 1)
        .await
        .expect("start")
        .expect("the task starts");
    db::tasks::report_progress(&env.db, upload.task_id, started.attempts, 10, 100)
        .await
        .expect("progress");
    db::tasks::renew_lease(
        &env.db,
        upload.task_id,
        started.attempts,
        Duration::from_secs(5),
    )
    .await
    .expect("renew");
    // A completion without a result breaks a CHECK: the status does not change, and no event.
    let refused = sqlx::query("UPDATE tasks SET status = 'COMPLETED', finished_at = now(), lease_expires_at = NULL WHERE id = $1")
        .bind(upload.task_id)
        .execute(&env.db)
        .await;
    assert!(refused.is_err());
    db::tasks::release(&env.db, upload.task_id, started.attempts)
        .await
        .expect("release");
    assert!(events_of(&env.db, upload.source_file_id).await.is_empty());
    assert_eq!(env.count("SELECT count(*) FROM events").await, 0);
}

#[tokio::test]
async fn deleting_a_file_announces_it_with_the_task_as_it_was() {
    let app = TestApp::spawn().await;
    let resp = app
        .upload("people.csv", SAMPLE_CSV.as_bytes().to_vec(), None)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    let task_id = upload["task"]["id"].as_str().expect("task id");
    let file_id: Uuid = upload["source_file"]["id"]
        .as_str()
        .expect("file id")
        .parse()
        .expect("uuid");
    app.run_worker_until_completed(task_id).await;

    // Another tenant's delete of the same id is a 404 and announces nothing.
    let other = app.client_for("someone-else").await;
    let resp = other
        .delete(app.url(&format!("/api/v1/files/{file_id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(events_of(&app.db, file_id).await.len(), 1);

    let resp = app
        .client
        .delete(app.url(&format!("/api/v1/files/{file_id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let events = events_of(&app.db, file_id).await;
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(types, ["task.completed", "file.deleted"]);
    let deleted = &events[1];
    assert_eq!(deleted.tenant_id, "default");
    assert_eq!(deleted.task_id.to_string(), task_id);
    assert_eq!(
        deleted.data,
        json!({
            "task_id": task_id,
            // Contract v1.3: every event carries its file's metadata and end user.
            "metadata": null,
            "end_user": null,
            "source_file_id": file_id,
            "status": "COMPLETED",
            "error": null,
            "summary": {"rows_total": 2, "rows_valid": 2, "rows_rejected": 0},
        })
    );
    // The file's events outlive it; its task does not.
    assert_eq!(
        db::tasks::find(&app.db, deleted.task_id)
            .await
            .expect("find"),
        None
    );
}
